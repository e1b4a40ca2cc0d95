//! What a person's verdict settled: the one answer of `Run::decide`, for a call and a task alike.

use crate::execute::observation::Observation;
use crate::task::record::Task;

/// What a person's verdict settled ([`Run::decide`](crate::Run::decide)): the model's answer
/// to its call, or, for a call that asked to start as a task
/// ([`ApprovalRequest::is_task`](crate::approval::ApprovalRequest::is_task)) and was
/// approved, the task that started.
///
/// ```
/// use registry_core::approval::Settled;
///
/// fn show(settled: Settled) -> String {
///     match settled {
///         Settled::Answered(observation) => format!("answered: {:?}", observation.error_kind()),
///         Settled::Started(task) => format!("task {} started", task.id()),
///     }
/// }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a settled request is the model's answer to its call, or the task that started"]
pub enum Settled {
    /// The call's answer: its result, or why it did not run (denied, expired, revoked,
    /// refused by the gate, or a task that could not start).
    Answered(Observation),
    /// The call asked to start as a task, was approved, and started with exactly the
    /// arguments approved; follow it with [`Run::task`](crate::Run::task) and
    /// [`Run::wait_task`](crate::Run::wait_task). (Boxed: the rarer answer, and a task is
    /// three times an observation's size.)
    Started(Box<Task>),
}

impl Settled {
    /// The call's answer, if it was answered (`None` for a task that started).
    pub fn answer(&self) -> Option<&Observation> {
        match self {
            Settled::Answered(observation) => Some(observation),
            Settled::Started(_) => None,
        }
    }

    /// [`answer`](Self::answer), taken.
    pub fn into_answer(self) -> Option<Observation> {
        match self {
            Settled::Answered(observation) => Some(observation),
            Settled::Started(_) => None,
        }
    }

    /// The task that started, if one did.
    pub fn task(&self) -> Option<&Task> {
        match self {
            Settled::Started(task) => Some(task),
            Settled::Answered(_) => None,
        }
    }
}
