//! SEP-2243 parameter headers (protocol 2026-07-28): a tool parameter declared to be mirrored
//! into a header (`#[header("Region")]`, `DynamicTool::header`) must arrive twice, as the
//! argument and as the HTTP header `Mcp-Param-Region`, with the same value; otherwise the call
//! is refused with JSON-RPC error -32020 (HeaderMismatch), which rmcp answers with HTTP 400.
//!
//! rmcp validates `Mcp-Method` and `Mcp-Name` on every request, and `Mcp-Param-*` headers
//! against a schema only when the handler hands it one without knowing who asks
//! (`ServerHandler::get_tool`). The registry's tools depend on who asks, so the parameter
//! headers are checked here instead, against the tool the caller's run may call: a hidden
//! tool's headers are never consulted, and its existence does not leak through a -32020.
//!
//! The rules are rmcp's (`transport/common/mcp_headers.rs`): only for HTTP requests that
//! declare protocol 2026-07-28 or later in `MCP-Protocol-Version`; a header given once; its
//! value the argument's (a string as it is, a number or boolean as JSON writes it), or that
//! value as `=?base64?...?=`; no header for an absent or `null` argument, and no argument
//! without its header.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use registry_core::ToolDefinition;
use rmcp::ErrorData;
use rmcp::model::{ErrorCode, JsonObject, ProtocolVersion};
use serde_json::Value;

/// The prefix of a parameter's header.
const PREFIX: &str = "Mcp-Param-";

/// Checks the parameter headers of a `tools/call` of `definition` with `arguments`, made
/// with the HTTP request `parts` (none over stdio: nothing to check).
pub(crate) fn check(
    definition: &ToolDefinition,
    arguments: Option<&JsonObject>,
    parts: Option<&axum::http::request::Parts>,
) -> Result<(), ErrorData> {
    let Some(parts) = parts else {
        return Ok(());
    };
    if definition.headers.is_empty() {
        return Ok(());
    }
    let headers = &parts.headers;
    let declares_2026 = headers
        .get("mcp-protocol-version")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28.as_str());
    if !declares_2026 {
        return Ok(());
    }
    for (param, header) in &definition.headers {
        let full = format!("{PREFIX}{header}");
        let mut values = headers.get_all(full.as_str()).iter();
        let given = match (values.next(), values.next()) {
            (None, _) => None,
            (Some(_), Some(_)) => return Err(mismatch(format!("the {full} header is given more than once; give it once"))),
            (Some(value), None) => Some(value.to_str().map_err(|_| {
                mismatch(format!("the {full} header holds characters a header value cannot; send the value as =?base64?...?="))
            })?),
        };
        let argument = arguments
            .and_then(|arguments| arguments.get(param))
            .filter(|value| !value.is_null())
            .map(|value| match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            });
        match (given, argument) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(mismatch(format!(
                    "the {full} header is given but the argument {param:?} is not; leave the header out or give the argument"
                )));
            }
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "the {full} header is missing; the tool {:?} mirrors the argument {param:?} into it (x-mcp-header): send it with the argument's value",
                    definition.name
                )));
            }
            (Some(raw), Some(expected)) => {
                let decoded = decode(raw).ok_or_else(|| {
                    mismatch(format!(
                        "the {full} header is not valid base64 inside =?base64?...?="
                    ))
                })?;
                if decoded != expected {
                    return Err(mismatch(format!(
                        "the {full} header does not match the argument {param:?}; send the same value in both"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// A header value as sent: plain, or `=?base64?...?=`.
fn decode(raw: &str) -> Option<String> {
    match raw
        .strip_prefix("=?base64?")
        .and_then(|inner| inner.strip_suffix("?="))
    {
        Some(inner) => String::from_utf8(STANDARD.decode(inner).ok()?).ok(),
        None => Some(raw.to_owned()),
    }
}

fn mismatch(message: String) -> ErrorData {
    ErrorData::new(ErrorCode::HEADER_MISMATCH, message, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_values_are_decoded() {
        assert_eq!(decode("=?base64?w6l0w6k=?=").as_deref(), Some("été"));
        assert_eq!(decode("plain").as_deref(), Some("plain"));
        assert_eq!(decode("=?base64?***?="), None);
    }
}
