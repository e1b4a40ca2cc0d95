//! What a task is: its record ([`Task`]), its status, its bounds and what can go wrong with
//! it.

use std::fmt;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::approval::request::StoreError;
use crate::host::call_host::{Elicitation, Progress};
use crate::shared::fingerprint::Fingerprint;
use crate::shared::subject::Subject;

/// Where a task is: running ([`Working`](Self::Working)), waiting for an answer to its
/// tool's question ([`InputRequired`](Self::InputRequired)), or ended
/// ([`Completed`](Self::Completed), [`Failed`](Self::Failed), [`Cancelled`](Self::Cancelled)).
/// The words are MCP's (`"working"`, `"input_required"`, ...).
///
/// ```
/// use registry_core::task::TaskStatus;
///
/// assert_eq!(TaskStatus::InputRequired.as_str(), "input_required");
/// assert!(!TaskStatus::Working.is_terminal());
/// assert!(TaskStatus::Cancelled.is_terminal());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// The tool runs.
    Working,
    /// The tool asked a question ([`ToolContext::elicit`](crate::ToolContext::elicit)) and
    /// waits for the answer.
    InputRequired,
    /// The tool returned a result: [`Run::task_result`](crate::Run::task_result) gives it.
    Completed,
    /// The tool failed (an `Err`, a panic, a missed deadline, no thread to run on): the
    /// result is the observation that says so.
    Failed,
    /// The task was cancelled ([`Run::cancel_task`](crate::Run::cancel_task)) before it
    /// ended; what its tool returned afterwards was discarded.
    Cancelled,
}

impl TaskStatus {
    /// The status as MCP writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the task has ended: completed, failed or cancelled. An ended task never
    /// changes again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task, as the [`TaskStore`](crate::task::TaskStore) keeps it: whose it is, which call
/// of which version of which tool, where it is, and until when its result is kept. What
/// [`Run::start_task`](crate::Run::start_task) and [`Run::task`](crate::Run::task) give.
///
/// It serializes and deserializes (a database keeps it as one JSON document, or its fields
/// as columns); its result, an [`Observation`](crate::Observation), is kept beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub(crate) id: String,
    pub(crate) run_id: String,
    pub(crate) tenant: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) principal: Option<String>,
    pub(crate) call_id: String,
    pub(crate) tool_name: String,
    pub(crate) tool_version: Fingerprint,
    pub(crate) status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) progress: Option<Progress>,
    pub(crate) created_at: SystemTime,
    pub(crate) updated_at: SystemTime,
    /// How long the result is kept once the task has ended.
    pub(crate) ttl: Duration,
    /// When the task is forgotten: `ttl` after it ended; `None` while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<SystemTime>,
    /// The questions its tool asks its caller and waits on, answered or not yet
    /// ([`CallOptions::with_task_questions_for_caller`](crate::call::CallOptions::with_task_questions_for_caller)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) questions: Vec<TaskQuestion>,
}

/// A question a running task's tool asks ([`ToolContext::elicit`](crate::ToolContext::elicit))
/// and waits on, for the task's caller to answer with
/// [`Run::answer_task`](crate::Run::answer_task) (over MCP: `inputRequests` on `tasks/get`,
/// answered by `tasks/update`). Only a task started with
/// [`CallOptions::with_task_questions_for_caller`](crate::call::CallOptions::with_task_questions_for_caller)
/// asks its caller; another task's questions go to the run's host.
///
/// It is kept in the task store with the task, so that any replica reading the task shows
/// it and any replica may answer it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskQuestion {
    pub(crate) key: String,
    pub(crate) message: String,
    pub(crate) schema: serde_json::Value,
    /// The answer given, until the tool takes it (as an MCP `ElicitResult`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<serde_json::Value>,
}

impl TaskQuestion {
    /// A question of the task's tool (for a [`TaskStore`](crate::task::TaskStore)'s tests).
    pub fn new(
        key: impl Into<String>,
        message: impl Into<String>,
        schema: serde_json::Value,
    ) -> Self {
        TaskQuestion {
            key: key.into(),
            message: message.into(),
            schema,
            answer: None,
        }
    }

