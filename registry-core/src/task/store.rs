//! Where tasks are kept: the [`TaskStore`] trait, and [`MemoryTaskStore`], bounded, in this
//! process's memory.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use crate::approval::request::StoreError;
use crate::execute::observation::Observation;
use crate::host::call_host::Progress;
use crate::shared::cancel::Cancellation;
use crate::shared::future::BoxFuture;
use crate::task::record::{Task, TaskAnswers, TaskLimits, TaskQuestion, TaskStatus};

/// What the store did with a new task ([`TaskStore::insert`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Insertion {
    /// Kept: the task may start.
    Stored,
    /// Its principal runs [`TaskLimits::per_principal`] tasks already: refused, nothing
    /// kept.
    PrincipalFull {
        /// How many tasks of the principal run.
        running: usize,
    },
    /// [`TaskLimits::total`] tasks run already, of all principals: refused, nothing kept.
    /// Ended tasks do not count.
    Full {
        /// How many tasks run.
        running: usize,
    },
}

/// A change to a running task ([`TaskStore::update`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TaskUpdate {
    /// Its tool reported progress.
    Progress(Progress),
    /// It waits for an answer ([`TaskStatus::InputRequired`], with the question as the
    /// message), or runs again ([`TaskStatus::Working`], no message).
    Status {
        /// The new status: never a terminal one (those come through
        /// [`TaskStore::finish`]).
        status: TaskStatus,
        /// The task's message with it.
        message: Option<String>,
    },
    /// Its tool asks its caller `question` and waits: the task is
    /// [`TaskStatus::InputRequired`], with the question's message as its message.
    Ask(TaskQuestion),
    /// Its tool no longer waits on question `key` (it gave up: its deadline passed, it was
    /// cancelled): the question is removed, answered or not, and the task is
    /// [`TaskStatus::Working`] again once no question waits.
    Withdraw {
        /// The question's key.
        key: String,
    },
}

/// What the store did with answers to a task's questions ([`TaskStore::answer`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Answering {
    /// The task runs: the answers to questions that waited are kept (its tool takes them
    /// with [`TaskStore::take_answer`]), the others ignored.
    Answered(TaskAnswers),
    /// The task has ended: nothing was kept.
    Ended(TaskStatus),
    /// No task has that id (or it expired).
    Unknown,
}

/// How a task ended ([`TaskStore::finish`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskEnd {
    /// [`Completed`](TaskStatus::Completed), [`Failed`](TaskStatus::Failed) or
    /// [`Cancelled`](TaskStatus::Cancelled).
    pub status: TaskStatus,
    /// Why it failed or was cancelled, for a person.
    pub message: Option<String>,
    /// What the task's call is answered with.
    pub result: Observation,
    /// When it ended.
    pub at: SystemTime,
    /// When the task and its result are forgotten: `at` plus the task's ttl.
    pub expires_at: SystemTime,
    /// The registry's bounds: the store keeps at most
    /// [`ended_per_principal`](TaskLimits::ended_per_principal) ended tasks of the task's
    /// owner and [`ended`](TaskLimits::ended) in all, forgetting the owner's oldest ended
    /// tasks first, then the oldest of anyone's. `result` is within
    /// [`result_bytes`](TaskLimits::result_bytes) already (the registry fails the task of a
    /// larger one); a store that measures the result as it keeps it may check again.
    pub limits: TaskLimits,
}

/// What the store did with an end ([`TaskStore::finish`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Finish {
    /// The task was running and has now ended so: this caller won.
    Finished(Box<Task>),
    /// The task had ended before, so: this caller lost, and its result is discarded.
    AlreadyFinished(TaskStatus),
    /// No task has that id (or it expired).
    Unknown,
}

