//! The gate: what every call passes after its arguments are validated and before it runs.
//!
//! A per-call policy ([`CallPolicy`]), human approval bound to exactly what was approved
//! ([`ApprovalRequest`]), quotas ([`RateLimit`], [`QuotaStore`]) and readiness.

mod rate_limit;

pub use rate_limit::{RateLimit, RateLimitError};
