//! A run: what one agent session may see and do, and the resolution of every call it makes.

mod approvals;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::audit::{
    self, AUDITED_NAME, ApprovalEventKind, AuditEvent, CallEvent, ProjectionEvent,
    argument_fingerprint, truncate,
};
use crate::declare::definition::ToolDefinition;
use crate::declare::policy::Hints;
use crate::discover::allowed::AllowedSet;
use crate::discover::discovery::{Entry, Snapshot};
use crate::discover::subject::Subject;
use crate::execute::cancel::Cancellation;
use crate::execute::content::Payload;
use crate::execute::context::{CallOptions, HostWaits, RunScope, ToolContext, default_host};
use crate::execute::execution::{self, Failure};
use crate::execute::host::CallHost;
use crate::execute::observation::{ErrorKind, Observation};
use crate::gate::{
    ApprovalRequest, Budget, CallPolicy, CallRequest, Decision, QuotaDecision, QuotaKey, RateLimit,
};
use crate::present::profile::{CompatibilityError, Profile};
use crate::register::registry::Registry;
use crate::resolve::call::{CallHeader, ToolCall};
use crate::resolve::tool_error::{ArgumentProblem, ToolError};

/// One run: the tools a subject was shown, frozen, and the gate every call passes.
///
/// Opened with [`Registry::open_run`]. Every call is untrusted input, resolved in this
/// order, each failure an [`Observation`] with the call id and tool name, never a panic:
///
/// 1. the name is in the run's allowed set, matched exactly: otherwise
///    [`ErrorKind::UnknownTool`], or [`ErrorKind::NotAllowed`] when the tool exists but this
///    run may not use it; the model reads the same text for both;
/// 2. the tool is not revoked: otherwise [`ErrorKind::Revoked`];
/// 3. the arguments are a JSON object within the [`ArgumentLimits`] that validates against
///    the schema the model was shown: otherwise [`ErrorKind::InvalidArguments`], listing
///    every problem;
/// 4. the gate: the registry's and the run's [`CallPolicy`] decide
///    ([`ErrorKind::Denied`], or [`ErrorKind::ApprovalRequired`] for a call that waits for a
///    person, as does every call of a `needs_approval` tool); then the run's call budget and
///    the tool's rate limit ([`ErrorKind::RateLimited`]);
/// 5. the tool runs: `Err` is [`ErrorKind::ExecutionFailed`], a panic
///    [`ErrorKind::Panicked`], a missed deadline [`ErrorKind::TimedOut`].
///
/// A tool that is not ready (see [`RegistryBuilder::readiness`]) is answered
/// [`ErrorKind::Unavailable`] in runs opened before it stopped being ready. A call that waits
/// for approval runs when [`Run::approve`] says so, with exactly the arguments approved.
///
/// A run is `Send + Sync`: calls may run concurrently.
///
/// [`ArgumentLimits`]: crate::ArgumentLimits
/// [`CallPolicy`]: crate::CallPolicy
/// [`RegistryBuilder::readiness`]: crate::RegistryBuilder::readiness
///
/// ```
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
/// assert_eq!(ok.content(), &json!("web: passed"));
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
    registry: Registry,
    snapshot: Arc<Snapshot>,
    scope: Arc<RunScope>,
    allowed: AllowedSet,
    timeout: Option<Duration>,
    /// The run's own call policies, asked after the registry's.
    policies: Vec<Arc<dyn CallPolicy>>,
    budget: Option<Budget>,
    host: Option<Arc<dyn CallHost>>,
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
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// Opens a run for `subject`: projects the registry once into the tools the subject may
    /// see, and freezes that set as the run's allowed tools.
    ///
    /// A tool is visible when the subject holds all its scopes, its tenant restriction admits
    /// the subject's tenant, the access level admits it (a read-only run sees only
    /// `read_only` tools), it is not revoked, and the application's [`AccessPolicy`](crate::AccessPolicy), if any,
    /// does not deny it.
    pub fn open_run(&self, run_id: impl Into<Arc<str>>, subject: &Subject) -> Run {
        let (snapshot, entries) = self.project(subject);
        let scope = Arc::new(RunScope {
            run_id: run_id.into(),
            subject: subject.clone(),
            state: self.app_state().clone(),
        });
        let hidden = snapshot.tools.len() - entries.len();
        let run = Run::new(self.clone(), snapshot, scope, entries);
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
}

