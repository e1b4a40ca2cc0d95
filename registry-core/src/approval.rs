//! Approvals: a call that waits for a person, and what the person decides.
//!
//! A tool declared `needs_approval`, or a call a [`CallPolicy`](crate::gate::CallPolicy)
//! answers [`RequireApproval`](crate::gate::Decision::RequireApproval), is not run: its
//! observation is [`ErrorKind::ApprovalRequired`](crate::ErrorKind::ApprovalRequired) and
//! carries an [`ApprovalRequest`] ([`Observation::approval`](crate::Observation::approval)).
//! A person decides it with a [`Verdict`], given to [`Run::decide`](crate::Run::decide) or
//! [`Run::decide_blocking`](crate::Run::decide_blocking), whose observation is the model's
//! answer to its call. Requests wait in an [`ApprovalStore`] (in memory by default,
//! [`MemoryApprovalStore`]; `registry-postgres` shares one between replicas).

pub(crate) mod request;
pub(crate) mod store;

pub use request::{ApprovalError, ApprovalRequest, ApprovalState, ArgumentDigest, Verdict};
pub use store::{ApprovalStore, ApprovalWatchers, Insertion, MemoryApprovalStore, Transition};
