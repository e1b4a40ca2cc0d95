//! A call from the model: untrusted input, named by the model's call id.

use serde_json::Value;

use std::sync::OnceLock;

use crate::resolve::guard::ArgumentLimits;
use crate::resolve::json_text;
use crate::shared::caller::Caller;
use crate::shared::tool_error::ArgumentProblem;

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
/// // Arguments that arrive as JSON text (OpenAI sends them so) are kept as text, and parsed
/// // strictly when the call is resolved, under the registry's `ArgumentLimits`: a malformed
/// // text or a repeated key is an invalid-arguments observation at call time.
/// let call = ToolCall::from_json_text("call_2", "get_status", r#"{"project": "web", "project": "api"}"#);
/// assert_eq!(call.arguments_text(), Some(r#"{"project": "web", "project": "api"}"#));
/// assert!(call.arguments().is_none());
/// ```
#[derive(Debug, Clone)]
pub struct ToolCall {
    id: String,
    name: String,
    arguments: Arguments,
    generated_id: bool,
    caller: Caller,
}

/// A call's arguments as they came.
#[derive(Debug, Clone)]
enum Arguments {
    /// Already a JSON value.
    Value(Value),
    /// JSON text, parsed at resolution; `parsed` caches [`ToolCall::arguments`]'s reading of
    /// it under the default limits.
    Text {
        text: String,
        parsed: OnceLock<Result<Value, ArgumentProblem>>,
    },
}

impl PartialEq for ToolCall {
    fn eq(&self, other: &Self) -> bool {
        let arguments = match (&self.arguments, &other.arguments) {
            (Arguments::Value(a), Arguments::Value(b)) => a == b,
            (Arguments::Text { text: a, .. }, Arguments::Text { text: b, .. }) => a == b,
            _ => self.arguments() == other.arguments() && self.arguments().is_some(),
        };
        arguments
            && self.id == other.id
            && self.name == other.name
            && self.generated_id == other.generated_id
            && self.caller == other.caller
    }
}

impl ToolCall {
    /// A call with arguments already parsed.
    #[must_use = "a call does nothing until a run resolves it (`Run::call`)"]
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: Arguments::Value(arguments),
            generated_id: false,
            caller: Caller::Model,
        }
    }

    /// A call whose arguments are JSON text. The text is kept as it is and parsed when the
    /// call is resolved by a run: strictly (a repeated key is an error, as is anything after
    /// the value) and under the registry's [`ArgumentLimits`](crate::call::ArgumentLimits) (depth
    /// and size). A text that does not parse resolves to an invalid-arguments observation
    /// saying where.
    #[must_use = "a call does nothing until a run resolves it (`Run::call`)"]
    pub fn from_json_text(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: Arguments::Text {
                text: arguments.into(),
                parsed: OnceLock::new(),
            },
            generated_id: false,
            caller: Caller::Model,
        }
    }

    /// Marks the id as made up by this library (Gemini calls may come without one): the
    /// rendered result then does not echo it to the provider.
    #[must_use = "returns the call; it changes nothing in place"]
    pub fn with_generated_id(mut self) -> Self {
        self.generated_id = true;
        self
    }

    /// Says who made the call: [`Caller::Code`] for a call that code the model wrote made
    /// (the provider profiles set it from the response).
    #[must_use = "returns the call; it changes nothing in place"]
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// Who made the call.
    pub fn caller(&self) -> Caller {
        self.caller
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

    /// The arguments, unless their text does not parse (strictly, under the default
    /// [`ArgumentLimits`](crate::call::ArgumentLimits); a run parses it again under its registry's).
    pub fn arguments(&self) -> Option<&Value> {
        match &self.arguments {
            Arguments::Value(value) => Some(value),
            Arguments::Text { text, parsed } => parsed
                .get_or_init(|| json_text::parse(text, &ArgumentLimits::default()))
                .as_ref()
                .ok(),
        }
    }

    /// The arguments' text, for a call made with [`from_json_text`](Self::from_json_text).
    pub fn arguments_text(&self) -> Option<&str> {
        match &self.arguments {
            Arguments::Value(_) => None,
            Arguments::Text { text, .. } => Some(text),
        }
    }

    /// The call's parts, its arguments parsed (if they are text) under `limits`.
    pub(crate) fn into_parts(
        self,
        limits: &ArgumentLimits,
    ) -> (CallHeader, Result<Value, ArgumentProblem>) {
        let (header, given) = self.into_given();
        (header, given.parse(limits))
    }

    /// The call's parts, its arguments as they came.
    pub(crate) fn into_given(self) -> (CallHeader, Given) {
        let header = CallHeader {
            id: self.id,
            name: self.name,
            generated_id: self.generated_id,
            caller: self.caller,
        };
        let given = match self.arguments {
            Arguments::Value(value) => Given::Value(value),
            Arguments::Text { text, .. } => Given::Text(text),
        };
        (header, given)
    }
}

/// A call's arguments as they came: a value, or JSON text not parsed yet.
#[derive(Debug)]
pub(crate) enum Given {
    Value(Value),
    Text(String),
}

impl Given {
    /// The arguments as a value, their text parsed strictly under `limits`.
    pub(crate) fn parse(self, limits: &ArgumentLimits) -> Result<Value, ArgumentProblem> {
        match self {
            Given::Value(value) => Ok(value),
            Given::Text(text) => json_text::parse(&text, limits),
        }
    }
}

/// What identifies a call, kept to answer it.
#[derive(Debug, Clone)]
pub(crate) struct CallHeader {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) generated_id: bool,
    pub(crate) caller: Caller,
}
