//! The compatibility checker: the rules of each profile (`shared/reference/providers.md`),
//! applied to exported JSON.
//!
//! STUB: to be written. It checks what is exported, independently of how it was produced, so
//! it can run over golden files as well as over a live registry.

use serde_json::Value;

use crate::profile::{Incompatibility, Profile};

/// Every rule of `profile` that one exported tool object breaks (an element of the list
/// [`Run::export`](crate::Run::export) returns; for Gemini, one function declaration).
pub fn check_tool(profile: Profile, tool: &Value) -> Vec<Incompatibility> {
    let _ = (profile, tool);
    Vec::new()
}

/// Every rule of `profile` that a whole exported tool list breaks: each tool's, and the
/// rules about the list (how many tools, unique names).
pub fn check_tools(profile: Profile, tools: &Value) -> Vec<Incompatibility> {
    let _ = (profile, tools);
    Vec::new()
}
