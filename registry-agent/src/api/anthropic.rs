//! The Anthropic Messages API: `messages` alternating `user` and `assistant`, `system`, the
//! tools as `tools`, `max_tokens` required; a response's `content` blocks are the assistant's
//! turn (its `tool_use` blocks read by the profile, its `text` blocks the answer), usage in
//! `usage.input_tokens` and `usage.output_tokens`. The results of one turn's calls are
//! `tool_result` blocks, all in one `user` message. Headers: `x-api-key` and
//! `anthropic-version: 2023-06-01`.

use serde::Serialize;
use serde_json::{Value, json};

use super::{Request, ToolChoice, Turn, count, shape};
use crate::error::AgentError;

/// The API version every request names.
const VERSION: &str = "2023-06-01";

/// The beta that tools with `defer_loading` and `tool_result`s of `tool_reference` blocks
/// (a client-side tool search) belong to (Anthropic's tool search tool documentation).
const TOOL_SEARCH_BETA: &str = "advanced-tool-use-2025-11-20";

pub(super) fn headers(key: Option<&str>, deferred: bool) -> Vec<(&'static str, String)> {
    let mut headers = vec![("anthropic-version", VERSION.to_owned())];
    if deferred {
        headers.push(("anthropic-beta", TOOL_SEARCH_BETA.to_owned()));
    }
    if let Some(key) = key {
        headers.push(("x-api-key", key.to_owned()));
    }
    headers
}

pub(super) fn start(prompt: &str) -> Vec<Value> {
    vec![json!({"role": "user", "content": prompt})]
}

pub(super) fn body(request: &Request<'_>) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Body {
        model: request.model,
        messages: request.conversation,
        max_tokens: request.max_output_tokens,
        system: request.instructions,
    })
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: &'a [Value],
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
}

/// `tool_choice` in the Messages API's shape: `{"type": "auto"}`, `{"type": "any"}` (some
/// tool), `{"type": "none"}`, or `{"type": "tool", "name": ...}`.
pub(super) fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Named(name) => json!({"type": "tool", "name": name}),
    }
}

pub(super) fn read(response: &Value) -> Result<Turn, AgentError> {
    let content = response
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| shape("/content", "an array of content blocks"))?;
    let mut text = String::new();
    for (at, block) in content.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let part = block
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| shape(&format!("/content/{at}/text"), "a string"))?;
                text.push_str(part);
            }
            Some(_) => {}
            None => return Err(shape(&format!("/content/{at}/type"), "a block type")),
        }
    }
    let tokens = match (
        count(response, "/usage/input_tokens"),
        count(response, "/usage/output_tokens"),
    ) {
        (Some(input), Some(output)) => Some(input.saturating_add(output)),
        _ => None,
    };
    Ok(Turn {
        items: vec![json!({"role": "assistant", "content": content})],
        text,
        tokens,
    })
}

pub(super) fn append_results(conversation: &mut Vec<Value>, results: Vec<Value>) {
    conversation.push(json!({"role": "user", "content": results}));
}