/// Keeps tasks, their progress and their results. The in-memory [`MemoryTaskStore`] is
/// the default; a database-backed store lets another process (a replica, a restarted
/// server) read and cancel a task.
///
/// What a store must guarantee:
///
/// - [`insert`](Self::insert) applies the bounds on running tasks
///   ([`TaskLimits::per_principal`], [`TaskLimits::total`]) atomically with keeping the task
///   (one transaction, or one lock): two tasks started at once cannot both take the last
///   place. Ended tasks do not count against them;
/// - [`finish`](Self::finish) ends a task at most once, even when called concurrently (a
///   cancel racing the tool's end): one compare-and-set from a status that is not terminal;
///   and, atomically with it, keeps the bounds on ended tasks ([`TaskEnd::limits`]): the
///   owner's oldest ended tasks are forgotten first, beyond
///   [`TaskLimits::ended_per_principal`], then the oldest of anyone's, beyond
///   [`TaskLimits::ended`];
/// - an ended task is forgotten, with its result, once its
///   [`expires_at`](Task::expires_at) has passed: [`get`](Self::get) and
///   [`result`](Self::result) answer `None`.
///
/// Every method fails closed: a store that cannot answer makes the registry refuse the task
/// (or the read), never run it unbounded.
pub trait TaskStore: Send + Sync + 'static {
    /// Keeps a new task, [`TaskStatus::Working`], if `limits` allow it: fewer than
    /// [`TaskLimits::per_principal`] running tasks of the same owner ([`Task::same_owner`]),
    /// and fewer than [`TaskLimits::total`] running tasks in all. Ended tasks do not count.
    fn insert<'a>(
        &'a self,
        task: &'a Task,
        limits: &'a TaskLimits,
    ) -> BoxFuture<'a, Result<Insertion, StoreError>>;

    /// The task with id `id`, unless it expired.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Task>, StoreError>>;

    /// Applies `update` to running task `id`, and its `updated_at`; answers whether it was
    /// running (an ended task does not change).
    fn update<'a>(
        &'a self,
        id: &'a str,
        update: TaskUpdate,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Ends running task `id` as `end` says, atomically, and keeps its result, forgetting
    /// older ended tasks to keep within [`TaskEnd::limits`] (see the trait's guarantees).
    fn finish<'a>(&'a self, id: &'a str, end: TaskEnd)
    -> BoxFuture<'a, Result<Finish, StoreError>>;

    /// The result of ended task `id`: `None` while it runs, or once it expired.
    fn result<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Observation>, StoreError>>;

    /// Keeps `answers` (key, answer as an MCP `ElicitResult`) to the questions of running
    /// task `id` that wait under those keys and are not answered yet, atomically; ignores
    /// the others. Once no question of the task waits unanswered, it is
    /// [`TaskStatus::Working`] again.
    ///
    /// The default refuses: a store that does not keep questions cannot have a task ask
    /// its caller.
    fn answer<'a>(
        &'a self,
        id: &'a str,
        answers: Vec<(String, serde_json::Value)>,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<Answering, StoreError>> {
        let _ = (id, answers, at);
        Box::pin(std::future::ready(Err(no_questions())))
    }

    /// The answer to question `key` of running task `id`, if it has one: the question is
    /// removed with it (and the task is [`TaskStatus::Working`] again once no question
    /// waits). `None` while it waits unanswered. The default refuses, as for
    /// [`answer`](Self::answer).
    fn take_answer<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, StoreError>> {
        let _ = (id, key, at);
        Box::pin(std::future::ready(Err(no_questions())))
    }

    /// Task `id`, kept by [`insert`](Self::insert), now runs in this process, and its tool
    /// sees `cancellation`. A store shared by replicas trips `cancellation` when the task is
    /// ended elsewhere (cancelled on another replica), and renews the task's lease for as
    /// long as it runs here, so that a replica that dies leaves it failed rather than
    /// running forever. Called once per task, before its tool starts. The default does
    /// nothing (one process: [`Run::cancel_task`](crate::Run::cancel_task) trips it
    /// itself).
    fn running(&self, id: &str, cancellation: Cancellation) {
        let _ = (id, cancellation);
    }

    /// Task `id` no longer runs in this process: its tool returned (and its end went to
    /// [`finish`](Self::finish)), or it could not start. The default does nothing.
    fn stopped(&self, id: &str) {
        let _ = id;
    }
}

