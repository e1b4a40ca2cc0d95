//! A run: what one agent session may see and do, and the resolution of every call it makes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::allowed::AllowedSet;
use crate::audit::{self, AuditEvent, CallEvent};
use crate::call::{CallHeader, ToolCall};
use crate::context::{RunScope, ToolContext};
use crate::definition::ToolDefinition;
use crate::discovery::{Entry, Snapshot};
use crate::execution::{self, Failure};
use crate::explain::{self, Explanation};
use crate::observation::{ErrorKind, Observation};
use crate::policy::Hints;
use crate::profile::{CompatibilityError, Profile};
use crate::registry::Registry;
use crate::tool_error::{ArgumentProblem, ToolError};

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
/// 4. the tool runs: `Err` is [`ErrorKind::ExecutionFailed`], a panic
///    [`ErrorKind::Panicked`], a missed deadline [`ErrorKind::TimedOut`].
///
/// A run is `Send + Sync`: calls may run concurrently.
///
/// [`ArgumentLimits`]: crate::ArgumentLimits
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
#[derive(Debug)]
pub struct Run {
    registry: Registry,
    snapshot: Arc<Snapshot>,
    scope: Arc<RunScope>,
    allowed: AllowedSet,
    timeout: Option<Duration>,
}

/// What a model may know of one tool: its definition and behaviour hints, nothing internal.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Capability<'a> {
    /// Name, description, title and arguments schema.
    pub definition: &'a ToolDefinition,
    /// The behaviour hints.
    pub hints: Hints,
}

/// How many characters of a model-chosen name or call id the audit log keeps.
const AUDITED_NAME: usize = 256;

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
        }
    }

    /// Bounds every call of this run: a call that takes longer is answered `TimedOut`. A
    /// tool's own `timeout`, if shorter, still applies.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Run {
        self.timeout = Some(timeout);
        self
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

    /// The capabilities the run was shown: definitions and hints, in name order.
    pub fn capabilities(&self) -> impl ExactSizeIterator<Item = Capability<'_>> + '_ {
        self.allowed.entries().iter().map(|entry| Capability {
            definition: entry.tool.definition_ref(),
            hints: entry.tool.policy().hints,
        })
    }

    /// Why each registered tool this run cannot see is hidden; for operators, not the model.
    pub fn explain(&self) -> Explanation {
        explain::explain(self, &self.snapshot)
    }

    /// Exactly the JSON `profile`'s consumer takes as its list of tools: this run's visible
    /// tools only, in name order, each lowered to what the profile accepts. Byte-identical
    /// from call to call and process to process (prompt caching depends on it).
    ///
    /// Fails, listing every problem, if a visible tool cannot be expressed in the profile
    /// (check at startup with [`Registry::check`] to never meet this here).
    pub fn export(&self, profile: Profile) -> Result<Value, CompatibilityError> {
        crate::export::export_run(profile, self.allowed.entries().iter().map(|e| &e.tool))
    }

    /// The per-request allowlist of `profile`, naming this run's allowed tools, where the
    /// profile has one: OpenAI `tool_choice` with `allowed_tools`, Gemini `toolConfig` with
    /// `allowedFunctionNames`. `None` for the others.
    pub fn allowlist(&self, profile: Profile) -> Option<Value> {
        let names: Vec<&str> = self.allowed.names().collect();
        crate::export::allowlist(profile, &names)
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Resolves and executes `call`.
    pub async fn call(&self, call: ToolCall) -> Observation {
        let started = Instant::now();
        match self.resolve(call) {
            Err(refused) => self.finish(*refused, started),
            Ok(resolved) => {
                let timeout = self.deadline(&resolved.entry);
                let outcome = execution::execute(
                    &resolved.entry.tool,
                    resolved.context,
                    resolved.arguments,
                    timeout,
                )
                .await;
                self.finish(resolved.ticket.outcome(outcome), started)
            }
        }
    }

    /// Resolves and executes `call` on this thread, without an async runtime (async tools and
    /// deadlines are driven by a small local executor).
    pub fn call_blocking(&self, call: ToolCall) -> Observation {
        let started = Instant::now();
        match self.resolve(call) {
            Err(refused) => self.finish(*refused, started),
            Ok(resolved) => {
                let timeout = self.deadline(&resolved.entry);
                let outcome = execution::execute_blocking(
                    &resolved.entry.tool,
                    resolved.context,
                    resolved.arguments,
                    timeout,
                );
                self.finish(resolved.ticket.outcome(outcome), started)
            }
        }
    }

    fn deadline(&self, entry: &Entry) -> Option<Duration> {
        match (entry.tool.policy().timeout, self.timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Steps 1 to 3: the allowed set, revocation, the arguments.
    fn resolve(&self, call: ToolCall) -> Result<Resolved, Box<Decided>> {
        let (header, arguments) = call.into_parts();
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
        let refuse = |kind, text| {
            let mut decided = Decided::refused(call_id.clone(), name.clone(), kind, text);
            decided.arguments = fingerprint.clone();
            decided.generated_id = generated_id;
            Err(Box::new(decided))
        };
        let Some(entry) = self.allowed.find(&name) else {
            let kind = if self.registry.contains(&name) {
                ErrorKind::NotAllowed
            } else {
                ErrorKind::UnknownTool
            };
            return refuse(kind, self.unknown_tool_text(&name));
        };
        if self.registry.is_revoked(entry.slot, entry.version) {
            let text = format!(
                "the tool \"{name}\" has been withdrawn and can no longer be called; continue without it"
            );
            return refuse(ErrorKind::Revoked, text);
        }
        let mut arguments = match arguments {
            Ok(arguments) => arguments,
            Err(problem) => {
                let mut decided = Decided::invalid(call_id, name, vec![problem]);
                decided.generated_id = generated_id;
                return Err(Box::new(decided));
            }
        };
        entry.tool.normalize(&mut arguments);
        if let Err(error) = entry.tool.validate(&arguments) {
            let problems = match error {
                ToolError::InvalidArguments(problems) => problems,
                other => vec![ArgumentProblem::new("", other.to_string())],
            };
            let mut decided = Decided::invalid(call_id, name, problems);
            decided.arguments = fingerprint;
            decided.generated_id = generated_id;
            return Err(Box::new(decided));
        }
        let context = ToolContext::in_run(
            self.scope.clone(),
            Arc::from(call_id.as_str()),
            entry.tool.name_cow(),
        );
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
            },
        })
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

    /// Audits the decision and makes the observation.
    fn finish(&self, decided: Decided, started: Instant) -> Observation {
        let sink = self.registry.audit_sink();
        if audit::wanted(sink) {
            let (argument_bytes, argument_hash) = decided.arguments.clone().unwrap_or_default();
            audit::emit(
                sink,
                AuditEvent::Call(CallEvent {
                    run_id: self.id().to_owned(),
                    tenant: self.subject().tenant().to_owned(),
                    fingerprint: self.allowed.fingerprint(),
                    call_id: truncate(&decided.call_id, AUDITED_NAME),
                    tool: truncate(&decided.name, AUDITED_NAME),
                    outcome: decided.observation_kind(),
                    duration: started.elapsed(),
                    argument_bytes,
                    argument_hash,
                    detail: decided.detail.clone(),
                }),
            );
        }
        decided.observation.with_generated_id(decided.generated_id)
    }
}

