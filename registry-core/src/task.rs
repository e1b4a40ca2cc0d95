//! Tasks: a call to a long-running tool, started and followed instead of awaited.
//!
//! A tool declared `#[tool(task)]` (or [`DynamicTool::task`](crate::DynamicTool::task))
//! can be started as a task with [`Run::start_task`](crate::Run::start_task): the call
//! passes the same gate as [`Run::call`](crate::Run::call) (resolution, arguments,
//! policies, a person's approval, the budget and the rate limit) **before** anything
//! starts, then its tool runs on a thread of its own and the caller gets a [`Task`] at
//! once. [`Run::task`](crate::Run::task) polls its [`TaskStatus`] and progress,
//! [`Run::cancel_task`](crate::Run::cancel_task) cancels it (the tool sees
//! [`ToolContext::cancelled`](crate::ToolContext::cancelled)),
//! [`Run::task_result`](crate::Run::task_result) and
//! [`Run::wait_task`](crate::Run::wait_task) give the observation a call would have
//! answered. A task that needs approval starts when
//! [`Run::decide`](crate::Run::decide) approves it
//! ([`Settled::Started`](crate::approval::Settled::Started)).
//!
//! A task belongs to its subject's [principal](crate::Subject::principal): another
//! principal can neither read nor cancel it. Tasks are bounded per principal and in
//! total, and an ended task's result is kept for a TTL ([`TaskLimits`]), in a
//! [`TaskStore`] (in memory by default, [`MemoryTaskStore`]). Each start, end and
//! cancellation is audited ([`TaskEvent`](crate::audit::TaskEvent)). Over MCP,
//! `registry-mcp` serves the same tasks through the tasks extension.
//!
//! What a task is and what it may become (`record.rs`), where tasks are kept
//! (`store.rs`: the [`TaskStore`] trait and its bounded in-memory
//! implementation), and the host a running task's tool reaches (`host.rs`: progress and
//! questions recorded in the store). Starting, polling and cancelling are the call path's
//! (`call/task.rs`).
//!
//! Tests: `tests/tests/integration/tasks.rs` (in process), `durable_tasks.rs` (across replicas).

pub(crate) mod host;
pub(crate) mod kept;
pub(crate) mod record;
pub(crate) mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::approval::request::StoreError;
use crate::shared::cancel::Cancellation;

/// The registry's tasks: where they are kept, their bounds, and the ones running in this
/// process.
pub(crate) struct TaskConfig {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) limits: TaskLimits,
    pub(crate) live: LiveTasks,
}

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig {
            store: Arc::new(MemoryTaskStore::new()),
            limits: TaskLimits::default(),
            live: LiveTasks::default(),
        }
    }
}

impl std::fmt::Debug for TaskConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskConfig")
            .field("limits", &self.limits)
            .field("running_here", &self.live.len())
            .finish_non_exhaustive()
    }
}

/// A task running in this process: the cancellation its tool sees, and the signal tripped
/// once it has ended and its end is stored.
#[derive(Clone, Debug)]
pub(crate) struct Live {
    pub(crate) cancellation: Cancellation,
    pub(crate) done: Cancellation,
    /// Rung when one of its questions is answered in this process.
    pub(crate) answered: Bell,
}

/// A signal that can be rung again and again: each ring wakes whoever listened before it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bell(Arc<Mutex<Cancellation>>);

impl Bell {
    fn lock(&self) -> MutexGuard<'_, Cancellation> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the next ring trips.
    pub(crate) fn listen(&self) -> Cancellation {
        self.lock().clone()
    }

    /// Wakes every listener so far.
    pub(crate) fn ring(&self) {
        let rung = std::mem::take(&mut *self.lock());
        rung.cancel();
    }
}

/// The tasks running in this process, by id: at most the limits' total, since each was
/// admitted by the store and by this map.
#[derive(Default)]
pub(crate) struct LiveTasks(Mutex<HashMap<String, Live>>);

impl LiveTasks {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Live>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds task `id`, unless `max` run here already.
    pub(crate) fn add(&self, id: &str, live: Live, max: usize) -> bool {
        let mut map = self.lock();
        if map.len() >= max {
            return false;
        }
        map.insert(id.to_owned(), live);
        true
    }

    pub(crate) fn get(&self, id: &str) -> Option<Live> {
        self.lock().get(id).cloned()
    }

    pub(crate) fn remove(&self, id: &str) -> Option<Live> {
        self.lock().remove(id)
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// A new task id: 128 random bits, unguessable, so that knowing one id tells nothing of
/// another.
pub(crate) fn new_task_id() -> Result<String, StoreError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| StoreError::new(format!("no randomness for a task id: {error}")))?;
    Ok(format!("task_{:032x}", u128::from_le_bytes(bytes)))
}

pub use host::MAX_TASK_QUESTIONS;
pub use kept::{KeptResult, KeptResultError};
pub use record::{
    MAX_ANSWER_BYTES, Task, TaskAnswers, TaskError, TaskLimits, TaskQuestion, TaskStatus,
};
pub use store::{
    Answering, Finish, Insertion, MemoryTaskStore, TaskEnd, TaskStore, TaskUpdate,
    answer_questions, questions_status, take_answer,
};
