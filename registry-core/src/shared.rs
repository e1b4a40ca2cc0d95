//! The leaf: the types and helpers every step uses. It imports nothing of the crate.
//!
//! Public items here are re-exported where their concept lives (`definition::BoxFuture`,
//! `call::ToolError`, `gate::RateLimit`, `Subject` at the root...): this module is not public.

pub(crate) mod attribute;
pub(crate) mod audit_key;
pub(crate) mod caller;
pub(crate) mod cancel;
pub(crate) mod deadline;
pub(crate) mod fingerprint;
pub(crate) mod future;
pub(crate) mod hints;
pub(crate) mod logged;
pub(crate) mod profile;
pub(crate) mod rate_limit;
pub(crate) mod subject;
pub(crate) mod tool_error;
pub(crate) mod trace;
