//! The OpenAI Responses API: `input` items, `instructions`, the tools as `tools`; a
//! response's `output` items are the assistant's turn (its `function_call` items read by the
//! profile, its `message` items' `output_text` parts the answer), usage in
//! `usage.input_tokens` and `usage.output_tokens`. Tool results are `function_call_output`
//! items, one per call.

use serde::Serialize;
use serde_json::{Value, json};

use super::{Request, ToolChoice, Turn, count, shape};
use crate::error::AgentError;

pub(super) fn start(prompt: &str) -> Vec<Value> {
    vec![json!({"role": "user", "content": prompt})]
}

pub(super) fn body(request: &Request<'_>) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Body {
        model: request.model,
        input: request.conversation,
        max_output_tokens: request.max_output_tokens,
        store: false,
        instructions: request.instructions,
    })
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    input: &'a [Value],
    max_output_tokens: u32,
    /// The conversation is sent whole each turn: nothing is kept on the API's side.
    store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
}

/// `tool_choice` in the Responses API's shape: `"auto"`, `"required"`, `"none"`, or
/// `{"type": "function", "name": ...}`.
pub(super) fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Required => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Named(name) => json!({"type": "function", "name": name}),
    }
}

pub(super) fn read(response: &Value) -> Result<Turn, AgentError> {
    let output = response
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| shape("/output", "an array of output items"))?;
    let mut text = String::new();
    for (at, item) in output.iter().enumerate() {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| shape(&format!("/output/{at}/type"), "an item type"))?;
        if kind != "message" {
            continue;
        }
        let parts = item
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| shape(&format!("/output/{at}/content"), "an array of parts"))?;
        for part in parts {
            if part.get("type").and_then(Value::as_str) == Some("output_text")
                && let Some(part_text) = part.get("text").and_then(Value::as_str)
            {
                text.push_str(part_text);
            }
        }
    }
    let tokens = match (
        count(response, "/usage/input_tokens"),
        count(response, "/usage/output_tokens"),
    ) {
        (Some(input), Some(output)) => Some(input.saturating_add(output)),
        _ => count(response, "/usage/total_tokens"),
    };
    Ok(Turn {
        items: output.clone(),
        text,
        tokens,
    })
}
