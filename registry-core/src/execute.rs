//! Step 5.3 of a call, **execute**: a call that passed the gate runs, its panics caught, its deadline
//! kept and its cancellation honoured, through the [`Tool`](tool::Tool) it was registered as
//! and with a [`ToolContext`](crate::ToolContext) through which it reaches its
//! [`CallHost`](crate::host::CallHost) (the `host` module: progress, logs, questions,
//! sampling); every outcome is an [`Observation`](observation::Observation), whose result may
//! hold blocks of [`Content`](crate::content::Content).

pub(crate) mod execution;
pub(crate) mod inline;
pub(crate) mod observation;
pub(crate) mod pool;
pub(crate) mod tool;