/// What a store that does not keep questions answers.
fn no_questions() -> StoreError {
    StoreError::new(
        "this task store does not keep a task's questions (TaskStore::answer, TaskStore::take_answer); its tasks cannot ask their caller",
    )
}

/// The status and message of a running task whose questions are `questions`:
/// [`TaskStatus::InputRequired`] with the newest unanswered question's message while one
/// waits, else [`TaskStatus::Working`] and no message. For a [`TaskStore`] that keeps
/// questions apart from the task.
pub fn questions_status(questions: &[TaskQuestion]) -> (TaskStatus, Option<String>) {
    match questions.iter().rev().find(|q| !q.is_answered()) {
        Some(question) => (TaskStatus::InputRequired, Some(question.message.clone())),
        None => (TaskStatus::Working, None),
    }
}

/// Keeps `answers` (key, answer) in the `questions` that wait unanswered under their keys,
/// and says which keys were answered and which ignored: what [`TaskStore::answer`] does to
/// a task's questions.
pub fn answer_questions(
    questions: &mut [TaskQuestion],
    answers: Vec<(String, serde_json::Value)>,
) -> TaskAnswers {
    let mut done = TaskAnswers::default();
    for (key, answer) in answers {
        match questions
            .iter_mut()
            .find(|question| question.key == key && !question.is_answered())
        {
            Some(question) => {
                question.answer = Some(answer);
                done.answered.push(key);
            }
            None => done.ignored.push(key),
        }
    }
    done
}

/// Removes question `key` from `questions` if it has been answered, and gives its answer:
/// what [`TaskStore::take_answer`] does to a task's questions.
pub fn take_answer(questions: &mut Vec<TaskQuestion>, key: &str) -> Option<serde_json::Value> {
    let at = questions
        .iter()
        .position(|question| question.key == key && question.is_answered())?;
    questions.remove(at).answer
}

/// Sets `task`'s status and message from its questions.
fn settle(task: &mut Task) {
    let (status, message) = questions_status(&task.questions);
    task.status = status;
    task.message = message;
}

/// The default [`TaskStore`]: in this process's memory, lost when it exits.
///
/// **Bounded**: it keeps the registry's [`TaskLimits`] (running tasks counted when one is
/// kept, ended ones when one ends, the owner's oldest ended forgotten first), and besides
/// holds at most [`DEFAULT_MAX_TASKS`](Self::DEFAULT_MAX_TASKS) tasks, running and ended,
/// whatever the limits say ([`with_max_tasks`](Self::with_max_tasks) sets another): a new
/// task pushes out the oldest ended one, and is refused only when that many run. Ended tasks
/// are forgotten once expired, checked whenever a task is kept or read. The count and the
/// keeping of a task are one step under one lock.
///
/// ```
/// use registry_core::task::MemoryTaskStore;
///
/// let store = MemoryTaskStore::new().with_max_tasks(100);
/// assert!(store.is_empty());
/// ```
#[derive(Debug)]
pub struct MemoryTaskStore {
    tasks: Mutex<HashMap<String, Kept>>,
    max_tasks: usize,
}

#[derive(Debug)]
struct Kept {
    task: Task,
    result: Option<Observation>,
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        MemoryTaskStore {
            tasks: Mutex::default(),
            max_tasks: MemoryTaskStore::DEFAULT_MAX_TASKS,
        }
    }
}

impl MemoryTaskStore {
    /// How many tasks it holds at most by default: 10 000.
    pub const DEFAULT_MAX_TASKS: usize = 10_000;

    /// An empty store.
    pub fn new() -> Self {
        MemoryTaskStore::default()
    }

    /// Holds at most `max` tasks, running and ended, whatever the registry's limits: the
    /// oldest ended task is forgotten to make room for a new one.
    #[must_use]
    pub fn with_max_tasks(mut self, max: usize) -> Self {
        self.max_tasks = max;
        self
    }

