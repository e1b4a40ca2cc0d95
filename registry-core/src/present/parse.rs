//! Calls in: reading the tool calls of a provider's response.
//!
//! See [`Profile::parse_calls`] for what each profile reads.

use serde_json::{Map, Value};

use crate::present::profile::Profile;
use crate::resolve::call::ToolCall;

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

impl Profile {
    /// The tool calls in `response`, a provider response (or message) as JSON, in order.
    ///
    /// Each profile reads its provider's whole response, or the part of it an application is
    /// likely to hold:
    ///
    /// | profile | accepted | calls |
    /// | --- | --- | --- |
    /// | OpenAI Chat | a chat completion (`choices`), an assistant message, or its `tool_calls` array | `tool_calls[]` of type `function`: `id`, `function.name`, `function.arguments` (JSON text) |
    /// | OpenAI Responses | a response (`output`), a list of items, or one item | items of type `function_call`: `call_id`, `name`, `arguments` (JSON text) |
    /// | Anthropic | a message (`content`), its content blocks, or one block | blocks of type `tool_use`: `id`, `name`, `input` |
    /// | Gemini | a `GenerateContentResponse` (`candidates`), a `Content` (`parts`), its parts, or one part | `functionCall` parts: `name`, `args`, `id` (generated when absent) |
    /// | MCP | a `tools/call` request (or a batch of requests), or its `params` | `params.name`, `params.arguments`, the JSON-RPC `id` |
    ///
    /// Everything else in the response (text, reasoning, other kinds of calls) is skipped; a
    /// response without tool calls gives an empty list. Arguments that arrive as JSON text are
    /// parsed when the call is resolved: malformed or truncated text makes an
    /// `InvalidArguments` observation saying where the JSON breaks, for that call alone (an
    /// empty text is an empty object).
    ///
    /// A [`ParseError`] says what was expected and where (a JSON pointer), never a panic, for
    /// a response of a shape the provider does not send, for an error response
    /// (`{"error": ...}`), and for a response with several choices or candidates: they are
    /// alternatives, so pass the one the conversation continues with.
    ///
    /// ```
    /// use registry_core::Profile;
    /// use serde_json::json;
    ///
    /// let response = json!({
    ///     "content": [
    ///         {"type": "text", "text": "Let me check."},
    ///         {"type": "tool_use", "id": "toolu_01", "name": "get_status", "input": {"project": "web"}}
    ///     ]
    /// });
    /// let calls = Profile::Anthropic.parse_calls(&response).unwrap();
    /// assert_eq!(calls[0].id(), "toolu_01");
    /// assert_eq!(calls[0].arguments(), Some(&json!({"project": "web"})));
    /// ```
    pub fn parse_calls(&self, response: &Value) -> Result<Vec<ToolCall>, ParseError> {
        let reader = Reader {
            profile: *self,
            calls: Vec::new(),
        };
        reader.read(response)
    }
}

/// The state of one reading: the profile and the calls found so far.
struct Reader {
    profile: Profile,
    calls: Vec<ToolCall>,
}

type Parsed<T> = Result<T, ParseError>;

impl Reader {
    fn read(mut self, response: &Value) -> Parsed<Vec<ToolCall>> {
        self.provider_error(response)?;
        match self.profile {
            Profile::OpenAiChat { .. } => self.chat(response)?,
            Profile::OpenAiResponses { .. } => self.responses(response)?,
            Profile::Anthropic => self.anthropic(response)?,
            Profile::Gemini => self.gemini(response)?,
            Profile::Mcp => self.mcp(response)?,
        }
        Ok(self.calls)
    }

    fn error(&self, pointer: &str, message: impl Into<String>) -> ParseError {
        ParseError {
            profile: self.profile,
            pointer: pointer.to_owned(),
            message: message.into(),
        }
    }

