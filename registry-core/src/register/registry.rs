//! The registry: every tool the system has, by name; revocation and replacement.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::access::rule::AccessRule;
use crate::change::Replacement;
use crate::execute::pool::BlockingPool;
use crate::host::context::HostWaits;
use crate::task::TaskConfig;
use std::time::Duration;

use crate::audit::{self, AuditEvent, AuditSink, ChangeAttempt, ChangeEvent, ReadinessEvent};
use crate::change::{Change, ChangeKind, OldRuns, RUN_ENDS_KEPT, ReplaceOptions, RunEnd};
use crate::declare::error::{BuildProblem, RegistryError};
use crate::execute::tool::Tool;
use crate::gate::{CallPolicy, Check, GateConfig, ToolReadiness};
use crate::host::call_host::CallHost;
use crate::host::state::AppState;
use crate::project::discovery::{SlotState, Snapshot, Unavailable};
use crate::register::dynamic::DynamicTool;
use crate::resolve::guard::ArgumentLimits;
use crate::search::PreparedSearch;
use crate::search::embed::Embedder;
use crate::shared::audit_key::AuditKey;
use crate::shared::profile::{CompatibilityError, Profile};
use crate::shared::subject::Subject;

/// Every tool the system has, in name order.
///
/// Build it once at startup with [`Registry::from_inventory`] (every `#[tool]` linked into
/// the program) or [`Registry::builder`] (a chosen set, plus tools built at run time). Its
/// set of names is fixed once built. What a name stands for changes only explicitly, at once
/// for every run, each change recorded in [`changes`](Self::changes) and audited (a refused
/// one too):
///
/// - [`revoke`](Self::revoke): hidden from new runs; calls in open runs are answered
///   `Revoked`;
/// - [`restore`](Self::restore): a revoked tool comes back for runs opened from then on;
/// - [`replace`](Self::replace): a new version for new runs, while open runs keep calling the
///   version they were shown or get `Revoked`, as its
///   [`ReplaceOptions`](crate::change::ReplaceOptions) say.
///
/// A run learns whether any of these changed what its subject may see or call
/// ([`Run::is_current`](crate::Run::is_current)), and [`reopen`](Self::reopen) opens its
/// successor on the registry as it is now; what became of the runs a change caught is in
/// [`run_ends`](Self::run_ends).
///
/// Besides these, a server can hold every call, of every run, until it resumes
/// ([`RegistryExt::suspend`](crate::server::RegistryExt::suspend)), and a tool that stops
/// being ready ([`RegistryBuilder::readiness`](crate::RegistryBuilder::readiness)) leaves the
/// lists of new runs until it is ready again. It is cheap to clone (clones share everything)
/// and `Send + Sync`.
///
/// ```standalone_crate
/// use registry_core::{tool, Registry};
///
/// /// Read the current build status of a project.
/// #[tool(scopes = "build:read", read_only)]
/// fn get_status(
///     /// Project identifier, e.g. `web`.
///     project: String,
/// ) -> String {
///     format!("{project}: green")
/// }
///
/// let registry = Registry::from_inventory()?;
/// let tool = registry.get("get_status").expect("declared above");
/// assert!(tool.settings().is_read_only());
/// assert_eq!(tool.settings().scopes[0].as_str(), "build:read");
/// assert!(registry.get("get_stat").is_none());
/// # Ok::<(), registry_core::RegistryError>(())
/// ```
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

struct Inner {
    /// The names, sorted; slot `i` is the tool named `names[i]`.
    names: Vec<Cow<'static, str>>,
    slots: Vec<SlotState>,
    /// Which slots' current versions are revoked, which are not ready: what projection
    /// subtracts (kept with `slots`).
    unavailable: Unavailable,
    snapshot: RwLock<Arc<Snapshot>>,
    /// Revocations and replacements, in order; its lock also serializes them.
    changes: Mutex<Vec<Change>>,
    /// How many changes were made: read without a lock by whoever watches for them.
    generation: AtomicU64,
    /// What became of the runs that were no longer current when they ended or were
    /// reopened, the most recent [`RUN_ENDS_KEPT`].
    run_ends: Mutex<std::collections::VecDeque<RunEnd>>,
    replacements: Vec<Replacement>,
    state: AppState,
    /// The access policies, all applied: one that hides a tool hides it.
    access_rules: Vec<Box<dyn AccessRule>>,
    /// The policy sets given with `RegistryBuilder::policies`: each is checked against the
    /// registry at build and again against every replacement before it is made.
    policy_sets: Vec<PolicyCheck>,
    audit: Option<Box<dyn AuditSink>>,
    host: Option<Arc<dyn CallHost>>,
    embedder: Option<Arc<dyn Embedder>>,
    /// The key of the audit log's hashes of arguments and queries.
    audit_key: AuditKey,
    limits: ArgumentLimits,
    gate: GateConfig,
    tasks: TaskConfig,
    /// The readiness check of each slot, if it has one.
    readiness: Vec<Option<Check>>,
    readiness_timeout: Duration,
    /// The threads synchronous tools run on.
    pool: BlockingPool,
    /// How long questions and sampling wait for an answer.
    waits: HostWaits,
    /// Whether calls are held ([`RegistryExt::suspend`](crate::server::RegistryExt::suspend)): read without a lock on every call.
    held: std::sync::atomic::AtomicBool,
    /// Why they are held.
    suspended: RwLock<Option<Arc<str>>>,
    /// [`RegistryBuilder::require_documented_parameters`](crate::RegistryBuilder::require_documented_parameters)
    /// was given: replacements are held to it.
    require_documented: bool,
}

