//! Tasks: a call to a long-running tool that passed the gate and runs on its own thread,
//! followed by id instead of awaited ([`Run::start_task`](crate::Run::start_task)).
//!
//! What a task is and what it may become (`record.rs`), where tasks are kept
//! (`store.rs`: the [`TaskStore`](store::TaskStore) trait and its bounded in-memory
//! implementation), and the host a running task's tool reaches (`host.rs`: progress and
//! questions recorded in the store). Starting, polling and cancelling are the call path's
//! (`call/task.rs`).

pub(crate) mod host;
pub(crate) mod kept;
pub(crate) mod record;
pub(crate) mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::shared::cancel::Cancellation;
use crate::gate::StoreError;
use record::TaskLimits;
use store::{MemoryTaskStore, TaskStore};

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
