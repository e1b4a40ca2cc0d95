//! A run: what one agent session may see, frozen when it opens. What it does with a call is
//! the call path's ([`call`](crate::call)).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::audit::{self, AuditEvent, ProjectionEvent};
use crate::declare::definition::ToolDefinition;
use crate::discover::allowed::AllowedSet;
use crate::gate::{Budget, CallPolicy};
use crate::host::call_host::CallHost;
use crate::host::context::{RunScope, default_host};
use crate::project::discovery::Snapshot;
use crate::register::registry::Registry;
use crate::shared::hints::Hints;
use crate::shared::profile::{CompatibilityError, Profile};
use crate::shared::subject::Subject;

/// One run: the tools a subject was shown, frozen, and the gate every call passes.
///
/// Opened with [`Registry::open_run`]. Every call is untrusted input, resolved in this
/// order, each failure an [`Observation`](crate::Observation) with the call id and tool name, never a panic:
///
/// 1. the name is in the run's allowed set, matched exactly: otherwise
///    [`ErrorKind::UnknownTool`](crate::ErrorKind::UnknownTool), or [`ErrorKind::NotAllowed`](crate::ErrorKind::NotAllowed) when the tool exists but this
///    run may not use it; the model reads the same text for both;
/// 2. the tool is not revoked: otherwise [`ErrorKind::Revoked`](crate::ErrorKind::Revoked);
/// 3. the arguments are a JSON object within the [`ArgumentLimits`] that validates against
///    the schema the model was shown: otherwise [`ErrorKind::InvalidArguments`](crate::ErrorKind::InvalidArguments), listing
///    every problem;
/// 4. the gate: the registry's and the run's [`CallPolicy`] decide
///    ([`ErrorKind::Denied`](crate::ErrorKind::Denied), or [`ErrorKind::ApprovalRequired`](crate::ErrorKind::ApprovalRequired) for a call that waits for a
///    person, as does every call of a `needs_approval` tool); then the run's call budget and
///    the tool's rate limit ([`ErrorKind::RateLimited`](crate::ErrorKind::RateLimited));
/// 5. the tool runs: `Err` is [`ErrorKind::ExecutionFailed`](crate::ErrorKind::ExecutionFailed), a panic
///    [`ErrorKind::Panicked`](crate::ErrorKind::Panicked), a missed deadline [`ErrorKind::TimedOut`](crate::ErrorKind::TimedOut).
///
/// A tool that is not ready (see [`RegistryBuilder::readiness`]) is answered
/// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) in runs opened before it stopped being ready. A call that waits
/// for approval runs when [`Run::decide`] says so, with exactly the arguments approved.
///
/// A run is `Send + Sync`: calls may run concurrently. It keeps what it was shown when the
/// registry changes; [`Run::is_current`] says whether it still matches, and
/// [`Registry::reopen`] opens its successor. A run dropped while no longer current is
/// recorded as finished or stopped ([`Registry::run_ends`]).
///
/// [`ArgumentLimits`]: crate::call::ArgumentLimits
/// [`CallPolicy`]: crate::gate::CallPolicy
/// [`RegistryBuilder::readiness`]: crate::RegistryBuilder::readiness
///
/// ```standalone_crate
/// use registry_core::{tool, ErrorKind, Registry, Subject, ToolCall};
/// use serde_json::json;
///
/// /// Read the current build status of a project.
/// #[tool(scopes = "build:read", read_only)]
/// fn get_status(project: String) -> String {
///     format!("{project}: passed")
/// }
///
/// /// Start a deployment.
/// #[tool(scopes = "deploy:write", destructive)]
/// fn deploy(project: String) -> String {
///     format!("{project}: deploying")
/// }
///
/// let registry = Registry::from_inventory().unwrap();
/// let subject = Subject::new("tenant-a").with_scopes(["build:read"]);
/// let run = registry.open_run("run-42", &subject);
/// assert_eq!(run.allowed().names().collect::<Vec<_>>(), ["get_status"]);
///
/// let ok = run.call_blocking(ToolCall::new("call_1", "get_status", json!({"project": "web"})));
/// assert_eq!(ok.json(), &json!("web: passed"));
///
/// let hidden = run.call_blocking(ToolCall::new("call_2", "deploy", json!({"project": "web"})));
/// assert_eq!(hidden.error_kind(), Some(ErrorKind::NotAllowed));
/// let unknown = run.call_blocking(ToolCall::new("call_3", "delete_all", json!({})));
/// assert_eq!(unknown.error_kind(), Some(ErrorKind::UnknownTool));
/// // The model cannot tell the two apart.
/// assert_eq!(
///     hidden.error_text().unwrap().replace("deploy", "X"),
///     unknown.error_text().unwrap().replace("delete_all", "X"),
/// );
/// ```
pub struct Run {
    pub(crate) registry: Registry,
    pub(crate) scope: Arc<RunScope>,
    pub(crate) allowed: AllowedSet,
    pub(crate) timeout: Option<Duration>,
    /// The run's own call policies, asked after the registry's.
    pub(crate) policies: Vec<Arc<dyn CallPolicy>>,
    /// Shared with the runs that reopen this one ([`Registry::reopen`]).
    pub(crate) budget: Option<Arc<Budget>>,
    pub(crate) host: Option<Arc<dyn CallHost>>,
    /// Whether the run is current, and against which change generation of the registry
    /// that was last found (see [`Run::is_current`]).
    pub(crate) currency: crate::discover::currency::Currency,
    /// The run this one reopened, if it reopened one.
    pub(crate) reopened_from: Option<Arc<str>>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("id", &self.id())
            .field("subject", self.subject())
            .field("allowed", &self.allowed)
            .field("timeout", &self.timeout)
            .field("call_policies", &self.policies.len())
            .field("budget", &self.budget)
            .field("host", &self.host.is_some())
            .field("reopened_from", &self.reopened_from)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// Opens a run for `subject`: projects the registry once into the tools the subject may
    /// see, and freezes that set as the run's allowed tools.
    ///
    /// A tool is visible when the subject holds all its scopes, its tenant restriction admits
    /// the subject's tenant, the access level admits it (a read-only run sees only
    /// `read_only` tools), it is not revoked, and the application's [`AccessRule`](crate::access::AccessRule), if any,
    /// does not deny it.
    pub fn open_run(&self, run_id: impl Into<Arc<str>>, subject: &Subject) -> Run {
        self.open_run_from(run_id.into(), subject, None)
    }

