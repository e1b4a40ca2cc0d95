//! The model APIs the loop speaks, each in a file of its own: what a request holds, where it
//! goes, which headers it needs, and how a response's answer, usage and conversation are read.

mod anthropic;
mod openai_chat;
mod openai_responses;

use std::fmt;
use std::str::FromStr;

use registry_core::Profile;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AgentError;

/// A model API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Api {
    /// OpenAI Chat Completions (`POST {base}/chat/completions`), and every server that speaks it.
    OpenAiChat,
    /// The OpenAI Responses API (`POST {base}/responses`).
    OpenAiResponses,
    /// The Anthropic Messages API (`POST {base}/messages`).
    Anthropic,
}

impl Api {
    /// Every API.
    pub const ALL: &'static [Api] = &[Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic];

    /// Its name on the command line: `openai-chat`, `openai-responses`, `anthropic`.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAiChat => "openai-chat",
            Api::OpenAiResponses => "openai-responses",
            Api::Anthropic => "anthropic",
        }
    }

    /// The registry profile its tools are exported in and its calls read with.
    pub fn profile(self) -> Profile {
        match self {
            Api::OpenAiChat => Profile::OpenAiChat { strict: false },
            Api::OpenAiResponses => Profile::OpenAiResponses { strict: false },
            Api::Anthropic => Profile::Anthropic,
        }
    }

    /// Where requests go, after the base URL.
    pub(crate) fn path(self) -> &'static str {
        match self {
            Api::OpenAiChat => "/chat/completions",
            Api::OpenAiResponses => "/responses",
            Api::Anthropic => "/messages",
        }
    }

    /// The headers of a request with `key`; `deferred` when its tools are a deferred
    /// session's.
    pub(crate) fn headers(self, key: Option<&str>, deferred: bool) -> Vec<(&'static str, String)> {
        match self {
            Api::OpenAiChat | Api::OpenAiResponses => openai_chat::headers(key),
            Api::Anthropic => anthropic::headers(key, deferred),
        }
    }

    /// Whether a deferred session's loaded tools show in its export (appended to the tools
    /// of the next request), rather than in the conversation (an OpenAI Responses
    /// `tool_search_output`, an Anthropic `tool_result` of `tool_reference` blocks): a loop
    /// resumed in another process loads them again.
    pub(crate) fn loads_in_export(self) -> bool {
        match self {
            Api::OpenAiChat => true,
            Api::OpenAiResponses | Api::Anthropic => false,
        }
    }

    /// The conversation's first items: the user's prompt.
    pub(crate) fn start(self, prompt: &str) -> Vec<Value> {
        match self {
            Api::OpenAiChat => openai_chat::start(prompt),
            Api::OpenAiResponses => openai_responses::start(prompt),
            Api::Anthropic => anthropic::start(prompt),
        }
    }

    /// A request's body, serialized: the API's fields written straight from the conversation
    /// (nothing cloned), then the tools' JSON text, serialized once per loop.
    pub(crate) fn body(self, request: &Request<'_>) -> Result<Vec<u8>, AgentError> {
        let body = match self {
            Api::OpenAiChat => openai_chat::body(request),
            Api::OpenAiResponses => openai_responses::body(request),
            Api::Anthropic => anthropic::body(request),
        };
        let mut body = body.map_err(|error| AgentError::Config(error.to_string()))?;
        if let Some(tools) = request.tools {
            // The object's closing brace gives way to the tools and its own.
            body.pop();
            body.extend_from_slice(b",\"tools\":");
            body.extend_from_slice(tools.as_bytes());
            if let Some(choice) = request.tool_choice {
                let choice = match self {
                    Api::OpenAiChat => openai_chat::tool_choice(choice),
                    Api::OpenAiResponses => openai_responses::tool_choice(choice),
                    Api::Anthropic => anthropic::tool_choice(choice),
                };
                body.extend_from_slice(b",\"tool_choice\":");
                body.extend_from_slice(choice.to_string().as_bytes());
            }
            body.push(b'}');
        }
        Ok(body)
    }

    /// What a response adds to the conversation (the assistant's turn), its answer text and
    /// its usage; an error naming what was wrong if it is not the API's shape.
    pub(crate) fn read(self, response: &Value) -> Result<Turn, AgentError> {
        if let Some(error) = response.get("error") {
            return Err(AgentError::Api(format!(
                "the API answered with an error: {}",
                crate::bounded(&error.to_string())
            )));
        }
        match self {
            Api::OpenAiChat => openai_chat::read(response),
            Api::OpenAiResponses => openai_responses::read(response),
            Api::Anthropic => anthropic::read(response),
        }
    }

    /// A result message refusing the call `call_id` with `text`, for what the run did not
    /// answer itself (an approval that could not be applied).
    pub(crate) fn refusal(self, call_id: &str, text: &str) -> Value {
        match self {
            Api::OpenAiChat => {
                serde_json::json!({"role": "tool", "tool_call_id": call_id, "content": text})
            }
            Api::OpenAiResponses => {
                serde_json::json!({"type": "function_call_output", "call_id": call_id, "output": text})
            }
            Api::Anthropic => serde_json::json!({
                "type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": true,
            }),
        }
    }

    /// Appends the rendered results of one turn's calls (the profile's result messages, in
    /// the model's order) to the conversation.
    pub(crate) fn append_results(self, conversation: &mut Vec<Value>, results: Vec<Value>) {
        match self {
            Api::OpenAiChat | Api::OpenAiResponses => conversation.extend(results),
            Api::Anthropic => anthropic::append_results(conversation, results),
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Api {
    type Err = String;

    fn from_str(text: &str) -> Result<Api, String> {
        Api::ALL
            .iter()
            .copied()
            .find(|api| api.name() == text)
            .ok_or_else(|| {
                format!("unknown API {text:?}: openai-chat, openai-responses or anthropic")
            })
    }
}

/// Whether, and which, tool the model must call: each API's `tool_choice`, in its own shape
/// (OpenAI Chat Completions: `"auto"`, `"required"`, `"none"`, `{"type": "function",
/// "function": {"name"}}`; OpenAI Responses: the same words, `{"type": "function", "name"}`;
/// Anthropic: `{"type": "auto"}`, `{"type": "any"}`, `{"type": "none"}`, `{"type": "tool",
/// "name"}`). Servers that enforce it (llama.cpp's, with a grammar) make a weak model call a
/// tool it would otherwise answer around.
///
/// Set it with [`Agent::tool_choice`](crate::Agent::tool_choice) (every request) or
/// [`Agent::first_turn_tool_choice`](crate::Agent::first_turn_tool_choice) (the loop's first
/// request only). A [`Named`](ToolChoice::Named) tool must be one the run may call (and, for a
/// run sent in the deferred form, one loaded in its first request): otherwise the loop is
/// refused before any request, and the error does not say whether such a tool exists.
///
/// ```
/// use registry_agent::ToolChoice;
///
/// assert_eq!("required".parse::<ToolChoice>(), Ok(ToolChoice::Required));
/// assert_eq!(
///     "get_status".parse::<ToolChoice>(),
///     Ok(ToolChoice::Named("get_status".into()))
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the APIs' default when tools are sent).
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must not call a tool.
    None,
    /// The model must call this tool (its name as the run exports it).
    Named(String),
}

impl ToolChoice {
    /// Its command-line form: `auto`, `required`, `none`, or the tool's name.
    pub fn as_str(&self) -> &str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::None => "none",
            ToolChoice::Named(name) => name,
        }
    }
}