/// A call that passed the gate, ready to run.
struct Resolved {
    entry: Entry,
    context: ToolContext,
    arguments: Value,
    ticket: Ticket,
}

/// What is kept of a call while it runs, to answer it afterwards.
struct Ticket {
    call_id: String,
    name: String,
    arguments: Option<(usize, String)>,
    generated_id: bool,
    structured: bool,
}

impl Ticket {
    fn outcome(self, outcome: Result<Value, Failure>) -> Decided {
        let (observation, detail) = match outcome {
            Ok(value) => (
                Observation::success(self.call_id, self.name, value)
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
            call_id: observation.call_id().to_owned(),
            name: observation.tool_name().to_owned(),
            observation,
            arguments: self.arguments,
            detail,
            generated_id: self.generated_id,
        }
    }
}

/// A decided call: its observation and what the audit log records of it.
struct Decided {
    call_id: String,
    name: String,
    observation: Observation,
    arguments: Option<(usize, String)>,
    detail: Option<String>,
    generated_id: bool,
}

impl Decided {
    fn refused(call_id: String, name: String, kind: ErrorKind, text: String) -> Decided {
        let observation = Observation::error(call_id.clone(), name.clone(), kind, text);
        Decided {
            call_id,
            name,
            observation,
            arguments: None,
            detail: None,
            generated_id: false,
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

/// The size and hash of the arguments as compact JSON, for the audit log.
fn argument_fingerprint(arguments: &Value) -> (usize, String) {
    let json = serde_json::to_vec(arguments).unwrap_or_default();
    (
        json.len(),
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&json)),
    )
}

/// At most `max` characters of `text`, for echoing untrusted names.
fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}
