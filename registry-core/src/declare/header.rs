//! Parameters mirrored into HTTP headers (MCP SEP-2243, protocol 2026-07-28): a parameter
//! declared with `#[header("Region")]` (or [`DynamicTool::header`]) is exported in the MCP
//! `inputSchema` with `"x-mcp-header": "Region"`, a client sends its value again as the HTTP
//! header `Mcp-Param-Region`, and a server refuses a call whose header and argument differ
//! (JSON-RPC error -32020) — so that a gateway may route on the header without reading the
//! body. Other providers are shown nothing of it.
//!
//! The rules, checked when the tool is declared: the header name is an HTTP token (letters,
//! digits and ``!#$%&'*+-.^_`|~``), at most 64 characters; no two parameters of a tool
//! mirror into the same header (case-insensitively, as HTTP compares names); the parameter is
//! a top-level property whose `type` is `"string"`, `"integer"` or `"boolean"`, the types
//! SEP-2243 allows (a header holds one value; a client such as rmcp's drops a tool that
//! annotates anything else, a nullable `["string", "null"]` included).
//!
//! [`DynamicTool::header`]: crate::DynamicTool::header

use std::collections::BTreeMap;

use serde_json::Value;

/// The longest header name accepted (without the `Mcp-Param-` prefix).
pub const MAX_HEADER_NAME: usize = 64;

/// Whether `name` may be the header a parameter mirrors into: why not, if not.
///
/// ```
/// use registry_core::definition::check_header_name;
///
/// assert!(check_header_name("Region").is_ok());
/// let error = check_header_name("my region").unwrap_err();
/// assert!(error.contains("\" \""), "{error}");
/// ```
pub fn check_header_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the header name is empty; name the header, e.g. `Region`".to_owned());
    }
    if name.len() > MAX_HEADER_NAME {
        return Err(format!(
            "the header name is {} characters long; the most is {MAX_HEADER_NAME}",
            name.len()
        ));
    }
    if let Some(bad) = name.chars().find(|c| !is_tchar(*c)) {
        return Err(format!(
            "the header name {name:?} holds {:?}, which an HTTP header name cannot; use letters, digits and any of !#$%&'*+-.^_`|~",
            bad.to_string()
        ));
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Checks `headers` (parameter → header name) against the arguments schema `parameters`.
pub(crate) fn check_headers(
    parameters: &Value,
    headers: &BTreeMap<String, String>,
) -> Result<(), String> {
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for (param, header) in headers {
        check_header_name(header).map_err(|reason| format!("parameter {param:?}: {reason}"))?;
        if let Some(first) = seen.insert(header.to_ascii_lowercase(), param) {
            return Err(format!(
                "parameters {first:?} and {param:?} both mirror into the header {header:?}; give each its own header"
            ));
        }
        let Some(schema) = parameters
            .get("properties")
            .and_then(|properties| properties.get(param))
        else {
            return Err(format!(
                "the header {header:?} mirrors the parameter {param:?}, which the arguments schema does not have as a property"
            ));
        };
        if !is_primitive(schema) {
            return Err(format!(
                "the parameter {param:?} mirrored into the header {header:?} must have `\"type\"` \"string\", \"integer\" or \"boolean\" (a header holds one value, and MCP clients mirror only those)"
            ));
        }
    }
    Ok(())
}

/// Whether `schema`'s `type` is one that SEP-2243 lets a header mirror.
fn is_primitive(schema: &Value) -> bool {
    matches!(
        schema.get("type").and_then(Value::as_str),
        Some("string" | "integer" | "boolean")
    )
}

/// `parameters` with `"x-mcp-header"` on each property `headers` names (the MCP export).
pub(crate) fn annotated(parameters: &Value, headers: &BTreeMap<String, String>) -> Value {
    let mut parameters = parameters.clone();
    for (param, header) in headers {
        if let Some(property) = parameters
            .get_mut("properties")
            .and_then(|properties| properties.get_mut(param))
            .and_then(Value::as_object_mut)
        {
            property.insert("x-mcp-header".to_owned(), Value::from(header.clone()));
        }
    }
    parameters
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "region": {"type": "string"},
            "count": {"type": "integer"},
            "maybe": {"type": ["integer", "null"]},
            "tags": {"type": "array"},
        }})
    }

    fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(p, h)| ((*p).to_owned(), (*h).to_owned()))
            .collect()
    }

    #[test]
    fn primitive_properties_with_token_names_pass() {
        let ok = headers(&[("region", "Region"), ("count", "Count")]);
        assert_eq!(check_headers(&schema(), &ok), Ok(()));
        let exported = annotated(&schema(), &ok);
        assert_eq!(exported["properties"]["region"]["x-mcp-header"], "Region");
    }

    #[test]
    fn every_mistake_is_named() {
        let cases = [
            (headers(&[("tags", "Tags")]), "must have `\"type\"`"),
            (headers(&[("maybe", "Maybe")]), "must have `\"type\"`"),
            (
                headers(&[("missing", "Missing")]),
                "does not have as a property",
            ),
            (headers(&[("region", "Re gion")]), "cannot"),
            (headers(&[("region", "")]), "empty"),
            (
                headers(&[("region", "Region"), ("count", "REGION")]),
                "both mirror",
            ),
        ];
        for (headers, expected) in cases {
            let error = check_headers(&schema(), &headers).unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
    }
}
