//! OpenAI Chat Completions: `messages` with `role`s, the tools as `tools`, one `choices[0]`
//! whose `message` is the assistant's turn (its `tool_calls` read by the profile), usage in
//! `usage.prompt_tokens` and `usage.completion_tokens`. Tool results are `role: "tool"`
//! messages, one per call.

use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use super::{Request, ToolChoice, Turn, count, shape};
use crate::error::AgentError;

pub(super) fn headers(key: Option<&str>) -> Vec<(&'static str, String)> {
    key.map(|key| vec![("authorization", format!("Bearer {key}"))])
        .unwrap_or_default()
}

pub(super) fn start(prompt: &str) -> Vec<Value> {
    vec![json!({"role": "user", "content": prompt})]
}

pub(super) fn body(request: &Request<'_>) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Body {
        model: request.model,
        messages: Messages {
            system: request.instructions,
            conversation: request.conversation,
        },
        max_completion_tokens: request.max_output_tokens,
        max_tokens: request
            .legacy_max_tokens
            .then_some(request.max_output_tokens),
    })
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Messages<'a>,
    max_completion_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
}

/// The system message, if any, then the conversation.
struct Messages<'a> {
    system: Option<&'a str>,
    conversation: &'a [Value],
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let system = self
            .system
            .map(|text| json!({"role": "system", "content": text}));
        serializer.collect_seq(system.iter().chain(self.conversation))
    }
}

/// `tool_choice` in Chat Completions' shape: `"auto"`, `"required"`, `"none"`, or
/// `{"type": "function", "function": {"name": ...}}`.
pub(super) fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Required => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Named(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

pub(super) fn read(response: &Value) -> Result<Turn, AgentError> {
    let choices = response
        .get("choices")
        .and_then(Value::as_array)
        .ok_or_else(|| shape("/choices", "an array of choices"))?;
    let [choice] = choices.as_slice() else {
        return Err(shape("/choices", "exactly one choice"));
    };
    let message = choice
        .get("message")
        .filter(|message| message.is_object())
        .ok_or_else(|| shape("/choices/0/message", "the assistant's message"))?;
    let text = match message.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(_) => return Err(shape("/choices/0/message/content", "a string or null")),
    };
    // The message goes back as the assistant's turn; fields the API adds that it does not
    // take back (refusal, annotations, audio) are dropped. Its content is always a string,
    // `""` for a turn of tool calls only: OpenAI's reference takes a string (or null when
    // `tool_calls` is set), but llama-cpp-python's server validates `content` as a string
    // (null is HTTP 500, "Input should be a valid string") and its chat templates read it
    // (absent, they fail), so the empty string is the one form every server takes.
    let mut kept = json!({"role": "assistant", "content": text});
    if let Some(calls) = message.get("tool_calls") {
        kept["tool_calls"] = calls.clone();
    }
    let tokens = match (
        count(response, "/usage/prompt_tokens"),
        count(response, "/usage/completion_tokens"),
    ) {
        (Some(input), Some(output)) => Some(input.saturating_add(output)),
        _ => count(response, "/usage/total_tokens"),
    };
    Ok(Turn {
        items: vec![kept],
        text,
        tokens,
    })
}
