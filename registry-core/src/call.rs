//! Step 5, **the call path**: a call the model made, from its name to its answer.
//!
//! [`Run::call`](crate::Run::call) (and [`Run::call_blocking`](crate::Run::call_blocking))
//! takes every call through the same steps, each refusal an
//! [`Observation`](crate::Observation) the model can act on:
//!
//! - 5.1 **resolve** (the `resolve/` step): the name against the run's frozen allowed set,
//!   revocation and readiness, the arguments within their [`ArgumentLimits`] and valid
//!   against the schema the model was shown ([`ArgumentProblem`]s otherwise);
//! - 5.2 **gate** (the [`gate`](crate::gate) step): the call policies, a person's approval
//!   ([`approval`](crate::approval): the call waits until
//!   [`Run::decide`](crate::Run::decide) settles it), the run's budget and the tool's rate
//!   limit;
//! - 5.3 **execute** (the `execute/` step): the tool runs, within its deadline, cancelled by a
//!   [`Cancellation`], its panics caught, its `Err` a [`ToolError`];
//! - 5.4 **check** (`call/check.rs`): the result checks
//!   ([`ResultCheck`](crate::gate::ResultCheck)) pass, redact or withhold what it gave back.
//!
//! The orchestration lives here, one file a step: `call/resolve.rs` (step 5.1),
//! `call/admit.rs` (step 5.2, the gate, one sequence for every path: calls,
//! blocking calls, tasks and approved calls) with `call/policies.rs` and `call/quota.rs`, `call/run.rs` (a call from
//! the model to its answer), `call/approvals.rs` (a person's verdict), `call/task.rs`,
//! `call/check.rs`, and `call/answer.rs` (the answer and every text the model reads); the
//! steps it reaches stay in their folders. The numbering is that of
//! `ARCHITECTURE.md`.

mod admit;
mod answer;
mod approvals;
mod check;
mod policies;
mod quota;
mod resolve;
mod run;
mod task;

pub use crate::host::context::CallOptions;
pub use crate::resolve::guard::{ArgumentLimits, MAX_ARGUMENT_DEPTH};
pub use crate::shared::caller::Caller;
pub use crate::shared::cancel::{Cancellation, Cancelled};
pub use crate::shared::tool_error::{ArgumentProblem, ToolError};
#[allow(deprecated)]
pub use crate::shared::trace::TraceParseError;
pub use crate::shared::trace::{ParseTraceError, TraceContext};