    /// Its key, unique over the task's life: what an answer names.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The question, for a person.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The form to fill in: an MCP `requestedSchema`.
    pub fn schema(&self) -> &serde_json::Value {
        &self.schema
    }

    /// Whether it has been answered (and its tool not yet taken the answer).
    pub fn is_answered(&self) -> bool {
        self.answer.is_some()
    }
}

/// The largest answer to a task's question ([`Run::answer_task`](crate::Run::answer_task)),
/// as JSON: 64 KiB.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The answer to a [`TaskQuestion`] as it is kept: an MCP `ElicitResult`
/// (`{"action": "accept", "content": {...}}`, `"decline"`, `"cancel"`).
pub(crate) fn answer_json(answer: &Elicitation<serde_json::Value>) -> serde_json::Value {
    match answer {
        Elicitation::Accepted(content) => {
            serde_json::json!({ "action": "accept", "content": content })
        }
        Elicitation::Declined => serde_json::json!({ "action": "decline" }),
        Elicitation::Cancelled => serde_json::json!({ "action": "cancel" }),
    }
}

/// A kept answer ([`answer_json`]) read back; `None` if it is not one.
pub(crate) fn answer_of(kept: &serde_json::Value) -> Option<Elicitation<serde_json::Value>> {
    match kept.get("action")?.as_str()? {
        "accept" => Some(Elicitation::Accepted(
            kept.get("content")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({})),
        )),
        "decline" => Some(Elicitation::Declined),
        "cancel" => Some(Elicitation::Cancelled),
        _ => None,
    }
}

/// What [`Run::answer_task`](crate::Run::answer_task) (and
/// [`TaskStore::answer`](crate::task::TaskStore::answer)) did with the answers it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskAnswers {
    /// The keys answered: their questions were waiting, and their tool now goes on.
    pub answered: Vec<String>,
    /// The keys ignored: no question of the task waits under them (never asked, answered
    /// already, or withdrawn). MCP's tasks extension says to ignore them, not to fail.
    pub ignored: Vec<String>,
}

impl Task {
    /// The task's id: unguessable and unique, what [`Run::task`](crate::Run::task),
    /// [`Run::cancel_task`](crate::Run::cancel_task) and
    /// [`Run::task_result`](crate::Run::task_result) take.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Where the task is.
    pub fn status(&self) -> TaskStatus {
        self.status
    }

    /// What the task is doing or why it ended, for a person: the question its tool asks
    /// while [`InputRequired`](TaskStatus::InputRequired), the error's text once
    /// [`Failed`](TaskStatus::Failed).
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The last progress its tool reported ([`ToolContext::progress`](crate::ToolContext::progress)).
    pub fn progress(&self) -> Option<&Progress> {
        self.progress.as_ref()
    }

    /// The run that started it.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The model's id of the call that started it; its result carries the same.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The tool that runs.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The version of the tool that runs ([`Tool::version_fingerprint`](crate::Tool::version_fingerprint)).
    pub fn tool_version(&self) -> Fingerprint {
        self.tool_version
    }

    /// The tenant of the subject that started it.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The agent of the subject that started it, if it names one.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// The principal the task belongs to ([`Subject::principal`]): only runs of the same
    /// principal (and tenant) read, cancel or collect it. A subject without a principal
    /// owns its tasks by tenant and agent.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// When it was started.
    pub fn created_at(&self) -> SystemTime {
        self.created_at
    }

    /// When its status or progress last changed.
    pub fn updated_at(&self) -> SystemTime {
        self.updated_at
    }

    /// How long its result is kept once it has ended.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The questions its tool asks its caller and that wait for an answer
    /// ([`Run::answer_task`](crate::Run::answer_task)), oldest first; while there is one, the
    /// task is [`InputRequired`](TaskStatus::InputRequired).
    pub fn questions(&self) -> impl Iterator<Item = &TaskQuestion> {
        self.questions
            .iter()
            .filter(|question| !question.is_answered())
    }

