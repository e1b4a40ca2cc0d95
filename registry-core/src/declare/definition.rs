//! What a model is told about a tool.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as a model sees it: its name, what it does, and the JSON Schema of its arguments.
///
/// This is the canonical, provider-neutral form: a 2020-12 JSON Schema whose root is an
/// object and whose objects with listed properties are closed (`additionalProperties: false`).
///
/// ```standalone_crate
/// use registry_core::{tool, Registry};
///
/// /// Add two numbers.
/// #[tool(public)]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// let registry = Registry::from_inventory().unwrap();
/// let definition = registry.get("add").unwrap().definition();
/// assert_eq!(definition.description, "Add two numbers.");
/// assert_eq!(definition.parameters["required"], serde_json::json!(["a", "b"]));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The name a model calls the tool by, unique in its registry.
    pub name: String,
    /// What the tool does, from the doc comment or the `description` key.
    pub description: String,
    /// A short human-readable title, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The JSON Schema of the arguments: an object schema.
    pub parameters: Value,
    /// The parameters mirrored into HTTP headers on MCP, by name, with the header each goes
    /// into (`#[header("Region")]`, [`DynamicTool::header`](crate::DynamicTool::header);
    /// SEP-2243): exported as `x-mcp-header` in the MCP `inputSchema` only.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}
