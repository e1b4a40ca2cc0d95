//! What the model is told after a call: a result, or an error it can act on.

use std::fmt;
use std::time::Duration;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::approval::request::ApprovalRequest;
use crate::content::{self, Content, Payload};
use crate::shared::tool_error::ArgumentProblem;

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
    /// [`Run::decide`](crate::Run::decide) or [`Run::decide`](crate::Run::decide).
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
    /// [`Cancellation`]: crate::call::Cancellation
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

    /// The kind [`as_str`](Self::as_str) writes as `word`.
    pub(crate) fn from_word(word: &str) -> Option<ErrorKind> {
        [
            ErrorKind::UnknownTool,
            ErrorKind::NotAllowed,
            ErrorKind::Revoked,
            ErrorKind::InvalidArguments,
            ErrorKind::ExecutionFailed,
            ErrorKind::Panicked,
            ErrorKind::TimedOut,
            ErrorKind::Denied,
            ErrorKind::ApprovalRequired,
            ErrorKind::RateLimited,
            ErrorKind::Unavailable,
            ErrorKind::Cancelled,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == word)
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
/// On success its [`json`](Self::json) is the tool's JSON result; on error, the text the model
/// reads. It serializes as `{"call_id", "tool_name", "is_error", "error_kind"?, "content"}`
/// (`content` holding the JSON: the key stays for what was stored with it).
///
/// A tool that returns [`Content`] (a `Content`, a `Vec<Content>` or a
/// [`ToolOutput`](crate::content::ToolOutput)) gives an observation whose [`blocks`](Self::blocks) are
/// those blocks, which every profile renders ([`Profile::render`](crate::Profile::render));
/// its [`json`](Self::json) is then the structured value of a `ToolOutput`, or else a
/// JSON view of the blocks without their bytes (see [`json`](Self::json)).
#[derive(Debug, Clone, PartialEq)]
#[must_use = "an observation is the model's answer to its call: render it for the model (`Profile::render`) or check it"]
pub struct Observation {
    pub(crate) call_id: String,
    pub(crate) tool_name: String,
    pub(crate) json: Value,
    /// The blocks of a result made of content; empty otherwise.
    pub(crate) blocks: Vec<Content>,
    /// Whether `json` is the tool's value, rather than a view of its blocks.
    pub(crate) has_value: bool,
    /// Boxed: an error is the rarer answer, and a smaller observation is moved without a
    /// call of `memcpy` (120 bytes, against 168 with the error inline: issue 22's profile).
    pub(crate) error: Option<Box<ErrorDetail>>,
    pub(crate) generated_id: bool,
    pub(crate) structured: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ErrorDetail {
    pub(crate) kind: ErrorKind,
    pub(crate) problems: Vec<ArgumentProblem>,
    pub(crate) approval: Option<Box<ApprovalRequest>>,
    pub(crate) retry_after: Option<Duration>,
}

impl Observation {
    pub(crate) fn success(call_id: String, tool_name: String, payload: Payload) -> Self {
        let (value, blocks) = payload.into_parts();
        let has_value = value.is_some();
        let json = value.unwrap_or_else(|| content::view(&blocks));
        Observation {
            call_id,
            tool_name,
            json,
            blocks,
            has_value,
            error: None,
            generated_id: false,
            structured: false,
        }
    }

    pub(crate) fn error(call_id: String, tool_name: String, kind: ErrorKind, text: String) -> Self {
        Observation {
            call_id,
            tool_name,
            json: Value::String(text),
            blocks: Vec::new(),
            has_value: false,
            error: Some(Box::new(ErrorDetail {
                kind,
                problems: Vec::new(),
                approval: None,
                retry_after: None,
            })),
            generated_id: false,
            structured: false,
        }
    }

    pub(crate) fn with_generated_id(mut self, generated: bool) -> Self {
        self.generated_id = generated;
        self
    }

    pub(crate) fn with_structured(mut self, structured: bool) -> Self {
        self.structured =
            structured && self.error.is_none() && self.has_value && self.json.is_object();
        self
    }

    /// Whether the call id was made up by this library (see [`ToolCall::with_generated_id`]).
    ///
    /// [`ToolCall::with_generated_id`]: crate::ToolCall::with_generated_id
    pub fn has_generated_id(&self) -> bool {
        self.generated_id
    }

    /// Whether the JSON is a structured result that conforms to the tool's output schema
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
    ///
    /// For a result of [`Content`], it is the structured value of a
    /// [`ToolOutput`](crate::content::ToolOutput); for content alone, the text of a lone text block, or
    /// else an array with an object per block in MCP's names, its bytes left out (their
    /// number instead): `{"type": "text", "text"}`, `{"type": "image" | "audio", "mimeType",
    /// "size"}`, `{"type": "resource_link", "uri", "name", ...}`, `{"type": "resource",
    /// "resource": {"uri", "mimeType", "text" | "size"}}`. The blocks themselves, bytes
    /// included, are [`blocks`](Self::blocks).
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, content::Content, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// /// Take a screenshot of the dashboard.
    /// #[tool(public)]
    /// fn screenshot() -> Content {
    ///     Content::image(vec![0; 2048], "image/png")
    /// }
    ///
    /// let registry = Registry::from_inventory().unwrap();
    /// let run = registry.open_run("run-1", &Subject::new("acme"));
    /// let observation = run.call_blocking(ToolCall::new("c1", "screenshot", json!({})));
    /// assert_eq!(observation.json(), &json!([{"type": "image", "mimeType": "image/png", "size": 2048}]));
    /// assert_eq!(observation.value(), None);
    /// assert_eq!(observation.blocks(), [Content::image(vec![0; 2048], "image/png")]);
    /// ```
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// The blocks of a result made of [`Content`], in order, bytes included; empty for a
    /// plain JSON result and for an error.
    pub fn blocks(&self) -> &[Content] {
        &self.blocks
    }

    /// The tool's JSON value: the whole result of a tool returning a `Serialize` type, or the
    /// structured value of a [`ToolOutput`](crate::content::ToolOutput); `None` for content alone and
    /// for an error.
    ///
    /// A renderer shows, after the [`blocks`](Self::blocks), this value's JSON text; with no
    /// blocks, the value alone, as for any plain result.
    pub fn value(&self) -> Option<&Value> {
        (self.error.is_none() && self.has_value).then_some(&self.json)
    }

    /// For a result the renderers show as content (blocks, or content alone even without
    /// any): its blocks and its structured value. `None` for an error, and for a plain value
    /// (a `ToolOutput` without blocks included), which renders as it always has.
    pub(crate) fn rich(&self) -> Option<(&[Content], Option<&Value>)> {
        if self.error.is_some() || (self.blocks.is_empty() && self.has_value) {
            return None;
        }
        Some((&self.blocks, self.value()))
    }

    /// For a result of content (see [`rich`](Self::rich)): each block as `block` makes it,
    /// then the structured value's JSON text (a string as it is) as `text` makes it.
    pub(crate) fn rich_items<T>(
        &self,
        block: impl Fn(&Content) -> T,
        text: impl FnOnce(String) -> T,
    ) -> Option<Vec<T>> {
        let (blocks, value) = self.rich()?;
        let mut items: Vec<T> = blocks.iter().map(block).collect();
        if let Some(value) = value {
            items.push(text(match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            }));
        }
        Some(items)
    }

    /// The error text for the model; `None` on success.
    pub fn error_text(&self) -> Option<&str> {
        self.error.as_ref().and(self.json.as_str())
    }

    /// For invalid arguments, each problem found (pointer and message).
    pub fn problems(&self) -> &[ArgumentProblem] {
        self.error.as_ref().map_or(&[], |error| &error.problems)
    }

    /// The JSON ([`json`](Self::json)), taken out.
    pub fn into_json(self) -> Value {
        self.json
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
        state.serialize_field("content", &self.json)?;
        state.end()
    }
}

#[cfg(test)]
mod tests {
    use super::Observation;

    /// An observation is returned by value through a call's steps: at 120 bytes it is moved
    /// without a call of `memcpy` (at 168, with its error inline, that was two calls of
    /// `memcpy` a call more: issue 22's profile, under callgrind). Its error is boxed; what
    /// grows it should be too.
    #[test]
    fn an_observation_stays_small_enough_to_move_inline() {
        assert!(
            size_of::<Observation>() <= 120,
            "Observation is {} bytes",
            size_of::<Observation>()
        );
    }
}