    /// How many tasks it holds (running, and ended but not expired).
    pub fn len(&self) -> usize {
        let mut tasks = self.lock();
        prune(&mut tasks, SystemTime::now());
        tasks.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Kept>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn insert_now(&self, task: &Task, limits: &TaskLimits) -> Result<Insertion, StoreError> {
        let mut tasks = self.lock();
        prune(&mut tasks, SystemTime::now());
        if tasks.contains_key(&task.id) {
            return Err(StoreError::new(format!(
                "a task with the id {:?} exists already",
                task.id
            )));
        }
        let (mut running, mut mine) = (0, 0);
        for kept in tasks.values() {
            if !kept.task.status.is_terminal() {
                running += 1;
                if kept.task.same_owner(task) {
                    mine += 1;
                }
            }
        }
        if mine >= limits.per_principal() {
            return Ok(Insertion::PrincipalFull { running: mine });
        }
        if running >= limits.total().min(self.max_tasks) {
            return Ok(Insertion::Full { running });
        }
        // Room for the new task among everything held: ended tasks make way, oldest first.
        if tasks.len() >= self.max_tasks {
            let over = tasks.len() + 1 - self.max_tasks;
            forget_oldest_ended(&mut tasks, over, |_| true);
        }
        tasks.insert(
            task.id.clone(),
            Kept {
                task: task.clone(),
                result: None,
            },
        );
        Ok(Insertion::Stored)
    }

    fn live<'a>(tasks: &'a mut HashMap<String, Kept>, id: &str) -> Option<&'a mut Kept> {
        let now = SystemTime::now();
        tasks.get_mut(id).filter(|kept| !kept.task.is_expired(now))
    }
}

/// Forgets the `n` oldest ended tasks (by when they ended) that `which` picks.
fn forget_oldest_ended(tasks: &mut HashMap<String, Kept>, n: usize, which: impl Fn(&Task) -> bool) {
    if n == 0 {
        return;
    }
    let mut ended: Vec<(SystemTime, String)> = tasks
        .values()
        .filter(|kept| kept.task.status.is_terminal() && which(&kept.task))
        .map(|kept| (kept.task.updated_at, kept.task.id.clone()))
        .collect();
    ended.sort_unstable();
    for (_, id) in ended.into_iter().take(n) {
        tasks.remove(&id);
    }
}

/// Keeps within `limits`' bounds on ended tasks once `owner`'s task has ended: its oldest
/// ended tasks are forgotten first, beyond [`TaskLimits::ended_per_principal`], then the
/// oldest of anyone's, beyond [`TaskLimits::ended`]. The task that just ended (`owner`)
/// stays: the bounds are at least one.
fn keep_ended_bounds(tasks: &mut HashMap<String, Kept>, owner: &Task, limits: &TaskLimits) {
    let (mut ended, mut mine) = (0usize, 0usize);
    for kept in tasks.values().filter(|kept| kept.task.status.is_terminal()) {
        ended += 1;
        if kept.task.same_owner(owner) {
            mine += 1;
        }
    }
    let over = mine.saturating_sub(limits.ended_per_principal());
    let others = |task: &Task| task.id != owner.id;
    forget_oldest_ended(tasks, over, |task| others(task) && task.same_owner(owner));
    forget_oldest_ended(tasks, (ended - over).saturating_sub(limits.ended()), others);
}

/// Forgets the tasks that expired.
fn prune(tasks: &mut HashMap<String, Kept>, now: SystemTime) {
    tasks.retain(|_, kept| !kept.task.is_expired(now));
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
    Box::pin(std::future::ready(value))
}