/// How many names an unknown-tool answer lists at most.
const LISTED_NAMES: usize = 50;

impl Run {
    pub(crate) fn new(
        registry: Registry,
        snapshot: Arc<Snapshot>,
        scope: Arc<RunScope>,
        entries: Vec<Entry>,
    ) -> Run {
        let allowed = AllowedSet::new(entries, scope.run_id.clone(), scope.subject.clone());
        Run {
            registry,
            snapshot,
            scope,
            allowed,
            timeout: None,
            policies: Vec::new(),
            budget: None,
            host: None,
        }
    }

    /// Bounds every call of this run: a call that takes longer is answered `TimedOut`. A
    /// tool's own `timeout`, if shorter, still applies.
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
    /// ```
    /// use registry_core::{tool, CallRequest, Decision, ErrorKind, Registry, Subject, ToolCall};
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
    pub fn with_call_policy(mut self, policy: impl CallPolicy) -> Run {
        self.policies.push(Arc::new(policy));
        self
    }

    /// Allows this run at most `calls` executions in all; past that, every call is answered
    /// [`ErrorKind::RateLimited`] with no time to retry. Refused calls do not count.
    pub fn with_call_budget(mut self, calls: u64) -> Run {
        self.budget = Some(Budget::new(calls));
        self
    }

    /// Sends the progress, logs, questions and sampling requests of this run's calls to
    /// `host`, instead of the registry's (see [`CallHost`]); a call's own host, given with
    /// [`call_with`](Self::call_with), still comes first. A second call replaces it.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use registry_core::{tool, CallHost, CallInfo, LogLevel, Registry, Subject, ToolCall, ToolContext};
    /// use serde_json::json;
    ///
    /// /// Clean the build cache.
    /// #[tool(public)]
    /// fn clean(ctx: &ToolContext) -> String {
    ///     ctx.log(LogLevel::Notice, "removed 3 GiB");
    ///     "done".into()
    /// }
    ///
    /// #[derive(Clone, Default)]
    /// struct Transcript(Arc<Mutex<Vec<String>>>);
    ///
    /// impl CallHost for Transcript {
    ///     fn log(&self, call: &CallInfo<'_>, level: LogLevel, message: &str) {
    ///         self.0.lock().unwrap().push(format!("{} {level}: {message}", call.tool_name));
    ///     }
    /// }
    ///
    /// let transcript = Transcript::default();
    /// let run = Registry::from_inventory()
    ///     .unwrap()
    ///     .open_run("run-1", &Subject::new("acme"))
    ///     .with_host(transcript.clone());
    /// run.call_blocking(ToolCall::new("c1", "clean", json!({})));
    /// assert_eq!(*transcript.0.lock().unwrap(), ["clean notice: removed 3 GiB"]);
    /// ```
    pub fn with_host(mut self, host: impl CallHost) -> Run {
        self.host = Some(Arc::new(host));
        self
    }

    /// The host this run's calls use unless given their own: the run's
    /// ([`with_host`](Self::with_host)), else the registry's
    /// ([`RegistryBuilder::host`](crate::RegistryBuilder::host)), else the defaults
    /// (`tracing` for progress and logs, "not supported" for questions and sampling). A host
    /// given per call can pass on to it what it cannot do itself, as `registry-mcp` does.
    pub fn host(&self) -> Arc<dyn CallHost> {
        self.host
            .clone()
            .or_else(|| self.registry.host().cloned())
            .unwrap_or_else(default_host)
    }