    /// An error response (`{"error": {...}}`, as every one of these APIs sends): no calls to
    /// read, and the application should hear why.
    fn provider_error(&self, response: &Value) -> Parsed<()> {
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

    // OpenAI Chat Completions.

    fn chat(&mut self, response: &Value) -> Parsed<()> {
        match response {
            Value::Object(object) if object.contains_key("choices") => {
                let choices = self.array(object, "", "choices", "an array of choices")?;
                self.single_choice(choices.len(), "/choices", "choice")?;
                for (index, choice) in choices.iter().enumerate() {
                    let pointer = format!("/choices/{index}");
                    let choice = self.object(choice, &pointer, "a choice object")?;
                    let message = self.member(choice, &pointer, "message")?;
                    let pointer = format!("{pointer}/message");
                    let message = self.object(message, &pointer, "an assistant message")?;
                    self.chat_message(message, &pointer)?;
                }
                Ok(())
            }
            Value::Object(object) if is_message(object) => self.chat_message(object, ""),
            Value::Array(tool_calls) => self.chat_tool_calls(tool_calls, ""),
            other => Err(self.error(
                "",
                format!(
                    "expected a chat completion (with `choices`), an assistant message (with `role` and `tool_calls`) or a `tool_calls` array, found {}",
                    describe(other)
                ),
            )),
        }
    }

    fn chat_message(&mut self, message: &Map<String, Value>, pointer: &str) -> Parsed<()> {
        match message.get("tool_calls") {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Array(tool_calls)) => {
                self.chat_tool_calls(tool_calls, &format!("{pointer}/tool_calls"))
            }
            Some(other) => Err(self.error(
                &format!("{pointer}/tool_calls"),
                format!("expected an array of tool calls, found {}", describe(other)),
            )),
        }
    }

    fn chat_tool_calls(&mut self, tool_calls: &[Value], pointer: &str) -> Parsed<()> {
        for (index, call) in tool_calls.iter().enumerate() {
            let pointer = format!("{pointer}/{index}");
            let call = self.object(call, &pointer, "a tool call object")?;
            // Only function calls are the registry's; a custom tool's call is the
            // application's own.
            if !self.kind_is(call, &pointer, "function", true)? {
                continue;
            }
            let id = self.string(call, &pointer, "id", "the call id")?;
            let function = self.member(call, &pointer, "function")?;
            let function_pointer = format!("{pointer}/function");
            let function = self.object(function, &function_pointer, "a function call object")?;
            let name = self.string(function, &function_pointer, "name", "the tool name")?;
            let arguments = self.string(
                function,
                &function_pointer,
                "arguments",
                "the arguments as JSON text",
            )?;
            self.calls.push(call_from_text(id, name, arguments));
        }
        Ok(())
    }

    fn single_choice(&self, count: usize, pointer: &str, what: &str) -> Parsed<()> {
        if count > 1 {
            return Err(self.error(
                pointer,
                format!(
                    "found {count} {what}s, which are alternatives, not calls to make together; pass the {what} to continue with (e.g. `{pointer}/0`)"
                ),
            ));
        }
        Ok(())
    }

    // OpenAI Responses.

    fn responses(&mut self, response: &Value) -> Parsed<()> {
        match response {
            Value::Object(object) if object.contains_key("output") => {
                let items = self.array(object, "", "output", "an array of output items")?;
                self.responses_items(items, "/output")
            }
            Value::Object(object) if object.contains_key("type") => {
                self.responses_item(object, "")
            }
            Value::Array(items) => self.responses_items(items, ""),
            other => Err(self.error(
                "",
                format!(
                    "expected a response (with `output`), a list of items or one item (with `type`), found {}",
                    describe(other)
                ),
            )),
        }
    }

    fn responses_items(&mut self, items: &[Value], pointer: &str) -> Parsed<()> {
        for (index, item) in items.iter().enumerate() {
            let pointer = format!("{pointer}/{index}");
            let item = self.object(item, &pointer, "an item object")?;
            self.responses_item(item, &pointer)?;
        }
        Ok(())
    }

    fn responses_item(&mut self, item: &Map<String, Value>, pointer: &str) -> Parsed<()> {
        // Input messages may leave out their type; every other item has one.
        if !item.contains_key("type") && item.contains_key("role") {
            return Ok(());
        }
        if !self.kind_is(item, pointer, "function_call", false)? {
            return Ok(());
        }
        let id = self.string(item, pointer, "call_id", "the call id")?;
        let name = self.string(item, pointer, "name", "the tool name")?;
        let arguments = self.string(item, pointer, "arguments", "the arguments as JSON text")?;
        self.calls.push(call_from_text(id, name, arguments));
        Ok(())
    }

    // Anthropic Messages.

