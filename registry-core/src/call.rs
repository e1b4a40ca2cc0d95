//! A call from the model: untrusted input, named by the model's call id.

use serde_json::Value;

use crate::json_text;
use crate::tool_error::ArgumentProblem;

/// One tool call as the model made it: its id, the tool's name and the arguments.
///
/// Everything in it is untrusted: the name may be unknown or hidden, the arguments anything.
///
/// ```
/// use registry_core::ToolCall;
/// use serde_json::json;
///
/// let call = ToolCall::new("call_1", "get_status", json!({"project": "web"}));
/// assert_eq!(call.name(), "get_status");
///
/// // Arguments that arrive as JSON text (OpenAI sends them so) are parsed strictly:
/// // a malformed text or a repeated key is an invalid-arguments observation at call time.
/// let call = ToolCall::from_json_text("call_2", "get_status", r#"{"project": "web", "project": "api"}"#);
/// assert!(call.arguments().is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    id: String,
    name: String,
    arguments: Result<Value, ArgumentProblem>,
    generated_id: bool,
}

impl ToolCall {
    /// A call with arguments already parsed.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: Ok(arguments),
            generated_id: false,
        }
    }

    /// A call whose arguments are JSON text, parsed here: strictly (a repeated key is an
    /// error, as is anything after the value) and with a depth limit. A text that does not
    /// parse makes a call that resolves to an invalid-arguments observation saying where.
    pub fn from_json_text(id: impl Into<String>, name: impl Into<String>, arguments: &str) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json_text::parse(arguments),
            generated_id: false,
        }
    }

    /// Marks the id as made up by this library (Gemini calls may come without one): the
    /// rendered result then does not echo it to the provider.
    pub fn with_generated_id(mut self) -> Self {
        self.generated_id = true;
        self
    }

    /// Whether the id was made up by this library rather than sent by the model.
    pub fn has_generated_id(&self) -> bool {
        self.generated_id
    }

    /// The id the model gave the call.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool name, exactly as the model wrote it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The arguments, unless their text could not be parsed.
    pub fn arguments(&self) -> Option<&Value> {
        self.arguments.as_ref().ok()
    }

    pub(crate) fn into_parts(self) -> (CallHeader, Result<Value, ArgumentProblem>) {
        let header = CallHeader {
            id: self.id,
            name: self.name,
            generated_id: self.generated_id,
        };
        (header, self.arguments)
    }
}

/// What identifies a call, kept to answer it.
#[derive(Debug, Clone)]
pub(crate) struct CallHeader {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) generated_id: bool,
}
