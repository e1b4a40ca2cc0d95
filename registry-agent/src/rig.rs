//! A run's tools as [rig](https://docs.rs/rig-core) tools (feature `rig`, rig-core 0.44).
//!
//! [`tools`] turns a [`Run`] into rig's [`DynamicTool`]s, one per tool of its allowed set and
//! no other, each with the name, description and parameters schema the run exports (the
//! OpenAI Chat Completions lowering by default; [`tools_for`] takes another [`Profile`]). A
//! rig agent given them (rig-agent's `AgentBuilder::dynamic_tools`) calls each through
//! [`Run::call`]: the allowed set, the arguments validated against the tool's schema, the
//! gate (policies, approvals, budgets, rate limits), then the tool.
//!
//! What the model reads back is the text registry-agent's own loop sends for OpenAI Chat
//! Completions ([`Profile::render`]): a result as it is (a string) or its JSON text, a refusal
//! (invalid arguments, a denial, a spent budget) as the run's observation, a rig tool error
//! whose model output is that text. A call that needs a person's approval does not run: rig
//! cannot pause, so the model is told that it waits for a person and that its result will not
//! come in this conversation; the request stays in the run's approval store, and a person's
//! [`Run::decide`] runs it later.
//!
//! A tool the model names that is not among these (hidden from the run, or unknown) never
//! reaches them: rig-agent answers it itself, by default by failing the prompt with
//! `PromptError::UnknownToolCall`. [`refusal`] gives the run's answer to such a call instead,
//! for a hook's `on_invalid_tool_call` to send back (`InvalidToolCallAction::Skip`), as
//! docs/guide/agent.md shows.
//!
//! rig-core turns on serde_json's `preserve_order` feature, which changes every crate's JSON
//! maps in the build that enables this one (keys kept in insertion order instead of sorted):
//! exports stay the same from call to call, but not byte for byte the same as a build without
//! it; digests and fingerprints are computed over canonical JSON and do not change.
//!
//! ```standalone_crate
//! use std::sync::Arc;
//!
//! use registry_core::{tool, Registry, Subject};
//! use serde_json::json;
//!
//! /// Read the current build status of a project.
//! #[tool(scopes = "build:read", read_only)]
//! fn get_status(
//!     /// Project identifier, e.g. `web`.
//!     project: String,
//! ) -> String {
//!     format!("{project}: green")
//! }
//!
//! /// Drop a database.
//! #[tool(scopes = "db:admin", destructive)]
//! fn drop_database(name: String) -> String {
//!     format!("{name} dropped")
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::from_inventory()?;
//! let run = Arc::new(registry.open_run("run-1", &Subject::new("acme").with_scopes(["build:read"])));
//!
//! // The run's allowed set, and nothing else: `drop_database` is not there.
//! let tools = registry_agent::rig::tools(&run)?;
//! let names: Vec<&str> = tools.iter().map(|tool| tool.name().as_str()).collect();
//! assert_eq!(names, ["get_status"]);
//!
//! // A call goes through the run: validated against the schema the model is shown.
//! let ok = tools[0].execute(json!({"project": "web"})).await?;
//! assert_eq!(ok.as_text(), Some("web: green"));
//! let typo = tools[0].execute(json!({"projct": "web"})).await.unwrap_err();
//! assert!(typo.model_output().as_text().unwrap().starts_with("invalid arguments for \"get_status\""));
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use registry_core::compat::CompatibilityError;
use registry_core::{ErrorKind, Observation, Profile, Run, ToolCall};
use rig_core::message::ToolName;
use rig_core::tool::{DynamicTool, ToolErrorKind, ToolExecutionError, ToolOutput};
use serde_json::{Map, Value, json};

/// The profile whose export and result text [`tools`] uses: OpenAI Chat Completions, not
/// strict (rig's Chat Completions and Responses models send a tool's parameters as they are).
const DEFAULT_PROFILE: Profile = Profile::OpenAiChat { strict: false };

