//! Approvals: a call that waits for a person, and what the person decides.
//!
//! A tool declared `needs_approval`, or a call a [`CallPolicy`](crate::gate::CallPolicy)
//! answers [`RequireApproval`](crate::gate::Decision::RequireApproval), is not run: its
//! observation is [`ErrorKind::ApprovalRequired`](crate::ErrorKind::ApprovalRequired) and
//! carries an [`ApprovalRequest`] ([`Observation::approval`](crate::Observation::approval)).
//! A person decides it with a [`Verdict`], given to [`Run::decide`](crate::Run::decide) or
//! [`Run::decide_blocking`](crate::Run::decide_blocking), the one way for a call or a task:
//! [`Settled`] is the model's answer to its call, or the task that started. Requests wait in
//! an [`ApprovalStore`] (in memory by default, [`MemoryApprovalStore`]; `registry-postgres`
//! shares one between replicas).

pub(crate) mod request;
pub(crate) mod store;

pub use crate::gate::settled::Settled;
pub use request::{ApprovalError, ApprovalRequest, ApprovalState, ArgumentDigest, Verdict};
pub use store::{ApprovalStore, ApprovalWatchers, Insertion, MemoryApprovalStore, Transition};