    fn anthropic(&mut self, response: &Value) -> Parsed<()> {
        match response {
            Value::Object(object) if object.contains_key("content") => match &object["content"] {
                // A message written as a plain string has no tool calls.
                Value::String(_) => Ok(()),
                Value::Array(blocks) => self.anthropic_blocks(blocks, "/content"),
                other => Err(self.error(
                    "/content",
                    format!(
                        "expected an array of content blocks, found {}",
                        describe(other)
                    ),
                )),
            },
            Value::Object(object) if object.contains_key("type") => {
                self.anthropic_block(object, "")
            }
            Value::Array(blocks) => self.anthropic_blocks(blocks, ""),
            other => Err(self.error(
                "",
                format!(
                    "expected a message (with `content`), a list of content blocks or one block (with `type`), found {}",
                    describe(other)
                ),
            )),
        }
    }

    fn anthropic_blocks(&mut self, blocks: &[Value], pointer: &str) -> Parsed<()> {
        for (index, block) in blocks.iter().enumerate() {
            let pointer = format!("{pointer}/{index}");
            let block = self.object(block, &pointer, "a content block object")?;
            self.anthropic_block(block, &pointer)?;
        }
        Ok(())
    }

    fn anthropic_block(&mut self, block: &Map<String, Value>, pointer: &str) -> Parsed<()> {
        // `server_tool_use` blocks are run by Anthropic; only `tool_use` is the client's.
        if !self.kind_is(block, pointer, "tool_use", false)? {
            return Ok(());
        }
        let id = self.string(block, pointer, "id", "the call id")?;
        let name = self.string(block, pointer, "name", "the tool name")?;
        let input = self.member(block, pointer, "input")?;
        let input = self.object(input, &format!("{pointer}/input"), "the arguments object")?;
        self.calls
            .push(ToolCall::new(id, name, Value::Object(input.clone())));
        Ok(())
    }

    // Gemini.

    fn gemini(&mut self, response: &Value) -> Parsed<()> {
        match response {
            Value::Object(object)
                if object.contains_key("candidates") || object.contains_key("promptFeedback") =>
            {
                // A prompt that was blocked has no candidates.
                let Some(candidates) = object.get("candidates") else {
                    return Ok(());
                };
                let candidates = self.as_array(candidates, "/candidates", "an array of candidates")?;
                self.single_choice(candidates.len(), "/candidates", "candidate")?;
                for (index, candidate) in candidates.iter().enumerate() {
                    let pointer = format!("/candidates/{index}");
                    let candidate = self.object(candidate, &pointer, "a candidate object")?;
                    // A candidate stopped for safety or recitation may have no content.
                    match candidate.get("content") {
                        None | Some(Value::Null) => {}
                        Some(content) => {
                            let pointer = format!("{pointer}/content");
                            let content = self.object(content, &pointer, "a content object")?;
                            self.gemini_content(content, &pointer)?;
                        }
                    }
                }
                Ok(())
            }
            Value::Object(object) if object.contains_key("parts") => {
                self.gemini_content(object, "")
            }
            Value::Object(object) if object.contains_key("functionCall") => {
                self.gemini_part(object, "")
            }
            Value::Array(parts) => self.gemini_parts(parts, ""),
            other => Err(self.error(
                "",
                format!(
                    "expected a response (with `candidates`), a content (with `parts`), a list of parts or one part, found {}",
                    describe(other)
                ),
            )),
        }
    }

    fn gemini_content(&mut self, content: &Map<String, Value>, pointer: &str) -> Parsed<()> {
        match content.get("parts") {
            None | Some(Value::Null) => Ok(()),
            Some(parts) => {
                let pointer = format!("{pointer}/parts");
                let parts = self.as_array(parts, &pointer, "an array of parts")?;
                self.gemini_parts(parts, &pointer)
            }
        }
    }

    fn gemini_parts(&mut self, parts: &[Value], pointer: &str) -> Parsed<()> {
        for (index, part) in parts.iter().enumerate() {
            let pointer = format!("{pointer}/{index}");
            let part = self.object(part, &pointer, "a part object")?;
            self.gemini_part(part, &pointer)?;
        }
        Ok(())
    }