    /// When it is forgotten (its result with it): [`ttl`](Self::ttl) after it ended; `None`
    /// while it runs.
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.expires_at
    }

    /// Whether it is forgotten at `now`.
    pub fn is_expired(&self, now: SystemTime) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// Whether `other` counts against the same per-principal bound
    /// ([`TaskLimits::per_principal`]): the same tenant and principal, or, for tasks without
    /// one, the same tenant and agent.
    pub fn same_owner(&self, other: &Task) -> bool {
        self.tenant == other.tenant
            && match (&self.principal, &other.principal) {
                (Some(mine), Some(theirs)) => mine == theirs,
                (None, None) => self.agent == other.agent,
                _ => false,
            }
    }

    /// Whether a run of `subject` may read, cancel and collect it: the subject's tenant and
    /// principal (or, without a principal, its tenant and agent).
    pub fn belongs_to(&self, subject: &Subject) -> bool {
        self.tenant == subject.tenant()
            && match (self.principal.as_deref(), subject.principal()) {
                (Some(mine), Some(theirs)) => mine == theirs,
                (None, None) => self.agent.as_deref() == subject.agent(),
                _ => false,
            }
    }
}

/// How many tasks may exist, how large and how long their results are kept.
///
/// Running tasks (working or waiting for input) and ended ones (kept with their results
/// until they expire) are bounded apart, so that results kept for an hour never deny a
/// place to a new task:
///
/// - **per principal**: at most this many tasks of one principal run at once; one more is
///   refused ([`ErrorKind::RateLimited`](crate::ErrorKind::RateLimited)) until one ends.
///   Default 16.
/// - **in total**: at most this many tasks run at once, of all principals; one more is
///   refused the same way until one ends. Ended tasks do not count. Default 1 000.
/// - **ended per principal**: at most this many ended tasks of one principal are kept with
///   their results; when one more of its tasks ends, its own oldest ended task is forgotten,
///   so that one principal's results never take the room of another's. Default 64.
/// - **ended in total**: at most this many ended tasks are kept in all; when one more ends,
///   the oldest ended task is forgotten. Default 1 000.
/// - **result bytes**: the largest result kept, as its [`KeptResult`](crate::task::KeptResult)
///   JSON. A larger one is not kept, nor cut: the task fails
///   ([`ErrorKind::ExecutionFailed`](crate::ErrorKind::ExecutionFailed)) with a message
///   naming the bound and how to raise it. Default 1 MiB.
/// - **ttl**: an ended task and its result are kept this long at most, then forgotten
///   (reading it gives [`TaskError::UnknownId`]). Default one hour.
///
/// The store applies the bounds on running tasks when it keeps a new task
/// ([`TaskStore::insert`](crate::task::TaskStore::insert)), and those on ended tasks when a
/// task ends ([`TaskStore::finish`](crate::task::TaskStore::finish)), so a store shared by
/// replicas bounds them across all of them.
///
/// ```
/// use std::time::Duration;
/// use registry_core::task::TaskLimits;
///
/// let limits = TaskLimits::new()
///     .with_per_principal(4)
///     .with_total(100)
///     .with_ended_per_principal(10)
///     .with_ended(200)
///     .with_result_bytes(64 * 1024)
///     .with_ttl(Duration::from_secs(600));
/// assert_eq!((limits.per_principal(), limits.total()), (4, 100));
/// assert_eq!((limits.ended_per_principal(), limits.ended()), (10, 200));
/// assert_eq!(limits.result_bytes(), 64 * 1024);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    per_principal: usize,
    total: usize,
    ended_per_principal: usize,
    ended: usize,
    result_bytes: usize,
    ttl: Duration,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            per_principal: TaskLimits::DEFAULT_PER_PRINCIPAL,
            total: TaskLimits::DEFAULT_TOTAL,
            ended_per_principal: TaskLimits::DEFAULT_ENDED_PER_PRINCIPAL,
            ended: TaskLimits::DEFAULT_ENDED,
            result_bytes: TaskLimits::DEFAULT_RESULT_BYTES,
            ttl: TaskLimits::DEFAULT_TTL,
        }
    }
}

impl TaskLimits {
    /// Running tasks per principal, by default: 16.
    pub const DEFAULT_PER_PRINCIPAL: usize = 16;
    /// Running tasks in all, by default: 1 000.
    pub const DEFAULT_TOTAL: usize = 1_000;
    /// Ended tasks kept per principal, by default: 64.
    pub const DEFAULT_ENDED_PER_PRINCIPAL: usize = 64;
    /// Ended tasks kept in all, by default: 1 000.
    pub const DEFAULT_ENDED: usize = 1_000;
    /// The largest result kept, by default: 1 MiB.
    pub const DEFAULT_RESULT_BYTES: usize = 1024 * 1024;
    /// How long an ended task's result is kept, by default: one hour.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);

