//! Calls in: reading the tool calls of a provider's response.
//!
//! STUB: to be written.

use serde_json::Value;

use crate::call::ToolCall;
use crate::profile::Profile;

/// A response that is not of the provider's shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a {profile} response: {message}")]
pub struct ParseError {
    /// The profile whose shape was expected.
    pub profile: Profile,
    /// What was wrong, and where.
    pub message: String,
}

impl Profile {
    /// The tool calls in `response`, a provider response (or message) as JSON, in order.
    pub fn parse_calls(&self, response: &Value) -> Result<Vec<ToolCall>, ParseError> {
        let _ = response;
        Err(ParseError {
            profile: *self,
            message: "not yet supported".into(),
        })
    }
}
