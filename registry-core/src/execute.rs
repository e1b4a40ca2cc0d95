//! Step 7, **execute**: a call that passed the gate runs, its panics caught and its deadline
//! kept, with a [`ToolContext`](context::ToolContext); every outcome is an
//! [`Observation`](observation::Observation), whose result may hold blocks of
//! [`Content`](content::Content).

pub(crate) mod content;
pub(crate) mod context;
pub(crate) mod execution;
pub(crate) mod observation;
