//! Step 7, **execute**: a call that passed the gate runs, its panics caught, its deadline
//! kept and its cancellation honoured, with a [`ToolContext`](context::ToolContext) through
//! which it reaches its [`CallHost`](host::CallHost) (progress, logs, questions, sampling);
//! every outcome is an [`Observation`](observation::Observation), whose result may hold
//! blocks of [`Content`](content::Content).

pub(crate) mod execution;
pub(crate) mod inline;
pub(crate) mod observation;
pub(crate) mod pool;
pub(crate) mod tool;