    /// The defaults.
    pub fn new() -> TaskLimits {
        TaskLimits::default()
    }

    /// At most `n` running tasks per principal (`0` refuses every task).
    #[must_use]
    pub fn with_per_principal(mut self, n: usize) -> TaskLimits {
        self.per_principal = n;
        self
    }

    /// At most `n` running tasks in all (`0` refuses every task). Ended tasks do not count.
    #[must_use]
    pub fn with_total(mut self, n: usize) -> TaskLimits {
        self.total = n;
        self
    }

    /// At most `n` ended tasks of one principal kept, its oldest forgotten first (`0` is
    /// taken as 1: the task that just ended is always kept).
    #[must_use]
    pub fn with_ended_per_principal(mut self, n: usize) -> TaskLimits {
        self.ended_per_principal = n.max(1);
        self
    }

    /// At most `n` ended tasks kept in all, the oldest forgotten first (`0` is taken as 1:
    /// the task that just ended is always kept).
    #[must_use]
    pub fn with_ended(mut self, n: usize) -> TaskLimits {
        self.ended = n.max(1);
        self
    }

    /// Keeps results of at most `bytes` (as [`KeptResult`](crate::task::KeptResult) JSON);
    /// the task of a larger one fails, saying so.
    #[must_use]
    pub fn with_result_bytes(mut self, bytes: usize) -> TaskLimits {
        self.result_bytes = bytes;
        self
    }

    /// Keeps an ended task's result for `ttl`.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> TaskLimits {
        self.ttl = ttl;
        self
    }

    /// Running tasks per principal.
    pub fn per_principal(&self) -> usize {
        self.per_principal
    }

    /// Running tasks in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Ended tasks kept per principal.
    pub fn ended_per_principal(&self) -> usize {
        self.ended_per_principal
    }

    /// Ended tasks kept in all.
    pub fn ended(&self) -> usize {
        self.ended
    }

    /// The largest result kept, in bytes of its [`KeptResult`](crate::task::KeptResult)
    /// JSON.
    pub fn result_bytes(&self) -> usize {
        self.result_bytes
    }

    /// How long an ended task's result is kept.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }
}

/// Why a task could not be read, cancelled or collected. Nothing changed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// No task of this subject has that id: it never existed, it expired (an ended task is
    /// kept for its [`ttl`](Task::ttl) at most, and forgotten sooner to keep within
    /// [`TaskLimits::ended_per_principal`] and [`TaskLimits::ended`]), or it belongs to another
    /// principal, which reads the same so that nothing of it leaks.
    #[error(
        "no task with the id {id:?} is known to this subject; it may have expired (an ended task is kept for its ttl at most, and newer ended tasks push out older ones), or belong to someone else"
    )]
    UnknownId {
        /// The id asked for.
        id: String,
    },
    /// The task has not ended yet: its result is not there. Poll
    /// [`Run::task`](crate::Run::task), or wait with [`Run::wait_task`](crate::Run::wait_task).
    #[error("the task {id:?} is still {status}; its result comes once it ends")]
    NotFinished {
        /// The task.
        id: String,
        /// Where it is.
        status: TaskStatus,
    },
    /// The task has ended already (it cannot be cancelled any more).
    #[error("the task {id:?} has ended already ({status}); nothing was cancelled")]
    AlreadyFinished {
        /// The task.
        id: String,
        /// How it ended.
        status: TaskStatus,
    },
    /// An answer to the task's questions ([`Run::answer_task`](crate::Run::answer_task)) is
    /// not one: too large, or too many. Nothing was answered.
    #[error("the answers to the task {id:?} were refused: {detail}")]
    InvalidAnswer {
        /// The task.
        id: String,
        /// What is wrong with them.
        detail: String,
    },
    /// The task store failed; try again.
    #[error("the task store failed: {0}")]
    Store(#[from] StoreError),
}