impl fmt::Display for ToolChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ToolChoice {
    type Err = String;

    /// `auto`, `required`, `none`, or any other non-empty text as a tool's name.
    fn from_str(text: &str) -> Result<ToolChoice, String> {
        Ok(match text {
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            "none" => ToolChoice::None,
            "" => return Err("an empty tool choice: auto, required, none or a tool's name".into()),
            name => ToolChoice::Named(name.to_owned()),
        })
    }
}

/// What one request to the model is made of.
pub(crate) struct Request<'a> {
    pub(crate) model: &'a str,
    pub(crate) instructions: Option<&'a str>,
    pub(crate) conversation: &'a [Value],
    /// The tools' JSON array, as text; `None` when the run has none.
    pub(crate) tools: Option<&'a str>,
    /// What the model is told about calling them (sent only with tools).
    pub(crate) tool_choice: Option<&'a ToolChoice>,
    pub(crate) max_output_tokens: u32,
    /// Chat Completions: `max_tokens` too ([`ModelConfig::legacy_max_tokens`]).
    ///
    /// [`ModelConfig::legacy_max_tokens`]: crate::ModelConfig::legacy_max_tokens
    pub(crate) legacy_max_tokens: bool,
}

/// What one response holds.
#[derive(Debug)]
pub(crate) struct Turn {
    /// The items the response adds to the conversation, as the API wants them sent back.
    pub(crate) items: Vec<Value>,
    /// The answer's text (empty when the model only called tools).
    pub(crate) text: String,
    /// Tokens used, input and output together, when the API says.
    pub(crate) tokens: Option<u64>,
}

/// A non-negative integer at `pointer`, if there is one.
fn count(response: &Value, pointer: &str) -> Option<u64> {
    response.pointer(pointer).and_then(Value::as_u64)
}

/// `Err` naming `what` was expected at `pointer`.
fn shape(pointer: &str, what: &str) -> AgentError {
    AgentError::Malformed(format!("expected {what} at {pointer}"))
}