    /// Opens a run of `subject` named `run_id`, reopening the run named `reopened_from` if
    /// one is given; audits its projection.
    pub(crate) fn open_run_from(
        &self,
        run_id: Arc<str>,
        subject: &Subject,
        reopened_from: Option<Arc<str>>,
    ) -> Run {
        // Read before projecting: a change made meanwhile makes the run look changed, and
        // `is_current` then compares what it was shown with what is current.
        let generation = self.change_generation();
        let (snapshot, visible) = self.project(subject);
        let scope = Arc::new(RunScope {
            run_id,
            subject: subject.clone(),
            state: self.app_state().clone(),
        });
        let hidden = snapshot.len() - visible.len();
        let mut run = Run::new(self.clone(), snapshot, scope, visible, generation);
        run.reopened_from = reopened_from;
        let sink = self.audit_sink();
        if audit::wanted(sink) {
            audit::emit(
                sink,
                AuditEvent::Projection(ProjectionEvent {
                    run_id: run.id().to_owned(),
                    tenant: subject.tenant().to_owned(),
                    agent: subject.agent().map(str::to_owned),
                    principal: subject.principal().map(str::to_owned),
                    fingerprint: run.allowed().fingerprint(),
                    visible: run.allowed().len(),
                    hidden,
                    versions: run.allowed().version_fingerprint(),
                    tools: run
                        .allowed()
                        .entries()
                        .iter()
                        .take(audit::PROJECTED_TOOLS)
                        .map(|entry| audit::ToolVersion {
                            name: entry.tool.name().to_owned(),
                            version: entry.tool.version_fingerprint(),
                        })
                        .collect(),
                    attribute_keys: subject
                        .attributes()
                        .map(|(key, _)| key.to_owned())
                        .collect(),
                    refused_attributes: subject
                        .refused_attributes()
                        .map(|(key, why)| (key.to_owned(), why.to_owned()))
                        .collect(),
                }),
            );
        }
        run
    }
}

