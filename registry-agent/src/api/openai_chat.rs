//! OpenAI Chat Completions: `messages` with `role`s, the tools as `tools`, one `choices[0]`
//! whose `message` is the assistant's turn (its `tool_calls` read by the profile), usage in
//! `usage.prompt_tokens` and `usage.completion_tokens`. Tool results are `role: "tool"`
//! messages, one per call.

use serde_json::{Value, json};

use super::{Request, Turn, count, shape};
use crate::error::AgentError;

pub(super) fn headers(key: Option<&str>) -> Vec<(&'static str, String)> {
    key.map(|key| vec![("authorization", format!("Bearer {key}"))])
        .unwrap_or_default()
}

pub(super) fn start(prompt: &str) -> Vec<Value> {
    vec![json!({"role": "user", "content": prompt})]
}

pub(super) fn body(request: &Request<'_>) -> Value {
    let mut messages = Vec::with_capacity(request.conversation.len() + 1);
    if let Some(instructions) = request.instructions {
        messages.push(json!({"role": "system", "content": instructions}));
    }
    messages.extend(request.conversation.iter().cloned());
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "max_completion_tokens": request.max_output_tokens,
    });
    if request
        .tools
        .as_array()
        .is_some_and(|tools| !tools.is_empty())
    {
        body["tools"] = request.tools.clone();
    }
    body
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
    // take back (refusal, annotations, audio) are dropped.
    let mut kept = json!({"role": "assistant", "content": message.get("content").cloned().unwrap_or(Value::Null)});
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