impl TaskStore for MemoryTaskStore {
    fn insert<'a>(
        &'a self,
        task: &'a Task,
        limits: &'a TaskLimits,
    ) -> BoxFuture<'a, Result<Insertion, StoreError>> {
        ready(self.insert_now(task, limits))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Task>, StoreError>> {
        let mut tasks = self.lock();
        ready(Ok(Self::live(&mut tasks, id).map(|kept| kept.task.clone())))
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        update: TaskUpdate,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let mut tasks = self.lock();
        let Some(kept) = Self::live(&mut tasks, id).filter(|kept| !kept.task.status.is_terminal())
        else {
            return ready(Ok(false));
        };
        match update {
            TaskUpdate::Progress(progress) => kept.task.progress = Some(progress),
            TaskUpdate::Status { status, message } if !status.is_terminal() => {
                kept.task.status = status;
                kept.task.message = message;
            }
            TaskUpdate::Status { status, .. } => {
                return ready(Err(StoreError::new(format!(
                    "a task ends through TaskStore::finish, not as an update to {status}"
                ))));
            }
            TaskUpdate::Ask(question) => {
                kept.task.questions.push(question);
                settle(&mut kept.task);
            }
            TaskUpdate::Withdraw { key } => {
                kept.task.questions.retain(|question| question.key != key);
                settle(&mut kept.task);
            }
        }
        kept.task.updated_at = at;
        ready(Ok(true))
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        end: TaskEnd,
    ) -> BoxFuture<'a, Result<Finish, StoreError>> {
        if !end.status.is_terminal() {
            return ready(Err(StoreError::new(format!(
                "a task cannot end as {}",
                end.status
            ))));
        }
        let mut tasks = self.lock();
        let Some(kept) = Self::live(&mut tasks, id) else {
            return ready(Ok(Finish::Unknown));
        };
        if kept.task.status.is_terminal() {
            return ready(Ok(Finish::AlreadyFinished(kept.task.status)));
        }
        kept.task.status = end.status;
        kept.task.message = end.message;
        kept.task.updated_at = end.at;
        kept.task.expires_at = Some(end.expires_at);
        kept.result = Some(end.result);
        let ended = kept.task.clone();
        keep_ended_bounds(&mut tasks, &ended, &end.limits);
        ready(Ok(Finish::Finished(Box::new(ended))))
    }

    fn result<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Observation>, StoreError>> {
        let mut tasks = self.lock();
        ready(Ok(
            Self::live(&mut tasks, id).and_then(|kept| kept.result.clone())
        ))
    }

    fn answer<'a>(
        &'a self,
        id: &'a str,
        answers: Vec<(String, serde_json::Value)>,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<Answering, StoreError>> {
        let mut tasks = self.lock();
        let Some(kept) = Self::live(&mut tasks, id) else {
            return ready(Ok(Answering::Unknown));
        };
        if kept.task.status.is_terminal() {
            return ready(Ok(Answering::Ended(kept.task.status)));
        }
        let done = answer_questions(&mut kept.task.questions, answers);
        if !done.answered.is_empty() {
            settle(&mut kept.task);
            kept.task.updated_at = at;
        }
        ready(Ok(Answering::Answered(done)))
    }

    fn take_answer<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, StoreError>> {
        let mut tasks = self.lock();
        let Some(kept) = Self::live(&mut tasks, id).filter(|kept| !kept.task.status.is_terminal())
        else {
            return ready(Ok(None));
        };
        let answer = take_answer(&mut kept.task.questions, key);
        if answer.is_some() {
            settle(&mut kept.task);
            kept.task.updated_at = at;
        }
        ready(Ok(answer))
    }
}

/// A shared store is a store: keep a clone of the `Arc` to look at it.
impl<S: TaskStore + ?Sized> TaskStore for std::sync::Arc<S> {
    fn insert<'a>(
        &'a self,
        task: &'a Task,
        limits: &'a TaskLimits,
    ) -> BoxFuture<'a, Result<Insertion, StoreError>> {
        (**self).insert(task, limits)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Task>, StoreError>> {
        (**self).get(id)
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        update: TaskUpdate,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).update(id, update, at)
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        end: TaskEnd,
    ) -> BoxFuture<'a, Result<Finish, StoreError>> {
        (**self).finish(id, end)
    }

    fn result<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Observation>, StoreError>> {
        (**self).result(id)
    }

    fn answer<'a>(
        &'a self,
        id: &'a str,
        answers: Vec<(String, serde_json::Value)>,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<Answering, StoreError>> {
        (**self).answer(id, answers, at)
    }

    fn take_answer<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, StoreError>> {
        (**self).take_answer(id, key, at)
    }

    fn running(&self, id: &str, cancellation: Cancellation) {
        (**self).running(id, cancellation);
    }

    fn stopped(&self, id: &str) {
        (**self).stopped(id);
    }
}