/// What a model may know of one tool: its definition and behaviour hints, nothing internal;
/// and, for the application's records, which version of the tool it is.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Capability<'a> {
    /// Name, description, title and arguments schema.
    pub definition: &'a ToolDefinition,
    /// The behaviour hints.
    pub hints: Hints,
    /// The version the run would execute
    /// ([`Tool::version_fingerprint`](crate::Tool::version_fingerprint)): its definition,
    /// hints, scopes, tenants and gate flags. The same as the call events of this run record.
    pub version: crate::Fingerprint,
    /// The attribute values the tool is for, per key
    /// ([`ToolSettings::attributes`](crate::definition::ToolSettings::attributes)).
    pub attributes: &'a std::collections::BTreeMap<String, Vec<String>>,
}

/// How many names an unknown-tool answer lists at most.
impl Run {
    /// The run of `scope` allowed the `visible` slots (increasing) of `snapshot`, projected
    /// at the registry's change `generation`.
    pub(crate) fn new(
        registry: Registry,
        snapshot: Arc<Snapshot>,
        scope: Arc<RunScope>,
        visible: Vec<usize>,
        generation: u64,
    ) -> Run {
        let allowed = AllowedSet::new(
            snapshot,
            visible,
            scope.run_id.clone(),
            scope.subject.clone(),
        );
        Run {
            registry,
            scope,
            allowed,
            timeout: None,
            policies: Vec::new(),
            budget: None,
            host: None,
            currency: crate::discover::currency::Currency::new(generation),
            reopened_from: None,
        }
    }

