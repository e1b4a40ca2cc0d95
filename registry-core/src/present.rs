//! Step 4, **present**: each provider's exact shapes. A [`Profile`](crate::Profile) exports
//! definitions (lowering each schema to what the provider accepts, checked by
//! [`compat`](crate::compat)), parses the calls in a provider's response and renders results
//! back. A deferred session ([`deferred`](crate::deferred)) exports a few tools and a search
//! tool, and loads what the model finds.

pub(crate) mod digest;
pub(crate) mod export;
pub(crate) mod lower;
pub(crate) mod parse;
pub(crate) mod provider;
pub(crate) mod reader;
pub(crate) mod render;
pub(crate) mod rules;