    /// The context of call `call_id` to `entry`'s tool, with `options`' host and cancellation.
    pub(crate) fn context(
        &self,
        call_id: &str,
        entry: &Entry,
        options: &CallOptions,
    ) -> ToolContext {
        let host = options.host.clone().unwrap_or_else(|| self.host());
        let cancellation = match &options.cancellation {
            Some(caller) => caller.child(),
            // A deadline trips the call's own cancellation, for a tool to see.
            None if self.deadline(entry).is_some() => Cancellation::new(),
            None => Cancellation::never(),
        };
        let registry = self.registry.host_waits();
        let waits = HostWaits {
            elicit: options.elicit_timeout.unwrap_or(registry.elicit),
            sample: options.sample_timeout.unwrap_or(registry.sample),
        };
        ToolContext::in_run(
            self.scope.clone(),
            Arc::from(call_id),
            entry.tool.name_cow(),
            host,
            cancellation,
            waits,
        )
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
            hints: entry.tool.policy().hints,
            version: entry.tool.version_fingerprint(),
        })
    }

    /// The registry snapshot the run was projected from.
    pub(crate) fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The registry snapshot the run was projected from, shared.
    pub(crate) fn shared_snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.clone()
    }

    /// Exactly the JSON `profile`'s consumer takes as its list of tools: this run's visible
    /// tools only, in name order, each lowered to what the profile accepts. Byte-identical
    /// from call to call and process to process (prompt caching depends on it).
    ///
    /// Fails, listing every problem, if a visible tool cannot be expressed in the profile
    /// (check at startup with [`Registry::check`] to never meet this here).
    pub fn export(&self, profile: Profile) -> Result<Value, CompatibilityError> {
        crate::present::export::export_run(profile, self.allowed.entries().iter().map(|e| &e.tool))
    }

    /// The per-request allowlist of `profile`, naming this run's allowed tools, where the
    /// profile has one: OpenAI `tool_choice` with `allowed_tools`, Gemini `toolConfig` with
    /// `allowedFunctionNames`. `None` for the others.
    pub fn allowlist(&self, profile: Profile) -> Option<Value> {
        let names: Vec<&str> = self.allowed.names().collect();
        crate::present::export::allowlist(profile, &names)
    }

    /// The registry the run was opened from.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Resolves `call`, passes it through the gate and executes it.
    pub async fn call(&self, call: ToolCall) -> Observation {
        self.call_with(call, CallOptions::default()).await
    }

    /// [`call`](Self::call), with a host of the call's own (for its tool's progress, logs,
    /// questions and sampling) and a cancellation: once tripped, the call ends as
    /// [`ErrorKind::Cancelled`] (an async tool's future is dropped, a synchronous tool sees
    /// [`ToolContext::is_cancelled`] and its result is discarded), audited as `cancelled`.
    ///
    /// ```
    /// use registry_core::{tool, CallOptions, Cancellation, ErrorKind, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// /// Wait for ever.
    /// #[tool(public)]
    /// async fn wait_forever() -> String {
    ///     std::future::pending::<()>().await;
    ///     unreachable!()
    /// }
    ///
    /// let run = Registry::from_inventory().unwrap().open_run("run-1", &Subject::new("acme"));
    /// let cancellation = Cancellation::new();
    /// let options = CallOptions::new().with_cancellation(cancellation.clone());
    /// std::thread::spawn(move || {
    ///     std::thread::sleep(std::time::Duration::from_millis(20));
    ///     cancellation.cancel();
    /// });
    /// let answer = pollster::block_on(run.call_with(ToolCall::new("c1", "wait_forever", json!({})), options));
    /// assert_eq!(answer.error_kind(), Some(ErrorKind::Cancelled));
    /// ```
    pub async fn call_with(&self, call: ToolCall, options: CallOptions) -> Observation {
        audit::ready(self.registry.audit_sink()).await;
        let started = self.clock();
        let resolved = match self
            .resolve(call, &options)
            .and_then(|resolved| self.gate(resolved))
        {
            Ok(Gated::Run(resolved)) => resolved,
            Ok(Gated::Approval(resolved, reason)) => {
                let decided = self.request_approval(*resolved, reason).await;
                return self.finish(decided, started);
            }
            Err(refused) => return self.finish(*refused, started),
        };
        if let Err(refused) = self.admit(&resolved).await {
            return self.finish(*refused, started);
        }
        let outcome = self
            .execute(&resolved.entry, resolved.context, resolved.arguments)
            .await;
        self.finish(resolved.ticket.outcome(outcome), started)
    }

    /// Resolves, gates and executes `call` on this thread, without an async runtime (async
    /// tools, deadlines and asynchronous stores are driven by a small local executor).
    pub fn call_blocking(&self, call: ToolCall) -> Observation {
        self.call_blocking_with(call, CallOptions::default())
    }

    /// [`call_blocking`](Self::call_blocking), with the call's own host and cancellation (see
    /// [`call_with`](Self::call_with)).
    pub fn call_blocking_with(&self, call: ToolCall, options: CallOptions) -> Observation {
        let started = self.clock();
        let resolved = match self
            .resolve(call, &options)
            .and_then(|resolved| self.gate(resolved))
        {
            Ok(Gated::Run(resolved)) => resolved,
            Ok(Gated::Approval(resolved, reason)) => {
                let decided = pollster::block_on(self.request_approval(*resolved, reason));
                return self.finish(decided, started);
            }
            Err(refused) => return self.finish(*refused, started),
        };
        if let Err(refused) = self.admit_blocking(&resolved) {
            return self.finish(*refused, started);
        }
        let timeout = self.deadline(&resolved.entry);
        let outcome = execution::execute_blocking(
            &resolved.entry.tool,
            resolved.context,
            resolved.arguments,
            timeout,
            self.registry.blocking_pool(),
        );
        let outcome = self.refund_unrun(outcome);
        self.finish(resolved.ticket.outcome(outcome), started)
    }

    /// Runs a call that passed the gate.
    pub(crate) async fn execute(
        &self,
        entry: &Entry,
        context: ToolContext,
        arguments: Value,
    ) -> Result<Payload, Failure> {
        execution::execute(
            &entry.tool,
            context,
            arguments,
            self.deadline(entry),
            self.registry.blocking_pool(),
        )
        .await
        .map_err(|failure| self.refund_failure(failure))
    }

    /// `outcome`, with the run's budget refunded if the tool never started.
    fn refund_unrun(&self, outcome: Result<Payload, Failure>) -> Result<Payload, Failure> {
        outcome.map_err(|failure| self.refund_failure(failure))
    }

    /// A call that found no thread to run on did not run: it does not count against the
    /// run's budget.
    fn refund_failure(&self, failure: Failure) -> Failure {
        if failure.kind == ErrorKind::Unavailable
            && let Some(budget) = &self.budget
        {
            budget.refund();
        }
        failure
    }

    fn deadline(&self, entry: &Entry) -> Option<Duration> {
        match (entry.tool.policy().timeout, self.timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Steps 1 to 3: the allowed set, revocation and readiness, the arguments.
    fn resolve(&self, call: ToolCall, options: &CallOptions) -> Result<Resolved, Box<Decided>> {
        let (header, arguments) = call.into_parts(self.registry.limits());
        let CallHeader {
            id: call_id,
            name,
            generated_id,
        } = header;
        // The arguments' shape is checked first (cheaply, without recursion) so that the
        // audit log can record their size and hash for every call, refused ones included.
        let audit = audit::wanted(self.registry.audit_sink());
        let arguments = arguments.and_then(|arguments| {
            self.registry.limits().check(&arguments)?;
            Ok(arguments)
        });
        let fingerprint = match &arguments {
            Ok(arguments) if audit => Some(argument_fingerprint(arguments)),
            _ => None,
        };
        let refuse = |kind, text, detail, version| {
            let mut decided = Decided::refused(call_id.clone(), name.clone(), kind, text);
            decided.arguments = fingerprint.clone();
            decided.generated_id = generated_id;
            decided.detail = detail;
            decided.tool_version = version;
            Err(Box::new(decided))
        };
        let Some(entry) = self.allowed.find(&name) else {
            let kind = if self.registry.contains(&name) {
                ErrorKind::NotAllowed
            } else {
                ErrorKind::UnknownTool
            };
            return refuse(kind, self.unknown_tool_text(&name), None, None);
        };
        let version = Some(entry.tool.version_fingerprint());
        if let Some(reason) = self.registry.suspended() {
            return refuse(
                ErrorKind::Unavailable,
                unavailable_text(&name),
                Some(reason),
                version,
            );
        }
        if self.registry.is_revoked(entry.slot, entry.version) {
            return refuse(ErrorKind::Revoked, revoked_text(&name), None, version);
        }
        if let Some(reason) = self.registry.not_ready(entry.slot) {
            return refuse(
                ErrorKind::Unavailable,
                unavailable_text(&name),
                Some(reason),
                version,
            );
        }
        let mut arguments = match arguments {
            Ok(arguments) => arguments,
            Err(problem) => {
                let mut decided = Decided::invalid(call_id, name, vec![problem]);
                decided.generated_id = generated_id;
                decided.tool_version = version;
                return Err(Box::new(decided));
            }
        };
        if let Err(problems) = validate(&entry.tool, &mut arguments) {
            let mut decided = Decided::invalid(call_id, name, problems);
            decided.arguments = fingerprint;
            decided.generated_id = generated_id;
            decided.tool_version = version;
            return Err(Box::new(decided));
        }
        let context = self.context(&call_id, entry, options);
        Ok(Resolved {
            entry: entry.clone(),
            context,
            arguments,
            ticket: Ticket {
                call_id,
                name,
                arguments: fingerprint,
                generated_id,
                structured: entry.tool.output_schema().is_some(),
                approval: None,
                tool_version: version,
            },
        })
    }

    /// Step 4, the policies: allow, deny, or ask a person.
    fn gate(&self, resolved: Resolved) -> Result<Gated, Box<Decided>> {
        match self.decide(
            &resolved.entry,
            resolved.context.call_id(),
            &resolved.arguments,
        ) {
            Verdict::Allow => Ok(Gated::Run(resolved)),
            Verdict::Approval(reason) => Ok(Gated::Approval(Box::new(resolved), reason)),
            Verdict::Deny { reason, detail } => {
                let text = denied_text(resolved.entry.tool.name(), &reason);
                let mut decided = resolved.ticket.refused(ErrorKind::Denied, text);
                decided.detail = detail.or(Some(reason));
                Err(Box::new(decided))
            }
        }
    }

    /// What the registry's and this run's policies, and the tool's `needs_approval`, decide
    /// for a validated call: the stricter wins; a policy that panics denies.
    pub(crate) fn decide(&self, entry: &Entry, call_id: &str, arguments: &Value) -> Verdict {
        let request = CallRequest {
            subject: &self.scope.subject,
            run_id: &self.scope.run_id,
            call_id,
            tool_name: entry.tool.name(),
            policy: entry.tool.policy(),
            arguments,
        };
        let policies = (self.registry.call_policies().iter().map(|policy| &**policy))
            .chain(self.policies.iter().map(|policy| &**policy));
        let mut approval = None;
        for policy in policies {
            match catch_unwind(AssertUnwindSafe(|| policy.decide(&request))) {
                Ok(Decision::Allow) => {}
                Ok(Decision::Deny(reason)) => {
                    return Verdict::Deny {
                        reason,
                        detail: None,
                    };
                }
                Ok(Decision::RequireApproval(reason)) => {
                    approval.get_or_insert(reason);
                }
                Err(payload) => {
                    return Verdict::Deny {
                        reason: "the call policy could not decide, so the call was refused".into(),
                        detail: Some(format!(
                            "call policy panicked: {}",
                            execution::panic_message(&*payload)
                        )),
                    };
                }
            }
        }
        if approval.is_none() && entry.tool.policy().needs_approval {
            approval = Some(format!(
                "the tool \"{}\" is marked as needing approval",
                entry.tool.name()
            ));
        }
        match approval {
            Some(reason) => Verdict::Approval(reason),
            None => Verdict::Allow,
        }
    }

    /// Makes, stores and audits an approval request for a call that waits for a person.
    async fn request_approval(&self, resolved: Resolved, reason: String) -> Decided {
        let Resolved {
            entry,
            arguments,
            ticket,
            ..
        } = resolved;
        let gate = self.registry.gate();
        let now = SystemTime::now();
        let request = crate::gate::new_id().map(|id| ApprovalRequest {
            id,
            run_id: self.id().to_owned(),
            tenant: self.subject().tenant().to_owned(),
            agent: self.subject().agent().map(str::to_owned),
            principal: self.subject().principal().map(str::to_owned),
            call_id: ticket.call_id.clone(),
            generated_id: ticket.generated_id,
            tool_name: entry.tool.name().to_owned(),
            arguments,
            reason,
            allowed_set: self.allowed.fingerprint(),
            definition: entry.tool.version_fingerprint(),
            requested_at: now,
            expires_at: now + gate.approval_ttl,
        });
        let name = entry.tool.name().to_owned();
        let request = match request {
            Ok(request) => request,
            Err(error) => return approval_unavailable(ticket, &name, &error),
        };
        // At most `max_pending` waiting per principal; a store that cannot count refuses.
        match gate.approvals.pending_count(&request).await {
            Ok(waiting) if waiting >= gate.max_pending => {
                let text = too_many_approvals_text(&name, gate.max_pending);
                let mut decided = ticket.refused(ErrorKind::RateLimited, text);
                decided.detail = Some(format!(
                    "{waiting} approval requests of this subject are pending (at most {})",
                    gate.max_pending
                ));
                return decided;
            }
            Ok(_) => {}
            Err(error) => return approval_unavailable(ticket, &name, &error),
        }
        let stored = gate.approvals.insert(&request).await.map(|()| request);
        match stored {
            Ok(request) => {
                self.audit_approval(&request, ApprovalEventKind::Requested, None);
                let text = approval_required_text(&name, &request.reason);
                let mut decided = ticket.refused(ErrorKind::ApprovalRequired, text);
                decided.approval_id = Some(request.id.clone());
                decided.observation = decided.observation.with_approval(request);
                decided
            }
            Err(error) => approval_unavailable(ticket, &name, &error),
        }
    }

    /// The run's budget and the tool's rate limit, where a store must be asked.
    pub(crate) async fn admit(&self, resolved: &Resolved) -> Result<(), Box<Decided>> {
        match self.admission(resolved) {
            Admission::Granted => Ok(()),
            Admission::Refused(decided) => Err(decided),
            Admission::Ask(limit) => {
                let store = self.registry.gate().quotas.store();
                let answer = store.acquire(self.quota_key(&resolved.entry), limit).await;
                self.quota_answer(resolved, answer)
            }
        }
    }

    fn admit_blocking(&self, resolved: &Resolved) -> Result<(), Box<Decided>> {
        match self.admission(resolved) {
            Admission::Granted => Ok(()),
            Admission::Refused(decided) => Err(decided),
            Admission::Ask(limit) => {
                let store = self.registry.gate().quotas.store();
                let answer =
                    pollster::block_on(store.acquire(self.quota_key(&resolved.entry), limit));
                self.quota_answer(resolved, answer)
            }
        }
    }

    /// Takes from the budget, and from an in-memory rate limit; says when a store must be
    /// asked.
    fn admission(&self, resolved: &Resolved) -> Admission {
        let limit = resolved
            .entry
            .tool
            .policy()
            .rate_limit
            .or(self.registry.gate().rate_limit);
        if let Some(budget) = &self.budget
            && !budget.take()
        {
            let text = format!(
                "this run has made all {} tool calls it may make; no more tools can be called in it",
                budget.limit
            );
            let decided = resolved.ticket.copy().refused(ErrorKind::RateLimited, text);
            return Admission::Refused(Box::new(decided));
        }
        let Some(limit) = limit else {
            return Admission::Granted;
        };
        match self.registry.gate().quotas.memory() {
            Some(memory) => {
                let answer = memory.acquire_now(self.quota_key(&resolved.entry), limit);
                match self.quota_answer(resolved, Ok(answer)) {
                    Ok(()) => Admission::Granted,
                    Err(decided) => Admission::Refused(decided),
                }
            }
            None => Admission::Ask(limit),
        }
    }

    fn quota_key<'a>(&'a self, entry: &'a Entry) -> QuotaKey<'a> {
        QuotaKey {
            tenant: self.subject().tenant(),
            agent: self.subject().agent(),
            principal: self.subject().principal(),
            tool: entry.tool.name(),
        }
    }

    fn quota_answer(
        &self,
        resolved: &Resolved,
        answer: Result<QuotaDecision, crate::gate::StoreError>,
    ) -> Result<(), Box<Decided>> {
        let name = resolved.entry.tool.name();
        let refused = match answer {
            Ok(QuotaDecision::Granted) => return Ok(()),
            Ok(QuotaDecision::Exhausted { retry_after }) => {
                let text = format!(
                    "the tool \"{name}\" was called too often; try again in {}",
                    humane_wait(retry_after)
                );
                let mut decided = resolved.ticket.copy().refused(ErrorKind::RateLimited, text);
                decided.observation = decided.observation.with_retry_after(Some(retry_after));
                decided
            }
            Err(error) => {
                let mut decided = resolved
                    .ticket
                    .copy()
                    .refused(ErrorKind::Unavailable, unavailable_text(name));
                decided.detail = Some(format!("quota store: {error}"));
                decided
            }
        };
        if let Some(budget) = &self.budget {
            budget.refund();
        }
        Err(Box::new(refused))
    }

    fn unknown_tool_text(&self, name: &str) -> String {
        let shown = truncate(name, 80);
        if self.allowed.is_empty() {
            return format!("unknown tool {shown:?}; this run has no tools to call");
        }
        let mut names: Vec<&str> = self.allowed.names().take(LISTED_NAMES).collect();
        if self.allowed.len() > LISTED_NAMES {
            names.push("...");
        }
        format!(
            "unknown tool {shown:?}; the tools you can call are: {}",
            names.join(", ")
        )
    }

    /// When a call started, if the audit log will want its duration.
    pub(crate) fn clock(&self) -> Option<Instant> {
        audit::wanted(self.registry.audit_sink()).then(Instant::now)
    }

    /// Audits the decision and makes the observation.
    pub(crate) fn finish(&self, decided: Decided, started: Option<Instant>) -> Observation {
        let sink = self.registry.audit_sink();
        if audit::wanted(sink) {
            let (argument_bytes, argument_hash) = decided.arguments.clone().unwrap_or_default();
            audit::emit(
                sink,
                AuditEvent::Call(CallEvent {
                    run_id: self.id().to_owned(),
                    tenant: self.subject().tenant().to_owned(),
                    principal: self.subject().principal().map(str::to_owned),
                    fingerprint: self.allowed.fingerprint(),
                    call_id: truncate(decided.observation.call_id(), AUDITED_NAME),
                    tool: truncate(decided.observation.tool_name(), AUDITED_NAME),
                    outcome: decided.observation_kind(),
                    duration: started.map_or(Duration::ZERO, |started| started.elapsed()),
                    argument_bytes,
                    argument_hash,
                    detail: decided.detail.clone(),
                    approval_id: decided.approval_id.clone(),
                    tool_version: decided.tool_version,
                }),
            );
        }
        decided.observation.with_generated_id(decided.generated_id)
    }
}

/// Validates `arguments` against `tool`'s schema, after dropping `null` optionals.
pub(crate) fn validate(
    tool: &crate::Tool,
    arguments: &mut Value,
) -> Result<(), Vec<ArgumentProblem>> {
    tool.normalize(arguments);
    tool.validate(arguments).map_err(|error| match error {
        ToolError::InvalidArguments(problems) => problems,
        other => vec![ArgumentProblem::new("", other.to_string())],
    })
}

/// What the policies decided.
pub(crate) enum Verdict {
    Allow,
    Deny {
        reason: String,
        detail: Option<String>,
    },
    Approval(String),
}

/// A resolved call after the policies.
enum Gated {
    Run(Resolved),
    Approval(Box<Resolved>, String),
}

/// Whether the budget and rate limit admit a call.
enum Admission {
    Granted,
    Refused(Box<Decided>),
    Ask(RateLimit),
}

/// A call that passed the gate, ready to run.
pub(crate) struct Resolved {
    pub(crate) entry: Entry,
    pub(crate) context: ToolContext,
    pub(crate) arguments: Value,
    pub(crate) ticket: Ticket,
}

/// What is kept of a call while it runs, to answer it afterwards.
pub(crate) struct Ticket {
    pub(crate) call_id: String,
    pub(crate) name: String,
    pub(crate) arguments: Option<(usize, String)>,
    pub(crate) generated_id: bool,
    pub(crate) structured: bool,
    pub(crate) approval: Option<String>,
    /// The version of the tool the call resolved to, for the audit log.
    pub(crate) tool_version: Option<crate::Fingerprint>,
}

impl Ticket {
    fn copy(&self) -> Ticket {
        Ticket {
            call_id: self.call_id.clone(),
            name: self.name.clone(),
            arguments: self.arguments.clone(),
            generated_id: self.generated_id,
            structured: self.structured,
            approval: self.approval.clone(),
            tool_version: self.tool_version,
        }
    }

    /// The call refused with `kind` before it ran.
    pub(crate) fn refused(self, kind: ErrorKind, text: String) -> Decided {
        let mut decided = Decided::refused(self.call_id, self.name, kind, text);
        decided.arguments = self.arguments;
        decided.generated_id = self.generated_id;
        decided.approval_id = self.approval;
        decided.tool_version = self.tool_version;
        decided
    }

    pub(crate) fn outcome(self, outcome: Result<Payload, Failure>) -> Decided {
        let (observation, detail) = match outcome {
            Ok(payload) => (
                Observation::success(self.call_id, self.name, payload)
                    .with_structured(self.structured),
                None,
            ),
            Err(failure) => {
                let text = failure_text(&self.name, &failure);
                let problems = match &failure.error {
                    Some(ToolError::InvalidArguments(problems)) => problems.clone(),
                    _ => Vec::new(),
                };
                let observation = Observation::error(self.call_id, self.name, failure.kind, text)
                    .with_problems(problems);
                (observation, failure.detail)
            }
        };
        Decided {
            observation,
            arguments: self.arguments,
            detail,
            generated_id: self.generated_id,
            approval_id: self.approval,
            tool_version: self.tool_version,
        }
    }
}

/// A decided call: its observation and what the audit log records of it.
pub(crate) struct Decided {
    pub(crate) observation: Observation,
    pub(crate) arguments: Option<(usize, String)>,
    pub(crate) detail: Option<String>,
    pub(crate) generated_id: bool,
    pub(crate) approval_id: Option<String>,
    pub(crate) tool_version: Option<crate::Fingerprint>,
}

impl Decided {
    pub(crate) fn refused(call_id: String, name: String, kind: ErrorKind, text: String) -> Decided {
        Decided {
            observation: Observation::error(call_id, name, kind, text),
            arguments: None,
            detail: None,
            generated_id: false,
            approval_id: None,
            tool_version: None,
        }
    }

    fn invalid(call_id: String, name: String, problems: Vec<ArgumentProblem>) -> Decided {
        let text = invalid_arguments_text(&name, &problems);
        let mut decided = Decided::refused(call_id, name, ErrorKind::InvalidArguments, text);
        decided.observation = decided.observation.with_problems(problems);
        decided
    }

    fn observation_kind(&self) -> Option<ErrorKind> {
        self.observation.error_kind()
    }
}

pub(crate) fn revoked_text(name: &str) -> String {
    format!(
        "the tool \"{name}\" has been withdrawn and can no longer be called; continue without it"
    )
}

pub(crate) fn unavailable_text(name: &str) -> String {
    format!(
        "the tool \"{name}\" is not available right now; nothing was done. Try again later, or continue without it"
    )
}

pub(crate) fn denied_text(name: &str, reason: &str) -> String {
    format!(
        "the call to \"{name}\" was denied: {reason}. Nothing was done; do not repeat the same call"
    )
}

fn too_many_approvals_text(name: &str, max: usize) -> String {
    format!(
        "the call to \"{name}\" needs a person's approval, but too many approvals are waiting already (at most {max} at once); nothing was done. Ask the person to decide the waiting ones, or wait until they expire, then call again"
    )
}

/// The answer to a call whose approval cannot be asked for: the store failed.
fn approval_unavailable(ticket: Ticket, name: &str, error: &crate::StoreError) -> Decided {
    let text = format!(
        "the call to \"{name}\" needs a person's approval, which cannot be asked for right now; nothing was done"
    );
    let mut decided = ticket.refused(ErrorKind::Unavailable, text);
    decided.detail = Some(format!("approval store: {error}"));
    decided
}

fn approval_required_text(name: &str, reason: &str) -> String {
    format!(
        "the call to \"{name}\" needs a person's approval ({reason}); nothing was done yet. The result comes once someone approves or denies it"
    )
}

fn invalid_arguments_text(name: &str, problems: &[ArgumentProblem]) -> String {
    let listed = problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    format!(
        "invalid arguments for \"{name}\": {listed}; call it again with arguments that match its schema"
    )
}

fn failure_text(name: &str, failure: &Failure) -> String {
    match (failure.kind, &failure.error) {
        (ErrorKind::InvalidArguments, Some(ToolError::InvalidArguments(problems))) => {
            invalid_arguments_text(name, problems)
        }
        (ErrorKind::Panicked, _) => format!(
            "the tool \"{name}\" failed with an internal error; the details were logged for the operators"
        ),
        (ErrorKind::Cancelled, _) => format!(
            "the call to \"{name}\" was cancelled before it finished; its result, if any, was discarded"
        ),
        (ErrorKind::Unavailable, _) => format!(
            "the tool \"{name}\" could not start because the server is busy; nothing was done. Try again later"
        ),
        (ErrorKind::TimedOut, _) => format!(
            "the tool \"{name}\" did not finish within {} and was abandoned",
            humane(failure.timeout.unwrap_or_default())
        ),
        (_, Some(ToolError::Failed(text))) => format!("the tool \"{name}\" failed: {text}"),
        (_, Some(error)) => format!("the tool \"{name}\" failed: {error}"),
        (_, None) => format!("the tool \"{name}\" failed"),
    }
}

fn humane(duration: Duration) -> String {
    if duration.subsec_millis() == 0 && duration.as_secs() > 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// A wait, rounded up to what a model can act on: whole seconds past one second.
fn humane_wait(wait: Duration) -> String {
    if wait >= Duration::from_secs(1) {
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        format!("{seconds} s")
    } else {
        format!("{} ms", wait.as_millis().max(1))
    }
}