/// The check of one policy set against a registry
/// ([`PolicySet::validate`](crate::policy::PolicySet::validate)), kept by the registry to
/// check every replacement before it is made.
pub(crate) type PolicyCheck = Box<dyn Fn(&Registry) -> Result<(), Vec<String>> + Send + Sync>;

/// Everything a registry is made of, assembled by the builder.
pub(crate) struct RegistryParts {
    pub(crate) tools: Vec<Tool>,
    pub(crate) replacements: Vec<Replacement>,
    pub(crate) state: AppState,
    pub(crate) access_rules: Vec<Box<dyn AccessRule>>,
    pub(crate) policy_sets: Vec<PolicyCheck>,
    pub(crate) audit: Option<Box<dyn AuditSink>>,
    pub(crate) host: Option<Arc<dyn CallHost>>,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    pub(crate) audit_key: AuditKey,
    pub(crate) limits: ArgumentLimits,
    pub(crate) gate: GateConfig,
    pub(crate) tasks: TaskConfig,
    /// Readiness checks by tool name (names checked by the builder).
    pub(crate) readiness: Vec<(String, Check)>,
    pub(crate) readiness_timeout: Duration,
    pub(crate) pool: BlockingPool,
    pub(crate) waits: HostWaits,
    /// Whether every parameter must have a description, in replacements too.
    pub(crate) require_documented: bool,
}

impl Registry {
    /// A registry of `parts.tools`, which are sorted by name with unique names.
    pub(crate) fn from_parts(parts: RegistryParts) -> Registry {
        let names = parts.tools.iter().map(Tool::name_cow).collect();
        let slots: Vec<SlotState> = parts.tools.iter().map(|_| SlotState::default()).collect();
        let versions = vec![1; parts.tools.len()];
        let mut readiness: Vec<Option<Check>> = vec![None; parts.tools.len()];
        for (name, check) in parts.readiness {
            if let Ok(slot) = parts.tools.binary_search_by(|tool| tool.name().cmp(&name)) {
                readiness[slot] = Some(check);
            }
        }
        Registry {
            inner: Arc::new(Inner {
                names,
                unavailable: Unavailable::new(slots.len()),
                slots,
                snapshot: RwLock::new(Arc::new(Snapshot::new(parts.tools, versions))),
                changes: Mutex::new(Vec::new()),
                generation: AtomicU64::new(0),
                run_ends: Mutex::new(std::collections::VecDeque::new()),
                replacements: parts.replacements,
                state: parts.state,
                access_rules: parts.access_rules,
                policy_sets: parts.policy_sets,
                audit: parts.audit,
                host: parts.host,
                embedder: parts.embedder,
                audit_key: parts.audit_key,
                limits: parts.limits,
                gate: parts.gate,
                tasks: parts.tasks,
                readiness,
                readiness_timeout: parts.readiness_timeout,
                pool: parts.pool,
                waits: parts.waits,
                held: std::sync::atomic::AtomicBool::new(false),
                suspended: RwLock::new(None),
                require_documented: parts.require_documented,
            }),
        }
    }

    /// A registry of `tools` alone (sorted by name, unique), with nothing else of a
    /// registry's: what a change would leave, shown to the policy sets before it is made.
    fn candidate(tools: Vec<Tool>) -> Registry {
        Registry::from_parts(RegistryParts {
            tools,
            replacements: Vec::new(),
            state: AppState::default(),
            access_rules: Vec::new(),
            policy_sets: Vec::new(),
            audit: None,
            host: None,
            embedder: None,
            audit_key: AuditKey::of_process(),
            limits: ArgumentLimits::default(),
            gate: GateConfig::default(),
            tasks: TaskConfig::default(),
            readiness: Vec::new(),
            readiness_timeout: crate::gate::DEFAULT_TIMEOUT,
            pool: BlockingPool::new(1, Duration::ZERO),
            waits: HostWaits::default(),
            require_documented: false,
        })
    }