/// The ids of the calls made through these tools (rig gives a tool no call id): unique in the
/// process, so that the audit records and approval requests of two calls never share one.
static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// The run's allowed tools as rig tools, with the schemas of the run's OpenAI Chat
/// Completions export (`run.export(Profile::OpenAiChat { strict: false })`), in name order.
/// Each call goes through [`Run::call`]; see [the module](self) for what the model reads back.
///
/// Fails as [`Run::export`] does, if a visible tool cannot be expressed in that profile
/// ([`Registry::check`](registry_core::Registry::check) at startup rules it out).
///
/// ```no_run
/// use std::sync::Arc;
///
/// use registry_core::{Registry, Subject};
///
/// # fn example(registry: Registry) -> Result<(), registry_core::compat::CompatibilityError> {
/// let run = Arc::new(registry.open_run("run-1", &Subject::new("acme").with_scopes(["build:read"])));
/// let tools = registry_agent::rig::tools(&run)?;
/// // rig-agent: AgentBuilder::new(model).dynamic_tools(tools).build()
/// # let _ = tools;
/// # Ok(())
/// # }
/// ```
pub fn tools(run: &Arc<Run>) -> Result<Vec<DynamicTool>, CompatibilityError> {
    tools_for(run, DEFAULT_PROFILE)
}

/// [`tools`] with the schemas of `profile`'s export: the lowering of the provider the rig
/// agent's model speaks (`Profile::Anthropic` for rig's Anthropic models,
/// `Profile::OpenAiChat { strict: true }` for a Chat Completions model with rig's strict
/// tools, `Profile::Gemini`, `Profile::Mcp` for the canonical schema). Arguments are validated
/// against the tool's canonical schema whatever the profile (a lowering keeps its meaning).
///
/// ```no_run
/// use std::sync::Arc;
///
/// use registry_core::{Profile, Registry, Subject};
///
/// # fn example(registry: Registry) -> Result<(), registry_core::compat::CompatibilityError> {
/// let run = Arc::new(registry.open_run("run-1", &Subject::new("acme")));
/// let tools = registry_agent::rig::tools_for(&run, Profile::Anthropic)?;
/// # let _ = tools;
/// # Ok(())
/// # }
/// ```
pub fn tools_for(run: &Arc<Run>, profile: Profile) -> Result<Vec<DynamicTool>, CompatibilityError> {
    let export = run.export(profile)?;
    Ok(exported(&export)
        .filter_map(|function| rig_tool(run, function))
        .collect())
}

/// What the model reads when it calls `name`, a tool that is not among the run's rig tools
/// (hidden from the run, or unknown): the run's own answer, the same for both (a hidden
/// tool's existence does not leak), through [`Run::call`], so the attempt is audited like any
/// refused call. Nothing runs. `None` if `name` is one of the run's allowed tools: that call
/// is not the run's to refuse.
///
/// For rig-agent, whose default is to fail the prompt on such a call: a hook's
/// `on_invalid_tool_call` answers `InvalidToolCallReason::UnknownTool` with
/// `InvalidToolCallAction::Skip { reason }`, the other calls of the turn going on.
///
/// ```
/// use registry_core::{DynamicTool, Registry, Subject};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let registry = Registry::builder()
///     .tool(DynamicTool::new("drop_database", "Drop a database.").scopes(["db:admin"])
///         .handler(|_, _| Ok::<_, String>(json!("dropped"))))
///     .build()
///     .unwrap();
/// let run = registry.open_run("run-1", &Subject::new("acme"));
/// let hidden = registry_agent::rig::refusal(&run, "drop_database").await.unwrap();
/// let unknown = registry_agent::rig::refusal(&run, "drop_table").await.unwrap();
/// assert_eq!(hidden.replace("drop_database", "X"), unknown.replace("drop_table", "X"));
/// # }
/// ```
pub async fn refusal(run: &Run, name: &str) -> Option<String> {
    if run.allowed().names().any(|allowed| allowed == name) {
        return None;
    }
    let observation = run.call(ToolCall::new(call_id(), name, json!({}))).await;
    Some(text(&observation))
}

