//! Calls in: reading the tool calls of a provider's response.
//!
//! See [`Profile::parse_calls`] for what each profile reads.

use serde_json::Value;

use crate::present::reader::{ParseError, Parsed, Reader};
use crate::resolve::call::ToolCall;
use crate::shared::profile::Profile;

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
    /// response without tool calls gives an empty list. (A deferred session's
    /// [`parse_calls`](crate::deferred::DeferredSession::parse_calls) reads searches too, such as OpenAI
    /// Responses' `tool_search_call` items.) Arguments that arrive as JSON text are
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
    #[must_use = "the calls read do nothing until a run resolves them"]
    pub fn parse_calls(&self, response: &Value) -> Result<Vec<ToolCall>, ParseError> {
        let mut reader = Reader {
            profile: *self,
            calls: Vec::new(),
            searches: None,
        };
        reader.read(response)?;
        Ok(reader.calls)
    }
}

impl Reader {
    /// Reads `response` into `self.calls` (and `self.searches`, if it reads them).
    pub(crate) fn read(&mut self, response: &Value) -> Parsed<()> {
        self.provider_error(response)?;
        match self.profile {
            Profile::OpenAiChat { .. } => self.chat(response),
            Profile::OpenAiResponses { .. } => self.responses(response),
            Profile::Anthropic => self.anthropic(response),
            Profile::Gemini => self.gemini(response),
            Profile::Mcp => self.mcp(response),
        }
    }
}