    /// Checks every policy set against `against`
    /// ([`PolicySet::validate`](crate::policy::PolicySet::validate)): every problem, and which
    /// sets held (by index), in order.
    pub(crate) fn validate_policies(&self, against: &Registry) -> (Vec<String>, Vec<usize>) {
        let mut problems = Vec::new();
        let mut held = Vec::new();
        for (index, check) in self.inner.policy_sets.iter().enumerate() {
            // A validator that panics refuses (fail closed), as a policy that panics denies.
            let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(against)));
            match checked {
                Ok(Ok(())) => held.push(index),
                Ok(Err(found)) => problems.extend(found),
                Err(payload) => problems.push(format!(
                    "the policy set's validation panicked: {}",
                    crate::execute::execution::panic_message(&*payload)
                )),
            }
        }
        (problems, held)
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        self.inner
            .snapshot
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn slot(&self, name: &str) -> Option<usize> {
        self.inner
            .names
            .binary_search_by(|probe| (**probe).cmp(name))
            .ok()
    }

    /// The names of all tools, sorted.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.inner.names.iter().map(|name| &**name)
    }

    /// The current version of the tool named `name`, matched exactly; `None` when the
    /// registry has no tool of that name.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, Registry};
    ///
    /// /// Read the build status.
    /// #[tool(scopes = "build:read", read_only)]
    /// fn build_status() -> String {
    ///     "green".into()
    /// }
    ///
    /// let registry = Registry::builder().declared_in([module_path!()]).build().unwrap();
    /// assert_eq!(registry.get("build_status").unwrap().name(), "build_status");
    /// assert!(registry.get("build_statu").is_none());
    /// ```
    pub fn get(&self, name: &str) -> Option<Tool> {
        let slot = self.slot(name)?;
        Some(self.snapshot().tool(slot).clone())
    }

    /// Whether a tool named `name` is registered (revoked or not).
    pub fn contains(&self, name: &str) -> bool {
        self.slot(name).is_some()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.inner.names.len()
    }

    /// Whether there is no tool at all.
    pub fn is_empty(&self) -> bool {
        self.inner.names.is_empty()
    }

    /// The current version of every tool, in name order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Tool> + use<> {
        let snapshot = self.snapshot();
        (0..snapshot.len()).map(move |index| snapshot.tool(index).clone())
    }

    /// The replacements made while building, in the order they were made.
    pub fn replacements(&self) -> &[Replacement] {
        &self.inner.replacements
    }

    /// The current snapshot and the slots `subject` may see in it, increasing. The read lock
    /// is held while projecting, so that a replacement (which revokes the old version and
    /// installs the new one under the write lock) is seen whole or not at all.
    pub(crate) fn project(&self, subject: &Subject) -> (Arc<Snapshot>, Vec<usize>) {
        let current = self
            .inner
            .snapshot
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let visible = current.project(subject, &self.inner.unavailable, &self.inner.access_rules);
        (current.clone(), visible)
    }

    /// The application state every run's context carries.
    pub(crate) fn app_state(&self) -> &AppState {
        &self.inner.state
    }

    /// Revokes the tool named `name` for every run, old and new, at once: calls that start
    /// after this returns are answered `Revoked`; calls already running complete. A later
    /// [`replace`](Self::replace) brings a new version back.
    ///
    /// A name the registry does not have is [`RegistryError::UnknownTool`], audited as a
    /// [`ChangeRefused`](crate::audit::AuditEvent::ChangeRefused) event.
    pub fn revoke(&self, name: &str, reason: impl Into<String>) -> Result<Change, RegistryError> {
        let reason = reason.into();
        let Some(slot) = self.slot(name) else {
            let error = RegistryError::UnknownTool {
                name: name.to_owned(),
            };
            return Err(self.refused(ChangeAttempt::Revoke, name, &reason, error));
        };
        let changes = self.lock_changes();
        let snapshot = self.snapshot();
        self.inner.slots[slot]
            .revoked_through
            .fetch_max(snapshot.version(slot), Ordering::AcqRel);
        self.inner.unavailable.revoked.set(slot, true);
        let change = Change {
            at: audit::now(),
            name: name.to_owned(),
            kind: ChangeKind::Revoked,
            reason,
            old_fingerprint: snapshot.tool(slot).fingerprint(),
            old_version: snapshot.tool(slot).version_fingerprint(),
            new_version: None,
        };
        Ok(self.commit_change(changes, change))
    }

    /// Audits a refused change, and gives back its error.
    fn refused(
        &self,
        attempt: ChangeAttempt,
        name: &str,
        reason: &str,
        error: RegistryError,
    ) -> RegistryError {
        audit::refused(self.audit_sink(), attempt, Some(name), Some(reason), &error);
        error
    }

    /// Brings back a revoked tool for runs opened from now on: its same definition is
    /// installed as a new version, which no revocation covers. Runs that were open when it
    /// was revoked keep getting `Revoked` (what they were told stays true); new runs see and
    /// call it again. A tool that is not revoked is [`RegistryError::NotRevoked`], and nothing
    /// changes; that, and a name the registry does not have, is audited as a
    /// [`ChangeRefused`](crate::audit::AuditEvent::ChangeRefused) event.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, change::ChangeKind, ErrorKind, Registry, Subject, ToolCall};
    ///
    /// /// Read the current build status of a project.
    /// #[tool(public, read_only)]
    /// fn status(project: String) -> String {
    ///     format!("{project}: green")
    /// }
    ///
    /// let registry = Registry::builder().declared_in([module_path!()]).build()?;
    /// let call = || ToolCall::new("c1", "status", serde_json::json!({"project": "web"}));
    /// let before = registry.open_run("run-1", &Subject::new("acme"));
    /// registry.revoke("status", "incident 42")?;
    /// assert_eq!(before.call_blocking(call()).error_kind(), Some(ErrorKind::Revoked));
    ///
    /// let change = registry.restore("status", "incident 42 over")?;
    /// assert_eq!(change.kind, ChangeKind::Restored);
    /// let after = registry.open_run("run-2", &Subject::new("acme"));
    /// assert_eq!(after.call_blocking(call()).error_kind(), None);
    /// // The run that was told the tool is gone stays so.
    /// assert_eq!(before.call_blocking(call()).error_kind(), Some(ErrorKind::Revoked));
    /// # Ok::<(), registry_core::RegistryError>(())
    /// ```
    pub fn restore(&self, name: &str, reason: impl Into<String>) -> Result<Change, RegistryError> {
        let reason = reason.into();
        let Some(slot) = self.slot(name) else {
            let error = RegistryError::UnknownTool {
                name: name.to_owned(),
            };
            return Err(self.refused(ChangeAttempt::Restore, name, &reason, error));
        };
        let changes = self.lock_changes();
        let mut current = self.write_snapshot();
        let version = current.version(slot);
        if !self.inner.slots[slot].is_revoked(version) {
            drop(current);
            drop(changes);
            let error = RegistryError::NotRevoked {
                name: name.to_owned(),
            };
            return Err(self.refused(ChangeAttempt::Restore, name, &reason, error));
        }
        let tool = current.tool(slot).clone();
        let old_fingerprint = tool.fingerprint();
        let old_version = tool.version_fingerprint();
        let next = current.with_replaced(slot, tool, version + 1);
        *current = Arc::new(next);
        // The new version is not revoked: new runs see it (not before the new snapshot).
        self.inner.unavailable.revoked.set(slot, false);
        drop(current);
        let change = Change {
            at: audit::now(),
            name: name.to_owned(),
            kind: ChangeKind::Restored,
            reason,
            old_fingerprint,
            old_version,
            new_version: Some(old_version),
        };
        Ok(self.commit_change(changes, change))
    }

    /// Approval request `id` and its state, from the registry's approval store (which may
    /// be shared with other replicas); `None` if the store has no such request.
    pub(crate) async fn pending_approval(
        &self,
        id: &str,
    ) -> Result<
        Option<(
            crate::approval::ApprovalRequest,
            crate::approval::ApprovalState,
        )>,
        crate::approval::request::StoreError,
    > {
        self.inner.gate.approvals.get(id).await
    }

    /// A wait for approval request `id` to change, if the approval store can tell
    /// ([`ApprovalStore::watch`](crate::approval::ApprovalStore::watch)).
    pub(crate) fn approval_watch(
        &self,
        id: &str,
    ) -> Option<crate::shared::future::BoxFuture<'static, ()>> {
        self.inner.gate.approvals.watch(id)
    }

    /// Who approved pending request `id` outside any run, if the approval store keeps such
    /// approvals ([`ApprovalStore::approved_outside`](crate::approval::ApprovalStore::approved_outside)).
    pub(crate) async fn approver_outside(
        &self,
        id: &str,
    ) -> Result<Option<String>, crate::approval::request::StoreError> {
        self.inner.gate.approvals.approved_outside(id).await
    }

    /// Whether the tool named `name` is revoked for runs opened now; `None` for a name the
    /// registry does not have.
    pub(crate) fn revoked_now(&self, name: &str) -> Option<bool> {
        let slot = self.slot(name)?;
        Some(self.is_revoked(slot, self.current_version(slot)))
    }

    /// Holds every call (see [`RegistryExt::suspend`](crate::server::RegistryExt::suspend)).
    pub(crate) fn suspend_calls(&self, reason: impl Into<String>) {
        let reason: Arc<str> = reason.into().into();
        let mut held = self
            .inner
            .suspended
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if held.is_none() {
            tracing::warn!(target: audit::AUDIT_TARGET, reason = %audit::Logged(&reason), "every call is held");
        }
        *held = Some(reason);
        self.inner.held.store(true, Ordering::Release);
    }

    /// Ends a [`suspend`](Self::suspend): calls run again.
    pub(crate) fn resume_calls(&self) {
        let mut held = self
            .inner
            .suspended
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if held.take().is_some() {
            tracing::info!(target: audit::AUDIT_TARGET, "calls are no longer held");
        }
        self.inner.held.store(false, Ordering::Release);
    }

    /// Why every call is held, if it is ([`suspend`](Self::suspend)).
    pub(crate) fn suspension(&self) -> Option<String> {
        if !self.inner.held.load(Ordering::Acquire) {
            return None;
        }
        self.inner
            .suspended
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_deref()
            .map(str::to_owned)
    }

    /// Replaces the tool of the same name with `tool` for runs opened from now on. Runs
    /// opened before either keep calling exactly the version they were shown, or get
    /// `Revoked`, as `options` say; a run never calls a version it was not shown.
    ///
    /// `tool` meets the checks of the builder, the tenant-data rule
    /// ([`BuildProblem::TenantInText`]) against the other tools and
    /// [`require_documented_parameters`](crate::RegistryBuilder::require_documented_parameters)
    /// if the builder was given it included; a problem is an
    /// error and changes nothing, and is audited as a
    /// [`ChangeRefused`](crate::audit::AuditEvent::ChangeRefused) event.
    ///
    /// Every [`PolicySet`](crate::policy::PolicySet) given to the builder is checked against
    /// the registry as the replacement would leave it
    /// ([`PolicySet::validate`](crate::policy::PolicySet::validate)) before anything changes:
    /// a replacement that would make a policy miss what it reads (an argument the new
    /// version drops or types otherwise) is refused the same way, each problem a
    /// [`BuildProblem::Policy`], and the old version stays.
    pub fn replace(
        &self,
        tool: DynamicTool,
        options: ReplaceOptions,
    ) -> Result<Change, RegistryError> {
        let mut problems = Vec::new();
        let name = tool.name().to_owned();
        let parts = tool.check(&mut problems);
        let Some(parts) = parts else {
            let error = RegistryError::Build(problems);
            return Err(self.refused(ChangeAttempt::Replace, &name, &options.reason, error));
        };
        let Some(slot) = self.slot(&name) else {
            let error = RegistryError::Build(vec![crate::BuildProblem::NothingToReplace {
                name: name.clone(),
                site: parts.source,
            }]);
            return Err(self.refused(ChangeAttempt::Replace, &name, &options.reason, error));
        };
        let changes = self.lock_changes();
        // Only a change writes the snapshot, and changes are serialized by `changes`: the
        // snapshot read here is the one replaced below.
        let current = self.snapshot();
        let old_version = current.version(slot);
        let old_fingerprint = current.tool(slot).fingerprint();
        let old_tool_version = current.tool(slot).version_fingerprint();
        let new_tool = Tool::from_parts(parts);
        let new_tool_version = new_tool.version_fingerprint();
        let next = current.with_replaced(slot, new_tool, old_version + 1);
        drop(current);
        // The tenant-data rule holds across tools: checked on the registry as the
        // replacement would leave it; and the builder's opt-in rules.
        let mut problems = Vec::new();
        crate::register::lint::tenant_data(next.tools(), &mut problems);
        if self.inner.require_documented {
            crate::register::lint::documented_parameters(next.tool(slot), &mut problems);
        }
        if !problems.is_empty() {
            drop(changes);
            let error = RegistryError::Build(problems);
            return Err(self.refused(ChangeAttempt::Replace, &name, &options.reason, error));
        }
        if !self.inner.policy_sets.is_empty() {
            // Every policy set must hold for the registry as the replacement leaves it (an
            // argument a policy reads must not disappear or change type); otherwise nothing
            // changes, and each set that took the candidate is checked against the registry
            // as it stays.
            let candidate = Registry::candidate(next.tools().cloned().collect());
            let (problems, held) = self.validate_policies(&candidate);
            if !problems.is_empty() {
                for index in held {
                    let check = &self.inner.policy_sets[index];
                    let again =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(self)));
                    if !matches!(again, Ok(Ok(()))) {
                        tracing::error!(
                            target: audit::AUDIT_TARGET,
                            "a policy set no longer holds for the registry after a refused replacement"
                        );
                    }
                }
                drop(changes);
                let error = RegistryError::Build(
                    problems
                        .into_iter()
                        .map(|message| BuildProblem::Policy { message })
                        .collect(),
                );
                return Err(self.refused(ChangeAttempt::Replace, &name, &options.reason, error));
            }
        }
        let mut current = self.write_snapshot();
        if options.old_runs == OldRuns::Revoke {
            self.inner.slots[slot]
                .revoked_through
                .fetch_max(old_version, Ordering::AcqRel);
        }
        *current = Arc::new(next);
        // The new version is not revoked, whatever the old one was.
        self.inner.unavailable.revoked.set(slot, false);
        drop(current);
        let change = Change {
            at: audit::now(),
            name,
            kind: ChangeKind::Replaced(options.old_runs),
            reason: options.reason,
            old_fingerprint,
            old_version: old_tool_version,
            new_version: Some(new_tool_version),
        };
        Ok(self.commit_change(changes, change))
    }

    /// Checks every tool against `profile`: lowering (what cannot be expressed at all, such as
    /// a recursive type for Gemini) and the profile's rules on what is exported. Lists every
    /// incompatibility, with the tool, a JSON pointer, the rule and how to fix it.
    pub fn check(&self, profile: Profile) -> Result<(), CompatibilityError> {
        let snapshot = self.snapshot();
        let (list, mut problems) = crate::present::export::export_all(profile, snapshot.tools());
        problems.extend(crate::compat::check_tools(profile, &list));
        if problems.is_empty() {
            Ok(())
        } else {
            Err(CompatibilityError(problems))
        }
    }

    /// Panics, listing every incompatibility, unless every tool can be exported to every
    /// profile of `profiles`: the one line to put in an application's test suite.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, Profile, Registry};
    ///
    /// /// Read the build status.
    /// #[tool(public, read_only)]
    /// fn build_status() -> String {
    ///     "green".into()
    /// }
    ///
    /// // In a test of the application (`#[test] fn tools_work_with_every_provider()`):
    /// Registry::from_inventory().unwrap().assert_compatible(Profile::ALL);
    /// ```
    #[track_caller]
    pub fn assert_compatible(
        &self,
        profiles: impl IntoIterator<Item = impl std::borrow::Borrow<Profile>>,
    ) {
        let problems: Vec<_> = profiles
            .into_iter()
            .filter_map(|profile| self.check(*profile.borrow()).err())
            .flat_map(|error| error.0)
            .collect();
        if !problems.is_empty() {
            panic!("{}", CompatibilityError(problems));
        }
    }

    /// The lock text of the registry: every tool, in name order, with who may use it, what
    /// the gate asks of its calls, and a digest of what each profile shows a model of it.
    /// Commit it as a file and check it in a test ([`assert_lockfile`](Self::assert_lockfile)):
    /// then a changed description or schema (how a tool "rug pull" or a poisoned description
    /// reaches a model), a new scope, tenant, hint or gate flag, a tool made public, or a tool added or removed
    /// is a reviewed diff, never a silent change.
    ///
    /// The text is the same in every process and on every machine for the same tools; it
    /// holds no time, path or version. Three comment lines (`#`), then one block per tool,
    /// blocks separated by a blank line, one `key = value` line per fact, always in this
    /// order:
    ///
    /// ```text
    /// # Tool definitions pinned by registry_core::Registry::lock (format 2); review every change.
    /// # Digests: SHA-256 of each tool as each profile exports it (keys sorted, compact, no _meta).
    /// # Rewrite: REGISTRY_LOCK=overwrite cargo test; then review the diff before committing it.
    ///
    /// [deploy]
    /// scopes = build:read, deploy:write
    /// tenants = *
    /// public = false
    /// hints = destructive, open_world
    /// gate = needs_approval, rate_limit 10/min
    /// definition = sha256:5d0e…
    /// mcp = sha256:9b1f…
    /// openai-chat = sha256:…
    /// openai-chat-strict = sha256:…
    /// openai-responses = sha256:…
    /// openai-responses-strict = sha256:…
    /// anthropic = sha256:…
    /// gemini = unsupported: /$defs/Tree: …
    /// ```
    ///
    /// | line | what |
    /// | --- | --- |
    /// | `[name]` | the tool's name |
    /// | `scopes` | the scopes a subject must hold, sorted; `(none)` |
    /// | `tenants` | the tenants whose subjects may see it, sorted; `*`: every tenant. A tenant that could be misread (empty, `*`, with spaces or commas, ...) is a JSON string |
    /// | `public` | `true` for a tool declared `public` (no scopes, no tenants: every subject of every tenant sees it), else `false` |
    /// | `hints` | `read_only`, `destructive`, `idempotent`, `open_world`, those declared, in this order; `(none)` |
    /// | `gate` | `needs_approval`, and `rate_limit 10/min`: the tool's own limit, or the registry's default (`RegistryBuilder::rate_limit`) followed by `(registry default)`; `(none)` |
    /// | `definition` | the digest of the provider-neutral definition: name, title, description, the canonical parameters schema and the output schema |
    /// | one line per profile of [`Profile::ALL`], by [`Profile::name`] | [`Tool::digest`]: the SHA-256 of the tool object that profile's export holds (without `_meta`), or `unsupported: ` and what that profile cannot express (`pointer: rule`, separated by `; `) |
    ///
    /// A digest is `sha256:` and 64 lowercase hexadecimal digits. The `mcp` digest is also the
    /// value of each MCP tool's `_meta` key [`DIGEST_META_KEY`](crate::lockfile::DIGEST_META_KEY), so an
    /// MCP client can pin it. A description or schema change alters `definition` and every
    /// profile's digest; an upgrade that only changes how one profile lowers a schema alters
    /// that profile's line alone.
    ///
    /// Not in the lock: where a tool was declared, its timeout, readiness checks, call
    /// policies (code, not data), revocations made at run time.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, Registry};
    ///
    /// /// Start a deployment of a project.
    /// #[tool(scopes = "deploy:write, build:read", destructive, needs_approval, rate_limit = "10/min")]
    /// fn deploy(project: String) -> String {
    ///     format!("deploying {project}")
    /// }
    ///
    /// let lock = Registry::from_inventory().unwrap().lock();
    /// let block: Vec<&str> = lock.lines().skip_while(|line| *line != "[deploy]").take(6).collect();
    /// assert_eq!(block, [
    ///     "[deploy]",
    ///     "scopes = build:read, deploy:write",
    ///     "tenants = *",
    ///     "public = false",
    ///     "hints = destructive",
    ///     "gate = needs_approval, rate_limit 10/min",
    /// ]);
    /// assert!(lock.contains("\nmcp = sha256:"));
    /// assert!(lock.contains("\ngemini = sha256:"));
    /// ```
    #[must_use = "the lock text is to be written or compared (`Registry::assert_lockfile`)"]
    pub fn lock(&self) -> String {
        crate::register::lock::lock_text(self.snapshot().tools(), self.inner.gate.rate_limit)
    }

    /// Panics with what changed, tool by tool, unless the lock file at `path` holds exactly
    /// [`lock()`](Self::lock); the test that pins a registry's tool definitions:
    ///
    /// ```no_run,standalone_crate
    /// # use registry_core::Registry;
    /// #[test]
    /// fn tool_definitions_are_pinned() {
    ///     Registry::from_inventory().unwrap().assert_lockfile("tools.lock");
    /// }
    /// ```
    ///
    /// `path` is relative to the working directory: in a `cargo test`, the root of the crate
    /// whose test it is (where its `Cargo.toml` is).
    ///
    /// - A mismatch panics with a line diff, tool by tool: each tool changed (its old lines
    ///   `-`, its new ones `+`), added or removed, and how to accept the change.
    /// - With the environment variable `REGISTRY_LOCK=overwrite`, the file is written (with
    ///   its directory) instead, and the check passes: `REGISTRY_LOCK=overwrite cargo test`,
    ///   then review the diff (`git diff tools.lock`) and commit it.
    /// - A missing file panics saying how to create it (the same variable).
    ///
    /// Line ends do not matter (a file checked out with CRLF matches). In CI, run the tests
    /// without the variable: a definition that changed without its lock file fails the build.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, Registry};
    ///
    /// /// Read the current build status of a project.
    /// #[tool(scopes = "build:read", read_only)]
    /// fn get_status(project: String) -> String {
    ///     format!("{project}: passed")
    /// }
    ///
    /// let registry = Registry::from_inventory().unwrap();
    /// let path = std::env::temp_dir().join(format!("tools-{}.lock", std::process::id()));
    /// std::fs::write(&path, registry.lock()).unwrap(); // what REGISTRY_LOCK=overwrite does
    /// registry.assert_lockfile(&path); // passes: nothing changed
    ///
    /// // A lock file that pinned another scope: the check fails, naming the tool and the line
    /// // (unless REGISTRY_LOCK=overwrite is set: then it rewrites the file).
    /// std::fs::write(&path, registry.lock().replace("build:read", "build:write")).unwrap();
    /// if std::env::var_os("REGISTRY_LOCK").is_none() {
    ///     let check = std::panic::AssertUnwindSafe(|| registry.assert_lockfile(&path));
    ///     let panic = std::panic::catch_unwind(check).unwrap_err();
    ///     let message = panic.downcast_ref::<String>().unwrap();
    ///     assert!(message.contains("[get_status] changed:\n  - scopes = build:write\n  + scopes = build:read"));
    /// }
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    #[track_caller]
    pub fn assert_lockfile(&self, path: impl AsRef<std::path::Path>) {
        if let Err(message) = crate::register::lock::check_file(path.as_ref(), &self.lock()) {
            panic!("{message}");
        }
    }

    /// How many revocations and replacements have been made: cheap to poll (an atomic read)
    /// for a server that must tell its clients when their tool lists may have changed.
    pub(crate) fn change_generation(&self) -> u64 {
        self.inner.generation.load(Ordering::Acquire)
    }

    /// Every revocation and replacement since the registry was built, in order.
    pub fn changes(&self) -> Vec<Change> {
        self.lock_changes().clone()
    }

    /// What became of the runs that were no longer current
    /// ([`Run::is_current`](crate::Run::is_current)) when they ended, and of every run
    /// reopened ([`reopen`](Self::reopen)): finished, migrated or stopped, oldest first, the
    /// most recent [`RUN_ENDS_KEPT`](crate::change::RUN_ENDS_KEPT). Each is also audited as an
    /// [`AuditEvent::RunEnd`](crate::audit::AuditEvent::RunEnd) event.
    pub fn run_ends(&self) -> Vec<RunEnd> {
        self.inner
            .run_ends
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// Keeps `end` (dropping the oldest past the bound) and audits it.
    pub(crate) fn record_run_end(&self, end: RunEnd) {
        {
            let mut ends = self
                .inner
                .run_ends
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if ends.len() == RUN_ENDS_KEPT {
                ends.pop_front();
            }
            ends.push_back(end.clone());
        }
        let sink = self.audit_sink();
        if audit::wanted(sink) {
            audit::emit(sink, AuditEvent::RunEnd(end));
        }
    }

    fn lock_changes(&self) -> std::sync::MutexGuard<'_, Vec<Change>> {
        self.inner
            .changes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The current snapshot, to replace it; taken after the changes' lock, which serializes
    /// changes.
    fn write_snapshot(&self) -> std::sync::RwLockWriteGuard<'_, Arc<Snapshot>> {
        self.inner
            .snapshot
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `change` (its effect already applied, under `changes`' lock), counts it in the
    /// generation, and audits it once the lock is released.
    fn commit_change(
        &self,
        mut changes: std::sync::MutexGuard<'_, Vec<Change>>,
        change: Change,
    ) -> Change {
        changes.push(change.clone());
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        drop(changes);
        self.emit_change(&change);
        change
    }

    fn emit_change(&self, change: &Change) {
        let sink = self.audit_sink();
        if audit::wanted(sink) {
            audit::emit(
                sink,
                AuditEvent::Change(ChangeEvent {
                    change: change.clone(),
                }),
            );
        }
    }

    pub(crate) fn is_revoked(&self, slot: usize, version: u64) -> bool {
        self.inner.slots[slot].is_revoked(version)
    }

    /// The reason of the change that revoked `version` of the tool `name`, if one did.
    pub(crate) fn revocation_reason(&self, name: &str, version: u64) -> Option<String> {
        // Versions start at 1 and each replacement adds one. A revocation revokes every
        // version up to the current one, and so does a replacement that revokes old runs.
        let mut current = 1;
        for change in self
            .lock_changes()
            .iter()
            .filter(|change| change.name == name)
        {
            let revokes = matches!(
                change.kind,
                ChangeKind::Revoked | ChangeKind::Replaced(OldRuns::Revoke)
            );
            if revokes && version <= current {
                return Some(change.reason.clone());
            }
            if let ChangeKind::Replaced(_) | ChangeKind::Restored = change.kind {
                current += 1;
            }
        }
        None
    }

    /// Runs every readiness check (see [`RegistryBuilder::readiness`](crate::RegistryBuilder::readiness)) again, concurrently,
    /// each under its deadline, and records the results: a tool that is not ready is hidden
    /// from runs opened from now on, and calls to it in older runs are answered
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable); one that is ready again is
    /// shown again. A change counts in [`generation`](crate::server::RegistryExt::generation) and is audited.
    ///
    /// Returns each checked tool's result, in name order. Call it from the application's own
    /// schedule (a health endpoint, a timer): checks that need an async runtime run in it.
    pub async fn check_readiness(&self) -> Vec<ToolReadiness> {
        let timeout = self.inner.readiness_timeout;
        let checks = self
            .inner
            .readiness
            .iter()
            .enumerate()
            .filter_map(|(slot, check)| Some((slot, check.as_ref()?)))
            .map(|(slot, check)| async move { (slot, check.run(timeout).await) });
        let results = futures_util::future::join_all(checks).await;
        results
            .into_iter()
            .map(|(slot, result)| {
                let not_ready = &self.inner.unavailable.not_ready;
                if self.inner.slots[slot]
                    .ready
                    .set(&result, |is_not| not_ready.set(slot, is_not))
                {
                    self.inner.generation.fetch_add(1, Ordering::AcqRel);
                    let event = ReadinessEvent {
                        tool: self.inner.names[slot].to_string(),
                        not_ready: result.as_ref().err().cloned(),
                    };
                    if let Some(reason) = &event.not_ready {
                        tracing::warn!(target: audit::AUDIT_TARGET, tool = %audit::Logged(&event.tool), reason = %audit::Logged(reason), "tool not ready");
                    }
                    let sink = self.audit_sink();
                    if audit::wanted(sink) {
                        audit::emit(sink, AuditEvent::Readiness(event));
                    }
                }
                ToolReadiness {
                    name: self.inner.names[slot].to_string(),
                    not_ready: result.err(),
                }
            })
            .collect()
    }

    /// Whether the tool in `slot` passed its readiness check, the last time it ran.
    pub(crate) fn is_ready(&self, slot: usize) -> bool {
        self.inner.slots[slot].ready.is_ready()
    }

    /// Why the tool in `slot` is not ready, if it is not.
    pub(crate) fn not_ready(&self, slot: usize) -> Option<String> {
        let state = &self.inner.slots[slot].ready;
        if state.is_ready() {
            return None;
        }
        Some(state.reason().unwrap_or_else(|| "not ready".into()))
    }

    /// The version of the tool in `slot` that new runs get.
    pub(crate) fn current_version(&self, slot: usize) -> u64 {
        self.snapshot().version(slot)
    }

    pub(crate) fn gate(&self) -> &GateConfig {
        &self.inner.gate
    }

    /// Where tasks are kept, their bounds, and the ones running in this process.
    pub(crate) fn tasks(&self) -> &TaskConfig {
        &self.inner.tasks
    }

    /// The registry's call policies, in the order they were given; all are asked.
    pub(crate) fn call_policies(&self) -> &[Box<dyn CallPolicy>] {
        &self.inner.gate.call_policies
    }

    /// The registry's asynchronous call policies and their deadlines, in the order given.
    pub(crate) fn async_call_policies(
        &self,
    ) -> &[(Box<dyn crate::gate::AsyncCallPolicy>, std::time::Duration)] {
        &self.inner.gate.async_call_policies
    }

    /// The registry's result checks, in the order they were given.
    pub(crate) fn result_checks(&self) -> &[Box<dyn crate::gate::ResultCheck>] {
        &self.inner.gate.result_checks
    }

    pub(crate) fn audit_sink(&self) -> Option<&dyn AuditSink> {
        self.inner.audit.as_deref()
    }

    /// The key of the audit log's hashes of arguments and queries.
    pub(crate) fn audit_key(&self) -> &AuditKey {
        &self.inner.audit_key
    }

    /// The host of this registry's calls, if the application installed one.
    pub(crate) fn host(&self) -> Option<&Arc<dyn CallHost>> {
        self.inner.host.as_ref()
    }

    /// The embedder search ranks by meaning with, if the application gave one.
    pub(crate) fn embedder(&self) -> Option<&dyn Embedder> {
        self.inner.embedder.as_deref()
    }

    /// Builds now what the first search of a run would otherwise build: the search index of
    /// the current tools and, if the registry has an [embedder](crate::RegistryBuilder::embedder),
    /// their vectors (every tool's text embedded, in batches). Each is built once per snapshot
    /// of the tools and shared by every run opened from it; without this call, the first
    /// search pays for the whole catalog.
    ///
    /// It calls the embedder on this thread and may block as long as the whole catalog takes
    /// (a local model: seconds for hundreds of tools): call it at start, on a thread where
    /// blocking is allowed (`tokio::task::spawn_blocking`), never on an async worker. A
    /// change that replaces a tool makes a new snapshot, whose first search embeds again (an
    /// embedder with a cache answers the unchanged tools from it).
    ///
    /// Every tool is embedded, those hidden from some run too: the vectors stay in this
    /// process, in the snapshot, and a search ranks only its run's allowed set, so a hidden
    /// tool neither is found nor changes another's score.
    ///
    /// ```
    /// use registry_core::search::{EmbedError, Embedder};
    /// use registry_core::{DynamicTool, Registry};
    ///
    /// struct Length;
    ///
    /// impl Embedder for Length {
    ///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
    ///         Ok(texts.iter().map(|text| vec![text.len() as f32, 1.0]).collect())
    ///     }
    /// }
    ///
    /// let registry = Registry::builder()
    ///     .tool(DynamicTool::new("rollback", "Roll a deployment back.").public()
    ///         .handler(|_ctx, _args| Ok::<_, String>(serde_json::json!("done"))))
    ///     .embedder(Length)
    ///     .build()
    ///     .unwrap();
    /// let prepared = registry.prepare_search();
    /// assert_eq!((prepared.tools, prepared.by_meaning), (1, true));
    /// ```
    pub fn prepare_search(&self) -> PreparedSearch {
        let snapshot = self.snapshot();
        snapshot.index();
        let by_meaning = self
            .embedder()
            .is_some_and(|embedder| snapshot.vectors(embedder).is_some());
        PreparedSearch {
            tools: snapshot.len(),
            by_meaning,
        }
    }

    /// The registry's access policies, in the order they were given; all apply.
    pub(crate) fn access_rules(&self) -> &[Box<dyn AccessRule>] {
        &self.inner.access_rules
    }

    /// The threads this registry's synchronous tools run on.
    pub(crate) fn blocking_pool(&self) -> &BlockingPool {
        &self.inner.pool
    }

    /// How long this registry's calls wait for answers to questions and sampling.
    pub(crate) fn host_waits(&self) -> HostWaits {
        self.inner.waits
    }

    pub(crate) fn limits(&self) -> &ArgumentLimits {
        &self.inner.limits
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.inner.names)
            .finish_non_exhaustive()
    }
}

impl IntoIterator for &Registry {
    type Item = Tool;
    type IntoIter = Box<dyn ExactSizeIterator<Item = Tool>>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}