    fn gemini_part(&mut self, part: &Map<String, Value>, pointer: &str) -> Parsed<()> {
        let Some(call) = part.get("functionCall") else {
            return Ok(());
        };
        let pointer = format!("{pointer}/functionCall");
        let call = self.object(call, &pointer, "a function call object")?;
        let name = self.string(call, &pointer, "name", "the tool name")?;
        // A function without parameters may be called without `args`.
        let arguments = match call.get("args") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(args) => Value::Object(
                self.object(args, &format!("{pointer}/args"), "the arguments object")?
                    .clone(),
            ),
        };
        // The position of the call among the response's calls: stable for the same response.
        let position = self.calls.len();
        let call = match call.get("id") {
            None | Some(Value::Null) => {
                ToolCall::new(format!("call_{position}"), name, arguments).with_generated_id()
            }
            Some(_) => {
                let id = self.string(call, &pointer, "id", "the call id")?;
                ToolCall::new(id, name, arguments)
            }
        };
        self.calls.push(call);
        Ok(())
    }

    // MCP.

    fn mcp(&mut self, message: &Value) -> Parsed<()> {
        match message {
            Value::Object(object) if object.contains_key("method") => {
                self.mcp_request(object, "")
            }
            Value::Object(object) if object.contains_key("name") => {
                let position = self.calls.len();
                let call = self.mcp_params(object, "", format!("call_{position}"))?;
                self.calls.push(call.with_generated_id());
                Ok(())
            }
            Value::Array(batch) => {
                for (index, request) in batch.iter().enumerate() {
                    let pointer = format!("/{index}");
                    let request = self.object(request, &pointer, "a JSON-RPC request")?;
                    self.mcp_request(request, &pointer)?;
                }
                Ok(())
            }
            other => Err(self.error(
                "",
                format!(
                    "expected a `tools/call` request (with `method`) or its `params` (with `name`), found {}",
                    describe(other)
                ),
            )),
        }
    }

    fn mcp_request(&mut self, request: &Map<String, Value>, pointer: &str) -> Parsed<()> {
        let method = self.string(request, pointer, "method", "the JSON-RPC method")?;
        // Other requests and notifications carry no tool call.
        if method != "tools/call" {
            return Ok(());
        }
        let id = match request.get("id") {
            Some(Value::String(id)) => id.clone(),
            Some(Value::Number(id)) => id.to_string(),
            other => {
                return Err(self.error(
                    &format!("{pointer}/id"),
                    format!(
                        "expected the request id (a string or a number), found {}",
                        describe_member(other)
                    ),
                ));
            }
        };
        let params = self.member(request, pointer, "params")?;
        let pointer = format!("{pointer}/params");
        let params = self.object(params, &pointer, "the `tools/call` params object")?;
        let call = self.mcp_params(params, &pointer, id)?;
        self.calls.push(call);
        Ok(())
    }

    fn mcp_params(
        &self,
        params: &Map<String, Value>,
        pointer: &str,
        id: String,
    ) -> Parsed<ToolCall> {
        let name = self.string(params, pointer, "name", "the tool name")?;
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(arguments) => Value::Object(
                self.object(
                    arguments,
                    &format!("{pointer}/arguments"),
                    "the arguments object",
                )?
                .clone(),
            ),
        };
        Ok(ToolCall::new(id, name, arguments))
    }

    // Shapes.

    /// Whether the `type` of `object` is `kind`. A missing `type` is an error, unless it is
    /// `optional`, when it counts as `kind`.
    fn kind_is(
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

    fn member<'a>(
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

    fn object<'a>(
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

    fn as_array<'a>(&self, value: &'a Value, pointer: &str, what: &str) -> Parsed<&'a [Value]> {
        match value {
            Value::Array(items) => Ok(items),
            other => Err(self.error(
                pointer,
                format!("expected {what}, found {}", describe(other)),
            )),
        }
    }

    fn array<'a>(
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

    fn string<'a>(
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
fn call_from_text(id: &str, name: &str, arguments: &str) -> ToolCall {
    if arguments.trim().is_empty() {
        ToolCall::new(id, name, Value::Object(Map::new()))
    } else {
        ToolCall::from_json_text(id, name, arguments)
    }
}

/// Whether `object` looks like a chat message.
fn is_message(object: &Map<String, Value>) -> bool {
    object.contains_key("role") || object.contains_key("tool_calls")
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn describe_member(value: Option<&Value>) -> &'static str {
    value.map_or("nothing", describe)
}
