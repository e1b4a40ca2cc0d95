//! One file per provider: its tool object, tool list and allowlist, how its responses carry
//! calls, and its result message. `export.rs`, `parse.rs` and `render.rs` dispatch on
//! [`Profile`](crate::Profile) with exhaustive matches, so a new provider is a new file here,
//! a variant of `Profile`, and the arms the compiler then asks for. (Its schema rules are in
//! `rules.rs`, `lower/` and `compat/`, still by rule rather than by provider.)

pub(crate) mod anthropic;
pub(crate) mod gemini;
pub(crate) mod mcp;
pub(crate) mod openai;

use serde_json::Value;

use crate::declare::definition::ToolDefinition;
use crate::declare::policy::Hints;
use crate::execute::observation::Observation;

/// One tool as it is exported: its definition with the profile's lowered parameters.
pub(crate) struct Exported<'a> {
    pub(crate) definition: &'a ToolDefinition,
    pub(crate) parameters: &'a Value,
    pub(crate) hints: Hints,
    pub(crate) output_schema: Option<&'a Value>,
}

/// The observation as text: a string as it is, any other result as its JSON text.
pub(crate) fn text(observation: &Observation) -> String {
    match observation.content() {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
