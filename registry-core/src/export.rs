//! Export: the tool list in the exact JSON format each consumer takes.
//!
//! STUB: to be written.

use serde_json::{Value, json};

use crate::definition::ToolDefinition;
use crate::policy::Hints;
use crate::profile::{CompatibilityError, Profile};
use crate::tool::Tool;

/// One tool as it is exported: its definition with the profile's lowered parameters.
pub(crate) struct Exported<'a> {
    pub(crate) definition: &'a ToolDefinition,
    pub(crate) parameters: &'a Value,
    pub(crate) hints: Hints,
    pub(crate) output_schema: Option<&'a Value>,
}

/// One tool object of `profile`'s tool list.
pub(crate) fn tool_object(profile: Profile, tool: &Exported<'_>) -> Value {
    let _ = profile;
    json!({
        "name": tool.definition.name,
        "description": tool.definition.description,
        "inputSchema": tool.parameters,
    })
}

/// The whole tool list of `profile`, from its tool objects in name order.
pub(crate) fn tool_list(profile: Profile, tools: Vec<Value>) -> Value {
    let _ = profile;
    Value::Array(tools)
}

/// The per-request allowlist of `profile` naming `names`, where the profile has one.
pub(crate) fn allowlist(profile: Profile, names: &[&str]) -> Option<Value> {
    let _ = (profile, names);
    None
}

/// The export of `tools` (in name order) for `profile`.
pub(crate) fn export_run<'a>(
    profile: Profile,
    tools: impl Iterator<Item = &'a Tool>,
) -> Result<Value, CompatibilityError> {
    let (list, problems) = export_all(profile, tools);
    if problems.is_empty() {
        Ok(list)
    } else {
        Err(CompatibilityError(problems))
    }
}

/// The export of every tool of `tools` that `profile` can express, and the problems of
/// those it cannot.
pub(crate) fn export_all<'a>(
    profile: Profile,
    tools: impl Iterator<Item = &'a Tool>,
) -> (Value, Vec<crate::profile::Incompatibility>) {
    let mut objects = Vec::new();
    let mut problems = Vec::new();
    for tool in tools {
        match tool.lowered(profile) {
            Ok(parameters) => {
                let definition = tool.definition_ref();
                objects.push(tool_object(
                    profile,
                    &Exported {
                        definition,
                        parameters,
                        hints: tool.policy().hints,
                        output_schema: tool.output_schema(),
                    },
                ));
            }
            Err(found) => problems.extend(found.iter().cloned()),
        }
    }
    (tool_list(profile, objects), problems)
}
