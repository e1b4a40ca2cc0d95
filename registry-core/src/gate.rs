//! Step 5.2 of a call, **the gate**: what every call passes after its arguments are validated
//! and before it runs.
//!
//! - a per-call policy ([`CallPolicy`]) that allows, denies or asks for approval, and
//!   asynchronous ones ([`AsyncCallPolicy`]: a remote engine, within a deadline);
//! - human approval ([`ApprovalRequest`](crate::approval::ApprovalRequest)), bound to exactly what was shown and approved, kept
//!   in an [`ApprovalStore`];
//! - quotas: a [`RateLimit`] per subject and tool, counted in a [`QuotaStore`], and a run's
//!   call budget;
//! - readiness ([`ReadinessCheck`]): a tool that cannot work is not shown, nor run;
//! - after a tool ran, the result checks ([`ResultCheck`], run by step 5.4): each result is
//!   passed, redacted or withheld before the model reads it.

//!
//! Approvals have a module of their own, [`approval`](crate::approval).
//!
//! Tests: `tests/tests/gate.rs` and `tests/tests/integration/gate_*.rs`, one file per feature.

pub(crate) mod async_policy;
mod policy;
mod quota;
pub(crate) mod readiness;
pub(crate) mod result_check;
pub(crate) mod settled;

pub use crate::approval::request::StoreError;
pub use crate::shared::rate_limit::{RateLimit, RateLimitError};
pub use async_policy::AsyncCallPolicy;
pub use policy::{CallPolicy, CallRequest, Decision, Determined};
pub use quota::{MemoryQuotaStore, QuotaDecision, QuotaKey, QuotaStore};
pub use readiness::{ReadinessCheck, ToolReadiness};
pub use result_check::{RedactSecrets, ResultCheck, ResultDecision, ToolResult};

pub(crate) use crate::approval::store::{ApprovalStore, MemoryApprovalStore};
pub(crate) use policy::PolicyArguments;
pub(crate) use readiness::Check;

pub(crate) use crate::approval::request::{DEFAULT_MAX_PENDING, DEFAULT_TTL};
pub(crate) use quota::Budget;
pub(crate) use readiness::{DEFAULT_TIMEOUT, ReadyState};

/// The gate's configuration, part of a registry.
pub(crate) struct GateConfig {
    /// Every call policy given, in order: all are asked, the stricter decision wins.
    pub(crate) call_policies: Vec<Box<dyn CallPolicy>>,
    /// Every asynchronous call policy given, in order, each with its deadline: asked after
    /// the synchronous ones.
    pub(crate) async_call_policies: Vec<(Box<dyn AsyncCallPolicy>, std::time::Duration)>,
    /// Every result check given, in order: each sees the result the one before left.
    pub(crate) result_checks: Vec<Box<dyn ResultCheck>>,
    pub(crate) rate_limit: Option<RateLimit>,
    pub(crate) quotas: Quotas,
    pub(crate) approvals: Box<dyn ApprovalStore>,
    pub(crate) approval_ttl: std::time::Duration,
    /// At most this many pending requests per principal (or tenant and agent).
    pub(crate) max_pending: usize,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            call_policies: Vec::new(),
            async_call_policies: Vec::new(),
            result_checks: Vec::new(),
            rate_limit: None,
            quotas: Quotas::Memory(MemoryQuotaStore::new()),
            approvals: Box::new(MemoryApprovalStore::new()),
            approval_ttl: DEFAULT_TTL,
            max_pending: DEFAULT_MAX_PENDING,
        }
    }
}

/// Where rate-limit buckets are: in memory (asked without a future), or in a store.
pub(crate) enum Quotas {
    Memory(MemoryQuotaStore),
    Custom(Box<dyn QuotaStore>),
}

impl Quotas {
    pub(crate) fn store(&self) -> &dyn QuotaStore {
        match self {
            Quotas::Memory(memory) => memory,
            Quotas::Custom(store) => &**store,
        }
    }

    pub(crate) fn memory(&self) -> Option<&MemoryQuotaStore> {
        match self {
            Quotas::Memory(memory) => Some(memory),
            Quotas::Custom(_) => None,
        }
    }
}