    /// Bounds every call of this run: a call that takes longer is answered `TimedOut`. A
    /// tool's own `timeout`, if shorter, still applies.
    #[must_use = "returns the run with the timeout; the run it was called on is gone"]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Run {
        self.timeout = Some(timeout);
        self
    }

    /// Adds a per-call policy for this run. It can only narrow the registry's (see
    /// [`RegistryBuilder::call_policy`](crate::RegistryBuilder::call_policy)): every policy,
    /// the registry's and the run's, is asked, and the stricter decision wins whatever the
    /// order: deny over approval over allow. A second call adds a policy; it never replaces
    /// the first.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, gate::CallRequest, gate::Decision, ErrorKind, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// /// Delete a branch.
    /// #[tool(scopes = "repo:write")]
    /// fn delete_branch(branch: String) -> String {
    ///     format!("{branch} deleted")
    /// }
    ///
    /// let registry = Registry::from_inventory().unwrap();
    /// let run = registry
    ///     .open_run("r1", &Subject::new("acme").with_scopes(["repo:write"]))
    ///     .with_call_policy(|call: &CallRequest<'_>| match call.arguments()["branch"].as_str() {
    ///         Some("main") => Decision::Deny("main is protected".into()),
    ///         _ => Decision::Allow,
    ///     })
    ///     .with_call_policy(|_: &CallRequest<'_>| Decision::Allow);
    /// let main = run.call_blocking(ToolCall::new("c1", "delete_branch", json!({"branch": "main"})));
    /// assert_eq!(main.error_kind(), Some(ErrorKind::Denied));
    /// ```
    #[must_use = "returns the run with the policy; the run it was called on is gone"]
    pub fn with_call_policy(mut self, policy: impl CallPolicy) -> Run {
        self.policies.push(Arc::new(policy));
        self
    }

    /// Allows this run at most `calls` executions in all; past that, every call is answered
    /// [`ErrorKind::RateLimited`](crate::ErrorKind::RateLimited) with no time to retry. Refused calls do not count.
    /// A run [reopened](Registry::reopen) from this one shares the budget.
    #[must_use = "returns the run with the budget; the run it was called on is gone"]
    pub fn with_call_budget(mut self, calls: u64) -> Run {
        self.budget = Some(Arc::new(Budget::new(calls)));
        self
    }

    /// See [`RunExt::with_host`](crate::server::RunExt::with_host).
    pub(crate) fn hosted_by(mut self, host: impl CallHost) -> Run {
        self.host = Some(Arc::new(host));
        self
    }

    /// See [`RunExt::host`](crate::server::RunExt::host).
    pub(crate) fn effective_host(&self) -> Arc<dyn CallHost> {
        self.host
            .clone()
            .or_else(|| self.registry.host().cloned())
            .unwrap_or_else(default_host)
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        &self.scope.run_id
    }

    /// The subject it acts for.
    pub fn subject(&self) -> &crate::Subject {
        &self.scope.subject
    }

    /// The tools this run may call, frozen when it was opened.
    pub fn allowed(&self) -> &AllowedSet {
        &self.allowed
    }

    /// What the model is shown, in name order.
    pub fn definitions(&self) -> impl ExactSizeIterator<Item = &ToolDefinition> + '_ {
        self.allowed
            .entries()
            .iter()
            .map(|entry| &**entry.tool.definition_ref())
    }

    /// The capabilities the run was shown: definitions, hints and versions, in name order.
    pub fn capabilities(&self) -> impl ExactSizeIterator<Item = Capability<'_>> + '_ {
        self.allowed.entries().iter().map(|entry| Capability {
            definition: entry.tool.definition_ref(),
            hints: entry.tool.settings().hints,
            version: entry.tool.version_fingerprint(),
            attributes: &entry.tool.settings().attributes,
        })
    }

    /// The registry snapshot the run was projected from.
    pub(crate) fn snapshot(&self) -> &Snapshot {
        self.allowed.snapshot()
    }

    /// The registry snapshot the run was projected from, shared.
    pub(crate) fn shared_snapshot(&self) -> Arc<Snapshot> {
        self.allowed.snapshot().clone()
    }

    /// Exactly the JSON `profile`'s consumer takes as its list of tools: this run's visible
    /// tools only, in name order, each lowered to what the profile accepts. Byte-identical
    /// from call to call and process to process (prompt caching depends on it).
    ///
    /// Fails, listing every problem, if a visible tool cannot be expressed in the profile
    /// (check at startup with [`Registry::check`] to never meet this here).
    #[must_use = "the export is what the model is shown: send it with the request"]
    pub fn export(&self, profile: Profile) -> Result<Value, CompatibilityError> {
        crate::present::export::export_run(profile, self.allowed.entries().iter().map(|e| &e.tool))
    }

    /// [`export`](Self::export) as JSON text, for a request body: the same bytes as
    /// `export(profile)?.to_string()`, made from each tool's object text, which the tool
    /// keeps once made (a 10-tool run's export: 14 µs as a `Value` turned into text, about
    /// 1 µs so).
    ///
    /// ```
    /// use registry_core::{DynamicTool, Profile, Registry, Subject};
    /// use serde_json::json;
    ///
    /// let registry = Registry::builder()
    ///     .tool(
    ///         DynamicTool::new("get_status", "Read a build's status.")
    ///             .scopes(["build:read"])
    ///             .handler(|_, _| Ok::<_, String>(json!("green"))),
    ///     )
    ///     .build()
    ///     .unwrap();
    /// let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["build:read"]));
    /// assert_eq!(run.allowed().len(), 1);
    /// for &profile in Profile::ALL {
    ///     assert_eq!(run.export_text(profile).unwrap(), run.export(profile).unwrap().to_string());
    /// }
    /// ```
    #[must_use = "the export is what the model is shown: send it with the request"]
    pub fn export_text(&self, profile: Profile) -> Result<String, CompatibilityError> {
        crate::present::export::export_run_text(
            profile,
            self.allowed.entries().iter().map(|e| &e.tool),
        )
    }

    /// The per-request allowlist of `profile`, naming this run's allowed tools, where the
    /// profile has one: OpenAI `tool_choice` with `allowed_tools`, Gemini `toolConfig` with
    /// `allowedFunctionNames`. `None` for the others.
    #[must_use = "the allowlist is what the provider should enforce: send it with the request"]
    pub fn allowlist(&self, profile: Profile) -> Option<Value> {
        let names: Vec<&str> = self.allowed.names().collect();
        crate::present::export::allowlist(profile, &names)
    }

    /// The registry the run was opened from.
    pub(crate) fn origin(&self) -> &Registry {
        &self.registry
    }
}
