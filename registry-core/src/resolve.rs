//! Step 5.1 of a call, **resolve**: a model's call is untrusted input. A [`ToolCall`](call::ToolCall) is
//! parsed strictly under the registry's limits, and its arguments validated against the schema
//! the model was shown, each problem worded for the model. A declared tool whose schema has a
//! [`Shape`](shape::Shape) takes the typed fast path ([`fast`]): its argument text is checked
//! in one pass, and each parameter deserialized from its slice of the text, with the same
//! answers as the slow path.

pub(crate) mod arguments;
pub(crate) mod call;
pub(crate) mod checked;
pub(crate) mod fast;
pub(crate) mod guard;
pub(crate) mod json_text;
pub(crate) mod shape;
pub(crate) mod slice;
pub(crate) mod validate;
