//! The machinery of reading a provider's response: where it is, what was expected, and the
//! calls found so far. Each provider's own reading is in `provider/`.

use serde_json::{Map, Value};

use crate::resolve::call::ToolCall;
use crate::shared::caller::Caller;
use crate::shared::profile::Profile;

/// A response that is not of the provider's shape.
///
/// ```
/// use registry_core::Profile;
/// use serde_json::json;
///
/// let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": {}}}]});
/// let error = Profile::OpenAiChat { strict: false }.parse_calls(&response).unwrap_err();
/// assert_eq!(error.pointer, "/choices/0/message/tool_calls");
/// assert_eq!(
///     error.to_string(),
///     "cannot read openai-chat tool calls: at /choices/0/message/tool_calls: expected an array of tool calls, found an object",
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {profile} tool calls: {}{message}", at(pointer))]
#[non_exhaustive]
pub struct ParseError {
    /// The profile whose shape was expected.
    pub profile: Profile,
    /// Where in the response: a JSON pointer (empty for the whole response).
    pub pointer: String,
    /// What was wrong.
    pub message: String,
}

/// `at <pointer>: `, or nothing for the whole response.
fn at(pointer: &str) -> String {
    if pointer.is_empty() {
        String::new()
    } else {
        format!("at {pointer}: ")
    }
}

/// The state of one reading: the profile and the calls found so far.
pub(crate) struct Reader {
    pub(crate) profile: Profile,
    pub(crate) calls: Vec<ToolCall>,
    /// Where searches of a tool search the application runs are read (OpenAI Responses'
    /// `tool_search_call` items, for a deferred session), each with the number of calls read
    /// before it, its call id and its arguments; `None`: they are skipped.
    pub(crate) searches: Option<Vec<(usize, String, Value)>>,
}

pub(crate) type Parsed<T> = Result<T, ParseError>;

impl Reader {
    pub(crate) fn error(&self, pointer: &str, message: impl Into<String>) -> ParseError {
        ParseError {
            profile: self.profile,
            pointer: pointer.to_owned(),
            message: message.into(),
        }
    }

    /// An error response (`{"error": {...}}`, as every one of these APIs sends): no calls to
    /// read, and the application should hear why.
    pub(crate) fn provider_error(&self, response: &Value) -> Parsed<()> {
        let Some(error) = response.get("error").filter(|error| !error.is_null()) else {
            return Ok(());
        };
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        Err(self.error(
            "/error",
            format!("the provider answered with an error: {message}"),
        ))
    }

    // Shapes.

    /// Whether the `type` of `object` is `kind`. A missing `type` is an error, unless it is
    /// `optional`, when it counts as `kind`.
    pub(crate) fn kind_is(
        &self,
        object: &Map<String, Value>,
        pointer: &str,
        kind: &str,
        optional: bool,
    ) -> Parsed<bool> {
        match object.get("type") {
            None if optional => Ok(true),
            Some(Value::String(found)) => Ok(found == kind),
            other => Err(self.error(
                &format!("{pointer}/type"),
                format!(
                    "expected the type, a string, found {}",
                    describe_member(other)
                ),
            )),
        }
    }

    pub(crate) fn member<'a>(
        &self,
        object: &'a Map<String, Value>,
        pointer: &str,
        key: &str,
    ) -> Parsed<&'a Value> {
        object.get(key).ok_or_else(|| {
            self.error(
                &format!("{pointer}/{key}"),
                format!("expected `{key}`, found nothing"),
            )
        })
    }

    /// Reads each element of `list` (at `pointer`) as an object (`what`) and hands it to
    /// `each` with its own pointer; the first error stops the walk.
    pub(crate) fn each_object(
        &mut self,
        list: &[Value],
        pointer: &str,
        what: &str,
        mut each: impl FnMut(&mut Self, &Map<String, Value>, &str) -> Parsed<()>,
    ) -> Parsed<()> {
        for (index, element) in list.iter().enumerate() {
            let pointer = format!("{pointer}/{index}");
            let element = self.object(element, &pointer, what)?;
            each(self, element, &pointer)?;
        }
        Ok(())
    }

    pub(crate) fn object<'a>(
        &self,
        value: &'a Value,
        pointer: &str,
        what: &str,
    ) -> Parsed<&'a Map<String, Value>> {
        value.as_object().ok_or_else(|| {
            self.error(
                pointer,
                format!("expected {what}, found {}", describe(value)),
            )
        })
    }

    pub(crate) fn as_array<'a>(
        &self,
        value: &'a Value,
        pointer: &str,
        what: &str,
    ) -> Parsed<&'a [Value]> {
        match value {
            Value::Array(items) => Ok(items),
            other => Err(self.error(
                pointer,
                format!("expected {what}, found {}", describe(other)),
            )),
        }
    }

    pub(crate) fn array<'a>(
        &self,
        object: &'a Map<String, Value>,
        pointer: &str,
        key: &str,
        what: &str,
    ) -> Parsed<&'a [Value]> {
        let pointer = format!("{pointer}/{key}");
        match object.get(key) {
            Some(Value::Array(items)) => Ok(items),
            other => Err(self.error(
                &pointer,
                format!("expected {what}, found {}", describe_member(other)),
            )),
        }
    }

    pub(crate) fn string<'a>(
        &self,
        object: &'a Map<String, Value>,
        pointer: &str,
        key: &str,
        what: &str,
    ) -> Parsed<&'a str> {
        match object.get(key) {
            Some(Value::String(text)) => Ok(text),
            other => Err(self.error(
                &format!("{pointer}/{key}"),
                format!(
                    "expected {what}, a string, found {}",
                    describe_member(other)
                ),
            )),
        }
    }
}

/// A call whose arguments are JSON text. An empty text (sent by some models for a function
/// without parameters) is an empty object.
pub(crate) fn call_from_text(id: &str, name: &str, arguments: &str) -> ToolCall {
    if arguments.trim().is_empty() {
        ToolCall::new(id, name, Value::Object(Map::new()))
    } else {
        ToolCall::from_json_text(id, name, arguments)
    }
}

/// Who made the call `object` describes, from its `caller` member (Anthropic's `tool_use`
/// blocks, OpenAI Responses' `function_call` items): absent, `null` or `{"type": "direct"}` is
/// the model; anything else (a code execution or program caller, a type this reading does not
/// know, a malformed member) is code, so that an unknown caller is never taken for the model.
pub(crate) fn caller_of(object: &Map<String, Value>) -> Caller {
    match object.get("caller") {
        None | Some(Value::Null) => Caller::Model,
        Some(Value::Object(caller))
            if caller.get("type").and_then(Value::as_str) == Some("direct") =>
        {
            Caller::Model
        }
        Some(_) => Caller::Code,
    }
}

/// Whether `object` looks like a chat message.
pub(crate) fn is_message(object: &Map<String, Value>) -> bool {
    object.contains_key("role") || object.contains_key("tool_calls")
}

pub(crate) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn describe_member(value: Option<&Value>) -> &'static str {
    value.map_or("nothing", describe)
}
