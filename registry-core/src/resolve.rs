//! Step 5, **resolve**: a model's call is untrusted input. A [`ToolCall`](call::ToolCall) is
//! parsed strictly under the registry's limits, and its arguments validated against the schema
//! the model was shown, each problem worded for the model.

pub(crate) mod arguments;
pub(crate) mod call;
pub(crate) mod guard;
pub(crate) mod json_text;
pub(crate) mod tool_error;
pub(crate) mod validate;
