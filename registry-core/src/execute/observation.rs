//! What the model is told after a call: a result, or an error it can act on.

use std::fmt;
use std::time::Duration;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::gate::ApprovalRequest;
use crate::resolve::tool_error::ArgumentProblem;

/// Why a call produced no result. Every kind reaches the model as an error observation with
/// a text it can act on; the kind itself is for the application and the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// No tool of that name exists.
    UnknownTool,
    /// The tool exists but this run may not use it. The model is told exactly what it is
    /// told for an unknown tool, so a hidden tool's existence does not leak.
    NotAllowed,
    /// The tool was revoked (or replaced, for runs that must not keep the old version).
    Revoked,
    /// The arguments are not a JSON object matching the tool's schema.
    InvalidArguments,
    /// The tool ran and returned an error.
    ExecutionFailed,
    /// The tool panicked. The model gets a generic text; the panic message goes to the audit log.
    Panicked,
    /// The tool did not finish within its deadline.
    TimedOut,
    /// A call policy refused the call, or a person denied its approval; the text carries the
    /// reason. Nothing ran.
    Denied,
    /// The call waits for a person's approval: nothing ran yet.
    /// [`Observation::approval`] gives the request to decide with
    /// [`Run::approve`](crate::Run::approve) or [`Run::deny`](crate::Run::deny).
    ApprovalRequired,
    /// A rate limit or the run's call budget is exhausted; [`Observation::retry_after`] says
    /// when a call may succeed again (`None`: not in this run). Nothing ran.
    RateLimited,
    /// The tool is registered but not ready (its readiness check fails), or whether it may
    /// run cannot be known now (a store did not answer). Nothing ran.
    Unavailable,
    /// The caller cancelled the call before it finished (a [`Cancellation`] tripped: over
    /// MCP, the client's `notifications/cancelled`). An async tool's future was dropped; a
    /// synchronous tool was told through
    /// [`ToolContext::is_cancelled`](crate::ToolContext::is_cancelled) and whatever it
    /// returned was discarded. Audited as `cancelled`; over MCP no result is sent.
    ///
    /// [`Cancellation`]: crate::Cancellation
    Cancelled,
}

impl ErrorKind {
    /// The kind as a snake_case word, as it is serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::UnknownTool => "unknown_tool",
            ErrorKind::NotAllowed => "not_allowed",
            ErrorKind::Revoked => "revoked",
            ErrorKind::InvalidArguments => "invalid_arguments",
            ErrorKind::ExecutionFailed => "execution_failed",
            ErrorKind::Panicked => "panicked",
            ErrorKind::TimedOut => "timed_out",
            ErrorKind::Denied => "denied",
            ErrorKind::ApprovalRequired => "approval_required",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

/// Serialized as [`ErrorKind::as_str`] gives it: the names are spelled in one place.
impl Serialize for ErrorKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The answer to one call, carrying the call id and the tool name as the model sent them.
///
/// On success its content is the tool's JSON result; on error, the text the model reads.
/// It serializes as `{"call_id", "tool_name", "is_error", "error_kind"?, "content"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    call_id: String,
    tool_name: String,
    content: Value,
    error: Option<ErrorDetail>,
    generated_id: bool,
    structured: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct ErrorDetail {
    kind: ErrorKind,
    problems: Vec<ArgumentProblem>,
    approval: Option<Box<ApprovalRequest>>,
    retry_after: Option<Duration>,
}

impl Observation {
    pub(crate) fn success(call_id: String, tool_name: String, content: Value) -> Self {
        Observation {
            call_id,
            tool_name,
            content,
            error: None,
            generated_id: false,
            structured: false,
        }
    }

    pub(crate) fn error(call_id: String, tool_name: String, kind: ErrorKind, text: String) -> Self {
        Observation {
            call_id,
            tool_name,
            content: Value::String(text),
            error: Some(ErrorDetail {
                kind,
                problems: Vec::new(),
                approval: None,
                retry_after: None,
            }),
            generated_id: false,
            structured: false,
        }
    }

    pub(crate) fn with_generated_id(mut self, generated: bool) -> Self {
        self.generated_id = generated;
        self
    }

    pub(crate) fn with_structured(mut self, structured: bool) -> Self {
        self.structured = structured && self.error.is_none() && self.content.is_object();
        self
    }

    /// Whether the call id was made up by this library (see [`ToolCall::with_generated_id`]).
    ///
    /// [`ToolCall::with_generated_id`]: crate::ToolCall::with_generated_id
    pub fn has_generated_id(&self) -> bool {
        self.generated_id
    }

    /// Whether the content is a structured result that conforms to the tool's output schema
    /// (MCP's `structuredContent`).
    pub fn is_structured(&self) -> bool {
        self.structured
    }

    pub(crate) fn with_problems(mut self, problems: Vec<ArgumentProblem>) -> Self {
        if let Some(error) = &mut self.error {
            error.problems = problems;
        }
        self
    }

    pub(crate) fn with_approval(mut self, request: ApprovalRequest) -> Self {
        if let Some(error) = &mut self.error {
            error.approval = Some(Box::new(request));
        }
        self
    }

    pub(crate) fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        if let Some(error) = &mut self.error {
            error.retry_after = retry_after;
        }
        self
    }

    /// For [`ErrorKind::ApprovalRequired`], the request a person decides: what exactly would
    /// run, and why it needs approval.
    pub fn approval(&self) -> Option<&ApprovalRequest> {
        self.error.as_ref()?.approval.as_deref()
    }

    /// For [`ErrorKind::RateLimited`], how long until a call may succeed again; `None` when
    /// it will not in this run (its call budget is spent).
    pub fn retry_after(&self) -> Option<Duration> {
        self.error.as_ref()?.retry_after
    }

    /// The id of the call this answers.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The tool name as the model wrote it.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }

    /// Why the call failed; `None` on success.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        self.error.as_ref().map(|error| error.kind)
    }

    /// The tool's result, or the error text for the model (a JSON string).
    pub fn content(&self) -> &Value {
        &self.content
    }

    /// The error text for the model; `None` on success.
    pub fn error_text(&self) -> Option<&str> {
        self.error.as_ref().and(self.content.as_str())
    }

    /// For invalid arguments, each problem found (pointer and message).
    pub fn problems(&self) -> &[ArgumentProblem] {
        self.error.as_ref().map_or(&[], |error| &error.problems)
    }

    /// The content, taken out.
    pub fn into_content(self) -> Value {
        self.content
    }
}

impl Serialize for Observation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let fields = if self.error.is_some() { 5 } else { 4 };
        let mut state = serializer.serialize_struct("Observation", fields)?;
        state.serialize_field("call_id", &self.call_id)?;
        state.serialize_field("tool_name", &self.tool_name)?;
        state.serialize_field("is_error", &self.is_error())?;
        if let Some(error) = &self.error {
            state.serialize_field("error_kind", &error.kind)?;
        }
        state.serialize_field("content", &self.content)?;
        state.end()
    }
}