/// The function objects of an export: a Chat Completions tool's `function`, the flat tools of
/// the others, the `functionDeclarations` of Gemini's list.
fn exported(export: &Value) -> impl Iterator<Item = &Map<String, Value>> + '_ {
    export
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|entry| match entry.get("functionDeclarations") {
            Some(Value::Array(declarations)) => declarations.iter().collect::<Vec<_>>(),
            _ => vec![entry],
        })
        .filter_map(|entry| entry.get("function").unwrap_or(entry).as_object())
}

/// One exported tool as a rig tool whose calls go through `run`.
fn rig_tool(run: &Arc<Run>, function: &Map<String, Value>) -> Option<DynamicTool> {
    let name = function.get("name")?.as_str()?;
    let description = function
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // Gemini leaves `parameters` out for a tool without any.
    let parameters = ["parameters", "input_schema", "inputSchema"]
        .iter()
        .find_map(|key| function.get(*key))
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    // The registry's names are never empty.
    let tool_name = ToolName::new(name).ok()?;
    let name: Arc<str> = Arc::from(name);
    let run = Arc::clone(run);
    Some(DynamicTool::new(
        tool_name,
        description,
        parameters,
        move |arguments| {
            let run = Arc::clone(&run);
            let call = ToolCall::new(call_id(), &*name, arguments);
            Box::pin(async move { answer(&run.call(call).await) })
        },
    ))
}

fn call_id() -> String {
    format!("rig_{}", NEXT_CALL.fetch_add(1, Ordering::Relaxed))
}

/// An observation as rig's result: the text the model reads, as its output or as the error's
/// model output.
fn answer(observation: &Observation) -> Result<ToolOutput, ToolExecutionError> {
    let Some(kind) = observation.error_kind() else {
        return Ok(ToolOutput::text(text(observation)));
    };
    Err(match kind {
        ErrorKind::ApprovalRequired => ToolExecutionError::refused(waiting(observation)),
        ErrorKind::Denied => ToolExecutionError::refused(text(observation)),
        kind => ToolExecutionError::new(error_kind(kind), text(observation))
            .with_retryable(kind == ErrorKind::RateLimited && observation.retry_after().is_some()),
    })
}

/// The text registry-agent's loop sends for `observation` (the content of its OpenAI Chat
/// Completions result message).
fn text(observation: &Observation) -> String {
    match DEFAULT_PROFILE.render(observation)["content"].take() {
        Value::String(text) => text,
        other => other.to_string(),
    }
}

/// What the model reads for a call that waits for a person: rig cannot pause for one, so the
/// result will not come back in this conversation.
fn waiting(observation: &Observation) -> String {
    let name = observation.tool_name();
    match observation.approval() {
        Some(request) => format!(
            "the call to \"{name}\" needs a person's approval ({}); nothing was done. The request \
             ({}) waits for a person, who decides it outside this conversation: its result will \
             not come back here. Tell the user it waits for approval; do not call the tool again \
             for it",
            request.reason(),
            request.id()
        ),
        None => text(observation),
    }
}

fn error_kind(kind: ErrorKind) -> ToolErrorKind {
    match kind {
        ErrorKind::InvalidArguments => ToolErrorKind::InvalidArgs,
        // Read the same: a hidden tool's existence does not leak.
        ErrorKind::UnknownTool | ErrorKind::NotAllowed | ErrorKind::Revoked => {
            ToolErrorKind::NotFound
        }
        ErrorKind::TimedOut => ToolErrorKind::Timeout,
        ErrorKind::Cancelled => ToolErrorKind::Cancelled,
        ErrorKind::RateLimited => ToolErrorKind::RateLimited,
        ErrorKind::Denied | ErrorKind::ApprovalRequired => ToolErrorKind::PermissionDenied,
        _ => ToolErrorKind::Other,
    }
}
