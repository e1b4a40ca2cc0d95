//! The keys of `#[tool(...)]`, spelled once: the parser matches on these constants and lists
//! them in its messages, so the two cannot drift (in the manner of serde_derive's `symbol.rs`).

pub(crate) const NAME: &str = "name";
pub(crate) const DESCRIPTION: &str = "description";
pub(crate) const TITLE: &str = "title";
pub(crate) const SCOPES: &str = "scopes";
pub(crate) const TENANTS: &str = "tenants";
pub(crate) const PUBLIC: &str = "public";
pub(crate) const TIMEOUT: &str = "timeout";
pub(crate) const NEEDS_APPROVAL: &str = "needs_approval";
pub(crate) const RATE_LIMIT: &str = "rate_limit";
pub(crate) const READ_ONLY: &str = "read_only";
pub(crate) const DESTRUCTIVE: &str = "destructive";
pub(crate) const IDEMPOTENT: &str = "idempotent";
pub(crate) const OPEN_WORLD: &str = "open_world";
pub(crate) const ALLOW_DESCRIPTION: &str = "allow_description";
pub(crate) const REQUIRE_DOCS: &str = "require_docs";
pub(crate) const NAMESPACE: &str = "namespace";
pub(crate) const ALWAYS_LOADED: &str = "always_loaded";
pub(crate) const TASK: &str = "task";
pub(crate) const NON_BLOCKING: &str = "non_blocking";
pub(crate) const BLOCKING: &str = "blocking";
pub(crate) const ATTRIBUTES: &str = "attributes";
pub(crate) const CALLABLE_FROM_CODE: &str = "callable_from_code";
pub(crate) const CRATE: &str = "crate";

/// Every key, in the order the docs list them.
pub(crate) const KEYS: &[&str] = &[
    NAME,
    DESCRIPTION,
    TITLE,
    SCOPES,
    TENANTS,
    PUBLIC,
    TIMEOUT,
    NEEDS_APPROVAL,
    RATE_LIMIT,
    READ_ONLY,
    DESTRUCTIVE,
    IDEMPOTENT,
    OPEN_WORLD,
    ALLOW_DESCRIPTION,
    REQUIRE_DOCS,
    NAMESPACE,
    ALWAYS_LOADED,
    TASK,
    NON_BLOCKING,
    BLOCKING,
    ATTRIBUTES,
    CALLABLE_FROM_CODE,
    CRATE,
];
