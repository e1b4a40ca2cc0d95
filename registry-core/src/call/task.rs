//! Tasks on the call path: [`Run::start_task`] takes a call through the same resolution and
//! gate as [`Run::call`], then starts its tool on a thread of its own and answers at once
//! with the [`Task`]; [`Run::task`], [`Run::cancel_task`], [`Run::task_result`] and
//! [`Run::wait_task`] follow it by id, for the task's principal only.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::admit::Approval;
use super::answer::{
    Decided, Resolved, not_a_task_text, principal_tasks_full_text, task_cancelled_text,
    task_not_started_text, task_result_too_large_text, tasks_full_text, unavailable_text,
};
use crate::audit::{self, AuditEvent, TaskEvent, TaskEventKind};
use crate::discover::run::Run;
use crate::execute::execution;
use crate::execute::observation::{ErrorKind, Observation};
use crate::host::call_host::Elicitation;
use crate::host::context::CallOptions;
use crate::register::registry::Registry;
use crate::resolve::call::ToolCall;
use crate::shared::cancel::Cancellation;
use crate::task::host::MAX_TASK_QUESTIONS;
use crate::task::host::{Questions, TaskHost};
use crate::task::kept::kept_bytes;
use crate::task::record::{MAX_ANSWER_BYTES, TaskAnswers, answer_json};
use crate::task::record::{Task, TaskError, TaskLimits, TaskStatus};
use crate::task::store::{Answering, Finish, Insertion, TaskEnd};
use crate::task::{Bell, Live, new_task_id};
use serde_json::Value;

/// The longest pause between two reads of a task that runs in another process.
const MAX_POLL: Duration = Duration::from_secs(1);

/// The name of every task's thread (at most 15 bytes, as Linux keeps it).
const THREAD_NAME: &str = "registry-task";

impl Run {
    /// Starts `call` as a task: resolves it and passes it through the gate exactly as
    /// [`call`](Self::call) does (the allowed set, revocation, readiness, the arguments, the
    /// policies, a person's approval, the budget and the rate limit), then keeps a [`Task`]
    /// in the registry's task store and runs the tool on a thread of its own. It answers at
    /// once with the task ([`TaskStatus::Working`]); [`task`](Self::task) polls it,
    /// [`cancel_task`](Self::cancel_task) cancels it (its tool sees
    /// [`ToolContext::cancelled`](crate::ToolContext::cancelled)),
    /// [`task_result`](Self::task_result) and [`wait_task`](Self::wait_task) give its result,
    /// the observation [`call`](Self::call) would have answered.
    ///
    /// **`Err` when nothing started**, with the observation that says why, as
    /// [`call`](Self::call) would have answered it:
    ///
    /// - the tool is not declared long-running (`#[tool(task)]`,
    ///   [`DynamicTool::task`](crate::DynamicTool::task)):
    ///   [`ErrorKind::Denied`], saying to call it as an ordinary call;
    /// - any refusal of the gate; a call that needs a person's approval is
    ///   [`ErrorKind::ApprovalRequired`], and starts only when
    ///   [`decide`](Self::decide) approves it
    ///   ([`Settled::Started`](crate::approval::Settled::Started));
    /// - the principal runs [`TaskLimits::per_principal`](crate::task::TaskLimits::per_principal)
    ///   tasks already, or [`TaskLimits::total`](crate::task::TaskLimits::total) tasks run in
    ///   all (ended tasks do not count): [`ErrorKind::RateLimited`];
    /// - the task store failed, or no thread could be started: [`ErrorKind::Unavailable`].
    ///
    /// A task obeys its tool's own `timeout`, not the run's
    /// [call timeout](Self::with_call_timeout), which is for calls a model waits on.
    ///
    /// ```standalone_crate
    /// use registry_core::task::TaskStatus;
    /// use registry_core::{tool, Registry, Subject, ToolCall, ToolContext};
    /// use serde_json::json;
    ///
    /// /// Export a day of logs to the archive.
    /// #[tool(scopes = "logs:export", task)]
    /// async fn export_logs(ctx: &ToolContext, day: String) -> String {
    ///     ctx.progress(1.0, Some(1.0), "archived");
    ///     format!("{day} exported")
    /// }
    ///
    /// let registry = Registry::from_inventory().unwrap();
    /// let subject = Subject::new("acme").with_scopes(["logs:export"]).with_principal("ana");
    /// let run = registry.open_run("run-1", &subject);
    ///
    /// let task = run.start_task_blocking(ToolCall::new("c1", "export_logs", json!({"day": "2026-07-28"}))).unwrap();
    /// assert_eq!(task.status(), TaskStatus::Working);
    /// let answer = pollster::block_on(run.wait_task(task.id())).unwrap();
    /// assert_eq!(answer.json(), &json!("2026-07-28 exported"));
    /// assert_eq!(pollster::block_on(run.task(task.id())).unwrap().status(), TaskStatus::Completed);
    /// ```
    pub async fn start_task(&self, call: ToolCall) -> Result<Task, Observation> {
        self.start_task_with_options(call, CallOptions::default())
            .await
    }

    /// [`start_task`](Self::start_task) on this thread, without an async runtime (the
    /// task itself runs on its own thread either way).
    // The refusal is the model's answer to its call, as `call_blocking` returns it unboxed.
    #[allow(clippy::result_large_err)]
    pub fn start_task_blocking(&self, call: ToolCall) -> Result<Task, Observation> {
        pollster::block_on(self.start_task(call))
    }

    /// [`start_task`](Self::start_task), with the host the task's tool reaches (its
    /// progress is recorded in the task store first) and the elicitation and sampling
    /// timeouts of `options`; a cancellation in `options` cancels the task too.
    pub(crate) async fn start_task_with_options(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> Result<Task, Observation> {
        audit::ready(self.registry.audit_sink()).await;
        let started = self.clock();
        let mut resolved = match self
            .resolve(call, &options)
            .and_then(|resolved| self.as_task(resolved))
        {
            Ok(resolved) => resolved,
            Err(refused) => return Err(self.finish(*refused, started)),
        };
        if let Err(refused) = self.admit(&mut resolved, Approval::Ask).await {
            return Err(self.finish(*refused, started));
        }
        self.launch(resolved, options, started).await
    }

    /// Refuses a call to a tool that is not declared long-running.
    fn as_task(&self, mut resolved: Resolved) -> Result<Resolved, Box<Decided>> {
        if resolved.entry.tool.settings().task {
            resolved.ticket.task = true;
            return Ok(resolved);
        }
        let name = resolved.entry.tool.name();
        let text = not_a_task_text(name);
        Err(Box::new(resolved.ticket.refused(ErrorKind::Denied, text)))
    }

    /// Keeps the task of a call that passed the gate, and starts its tool on a thread of
    /// its own.
    pub(super) async fn launch(
        &self,
        mut resolved: Resolved,
        options: CallOptions,
        started: Option<Instant>,
    ) -> Result<Task, Observation> {
        let tasks = self.registry.tasks();
        let id = match new_task_id() {
            Ok(id) => id,
            Err(error) => return Err(self.not_started(resolved, error.to_string(), started)),
        };
        let now = SystemTime::now();
        let task = Task {
            id,
            run_id: self.id().to_owned(),
            tenant: self.subject().tenant().to_owned(),
            agent: self.subject().agent().map(str::to_owned),
            principal: self.subject().principal().map(str::to_owned),
            call_id: resolved.ticket.call_id.clone(),
            tool_name: resolved.entry.tool.name().to_owned(),
            tool_version: resolved.entry.tool.version_fingerprint(),
            status: TaskStatus::Working,
            message: None,
            progress: None,
            created_at: now,
            updated_at: now,
            ttl: tasks.limits.ttl(),
            expires_at: None,
            questions: Vec::new(),
        };
        let name = task.tool_name.clone();
        let full = |text: String, detail: String| {
            if let Some(budget) = &self.budget {
                budget.refund();
            }
            let mut decided = resolved.ticket.copy().refused(ErrorKind::RateLimited, text);
            decided.detail = Some(detail);
            decided
        };
        let refusal = match tasks.store.insert(&task, &tasks.limits).await {
            Ok(Insertion::Stored) => None,
            Ok(Insertion::PrincipalFull { running }) => {
                let per = tasks.limits.per_principal();
                Some((
                    principal_tasks_full_text(&name, running, per),
                    format!("{running} tasks of this principal run (at most {per})"),
                ))
            }
            Ok(Insertion::Full { running }) => {
                let total = tasks.limits.total();
                Some((
                    tasks_full_text(&name, "the server", total),
                    format!("{running} tasks run in the task store (at most {total})"),
                ))
            }
            Err(error) => {
                return Err(self.not_started(resolved, format!("task store: {error}"), started));
            }
        };
        if let Some((text, detail)) = refusal {
            return Err(self.finish(full(text, detail), started));
        }
        let live = Live {
            cancellation: options.cancellation.clone().unwrap_or_default(),
            done: Cancellation::new(),
            answered: Bell::default(),
        };
        if !tasks.live.add(&task.id, live.clone(), tasks.limits.total()) {
            let total = tasks.limits.total();
            let text = tasks_full_text(&name, "this server", total);
            let detail = format!("{total} tasks run in this process");
            let decided = full(text, detail);
            let ended = end_now(&task, &decided, &tasks.limits);
            let _ = tasks.store.finish(&task.id, ended).await;
            return Err(self.finish(decided, started));
        }
        tasks.store.running(&task.id, live.cancellation.clone());
        let host = TaskHost {
            id: task.id.clone(),
            store: tasks.store.clone(),
            inner: options
                .host
                .clone()
                .unwrap_or_else(|| self.effective_host()),
            questions: options
                .task_questions
                .then(|| Questions::new(live.answered.clone())),
        };
        let options = CallOptions {
            host: Some(Arc::new(host)),
            cancellation: Some(live.cancellation.clone()),
            ..options
        };
        resolved.context = self.context(&task.call_id, &resolved.entry, &options);
        let arguments = resolved.ticket.arguments.clone();
        let job = Job {
            registry: self.registry.clone(),
            task: task.clone(),
            timeout: resolved.entry.tool.settings().timeout,
            arguments: resolved.ticket.arguments.clone(),
            resolved,
            live: live.clone(),
        };
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let span = tracing::Span::current();
        let context = options.task_context.clone();
        let spawned = std::thread::Builder::new()
            .name(THREAD_NAME.to_owned())
            .spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    let _entered = span.enter();
                    let mut job = Some(job);
                    let mut run = || {
                        if let Some(job) = job.take() {
                            job.run();
                        }
                    };
                    if let Some(context) = &context {
                        context(&mut run);
                    }
                    // A context that did not run the job: run it here, so the task ends.
                    run();
                });
            });
        if let Err(error) = spawned {
            tasks.live.remove(&task.id);
            tasks.store.stopped(&task.id);
            let text = task_not_started_text(&name);
            let mut decided =
                Decided::refused(task.call_id.clone(), name, ErrorKind::Unavailable, text);
            decided.detail = Some(format!("no thread for the task: {error}"));
            decided.tool_version = Some(task.tool_version);
            if let Some(budget) = &self.budget {
                budget.refund();
            }
            let ended = end_now(&task, &decided, &tasks.limits);
            let _ = tasks.store.finish(&task.id, ended).await;
            return Err(self.finish(decided, started));
        }
        emit(
            &self.registry,
            &task,
            TaskEventKind::Started,
            Report {
                run_id: self.id(),
                arguments: arguments.as_ref(),
                ..Report::default()
            },
        );
        Ok(task)
    }

    /// The answer to a call whose task could not be kept: the store failed.
    fn not_started(
        &self,
        resolved: Resolved,
        detail: String,
        started: Option<Instant>,
    ) -> Observation {
        if let Some(budget) = &self.budget {
            budget.refund();
        }
        let text = unavailable_text(resolved.entry.tool.name());
        let mut decided = resolved.ticket.refused(ErrorKind::Unavailable, text);
        decided.detail = Some(detail);
        self.finish(decided, started)
    }

    /// Where task `id` is: its status, progress and message.
    ///
    /// A task is its principal's: a run of the same tenant and
    /// [principal](crate::Subject::principal) (or, for a subject without one, the same
    /// tenant and agent) reads it, whichever run started it; for anyone else it is
    /// [`TaskError::UnknownId`], as for an id that never existed or a task that expired.
    pub async fn task(&self, id: &str) -> Result<Task, TaskError> {
        self.registry
            .tasks()
            .store
            .get(id)
            .await?
            .filter(|task| task.belongs_to(self.subject()))
            .ok_or_else(|| TaskError::UnknownId { id: id.to_owned() })
    }

    /// Cancels task `id`: it ends [`TaskStatus::Cancelled`] at once, its tool's
    /// cancellation is tripped ([`ToolContext::cancelled`](crate::ToolContext::cancelled)
    /// resolves, [`ToolContext::is_cancelled`](crate::ToolContext::is_cancelled) turns true;
    /// an async tool's future is dropped), and whatever the tool returns afterwards is
    /// discarded. Its result is an [`ErrorKind::Cancelled`] observation.
    ///
    /// `Err` and nothing changed: another principal's or an unknown task
    /// ([`TaskError::UnknownId`]), one that has ended already
    /// ([`TaskError::AlreadyFinished`]), a store that failed.
    ///
    /// ```standalone_crate
    /// use registry_core::task::{TaskError, TaskStatus};
    /// use registry_core::{tool, ErrorKind, Registry, Subject, ToolCall, ToolContext};
    /// use serde_json::json;
    ///
    /// /// Rebuild the search index.
    /// #[tool(public, task)]
    /// async fn reindex(ctx: &ToolContext) -> String {
    ///     ctx.cancelled().await;
    ///     "stopped".into()
    /// }
    ///
    /// let run = Registry::from_inventory().unwrap().open_run("run-1", &Subject::new("acme"));
    /// let task = run.start_task_blocking(ToolCall::new("c1", "reindex", json!({}))).unwrap();
    /// let cancelled = pollster::block_on(run.cancel_task(task.id())).unwrap();
    /// assert_eq!(cancelled.status(), TaskStatus::Cancelled);
    /// let answer = pollster::block_on(run.task_result(task.id())).unwrap();
    /// assert_eq!(answer.error_kind(), Some(ErrorKind::Cancelled));
    /// assert!(matches!(
    ///     pollster::block_on(run.cancel_task(task.id())),
    ///     Err(TaskError::AlreadyFinished { status: TaskStatus::Cancelled, .. })
    /// ));
    /// ```
    pub async fn cancel_task(&self, id: &str) -> Result<Task, TaskError> {
        let task = self.task(id).await?;
        if task.status.is_terminal() {
            return Err(TaskError::AlreadyFinished {
                id: id.to_owned(),
                status: task.status,
            });
        }
        let tasks = self.registry.tasks();
        let text = task_cancelled_text(&task.tool_name);
        let result = Observation::error(
            task.call_id.clone(),
            task.tool_name.clone(),
            ErrorKind::Cancelled,
            text,
        );
        let now = SystemTime::now();
        let end = TaskEnd {
            status: TaskStatus::Cancelled,
            message: Some("cancelled by the caller".to_owned()),
            result,
            at: now,
            expires_at: now + task.ttl,
            limits: tasks.limits,
        };
        match tasks.store.finish(id, end).await? {
            Finish::Finished(task) => {
                if let Some(live) = tasks.live.get(id) {
                    live.cancellation.cancel();
                }
                emit(
                    &self.registry,
                    &task,
                    TaskEventKind::Cancelled,
                    Report {
                        run_id: self.id(),
                        ..Report::default()
                    },
                );
                Ok(*task)
            }
            Finish::AlreadyFinished(status) => Err(TaskError::AlreadyFinished {
                id: id.to_owned(),
                status,
            }),
            Finish::Unknown => Err(TaskError::UnknownId { id: id.to_owned() }),
        }
    }

    /// Answers questions of running task `id` that its tool asks its caller (a task started
    /// with [`CallOptions::with_task_questions_for_caller`]; they are
    /// [`Task::questions`]), by key: the tool's [`ToolContext::elicit`](crate::ToolContext::elicit)
    /// returns the answer and the tool goes on, here or on the replica that runs it. Answers
    /// may come one at a time; the task stays [`TaskStatus::InputRequired`] while a question
    /// waits. A key under which no question waits (never asked, answered already,
    /// withdrawn) is ignored, as MCP's tasks extension says; [`TaskAnswers`] says which.
    ///
    /// `Err` and nothing answered: another principal's or an unknown task
    /// ([`TaskError::UnknownId`]), one that has ended ([`TaskError::AlreadyFinished`]), more
    /// than [`MAX_TASK_QUESTIONS`](crate::task::MAX_TASK_QUESTIONS) answers or one larger than
    /// [`MAX_ANSWER_BYTES`](crate::task::MAX_ANSWER_BYTES) as JSON
    /// ([`TaskError::InvalidAnswer`]), a store that failed.
    ///
    /// ```standalone_crate
    /// use registry_core::call::CallOptions;
    /// use registry_core::host::Elicitation;
    /// use registry_core::server::RunExt;
    /// use registry_core::{tool, Registry, Subject, ToolCall, ToolContext};
    /// use serde_json::json;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm { confirm: bool }
    ///
    /// /// Delete the old backups.
    /// #[tool(public, task)]
    /// async fn prune_backups(ctx: &ToolContext) -> String {
    ///     match ctx.elicit::<Confirm>("Delete 12 backups?").await {
    ///         Ok(Elicitation::Accepted(Confirm { confirm: true })) => "deleted".into(),
    ///         _ => "kept".into(),
    ///     }
    /// }
    ///
    /// let run = Registry::from_inventory().unwrap().open_run("run-1", &Subject::new("acme"));
    /// let options = CallOptions::new().with_task_questions_for_caller();
    /// let call = ToolCall::new("c1", "prune_backups", json!({}));
    /// let task = pollster::block_on(run.start_task_with(call, options)).unwrap();
    /// let asked = loop {
    ///     let task = pollster::block_on(run.task(task.id())).unwrap();
    ///     if let Some(question) = task.questions().next() {
    ///         break question.key().to_owned();
    ///     }
    ///     std::thread::sleep(std::time::Duration::from_millis(5));
    /// };
    /// let answer = Elicitation::Accepted(json!({"confirm": true}));
    /// let done = pollster::block_on(run.answer_task(task.id(), [(asked, answer)])).unwrap();
    /// assert_eq!(done.answered.len(), 1);
    /// assert_eq!(pollster::block_on(run.wait_task(task.id())).unwrap().json(), &json!("deleted"));
    /// ```
    pub async fn answer_task(
        &self,
        id: &str,
        answers: impl IntoIterator<Item = (String, Elicitation<Value>)>,
    ) -> Result<TaskAnswers, TaskError> {
        let invalid = |detail: String| TaskError::InvalidAnswer {
            id: id.to_owned(),
            detail,
        };
        let mut kept = Vec::new();
        for (key, answer) in answers {
            if kept.len() == MAX_TASK_QUESTIONS {
                return Err(invalid(format!(
                    "more than {MAX_TASK_QUESTIONS} answers at once; a task asks at most that many questions at a time"
                )));
            }
            let json = answer_json(&answer);
            let bytes = json.to_string().len();
            if bytes > MAX_ANSWER_BYTES || key.len() > MAX_ANSWER_BYTES {
                return Err(invalid(format!(
                    "the answer to {:?} is {bytes} bytes as JSON, more than the {MAX_ANSWER_BYTES} one may be",
                    audit::truncate(&key, audit::AUDITED_NAME)
                )));
            }
            kept.push((key, json));
        }
        let task = self.task(id).await?;
        if task.status.is_terminal() {
            return Err(TaskError::AlreadyFinished {
                id: id.to_owned(),
                status: task.status,
            });
        }
        let tasks = self.registry.tasks();
        match tasks.store.answer(id, kept, SystemTime::now()).await? {
            Answering::Answered(done) => {
                if !done.answered.is_empty()
                    && let Some(live) = tasks.live.get(id)
                {
                    live.answered.ring();
                }
                if !done.ignored.is_empty() {
                    tracing::debug!(
                        task = %audit::Logged(id),
                        ignored = done.ignored.len(),
                        "answers to questions the task does not ask were ignored"
                    );
                }
                Ok(done)
            }
            Answering::Ended(status) => Err(TaskError::AlreadyFinished {
                id: id.to_owned(),
                status,
            }),
            Answering::Unknown => Err(TaskError::UnknownId { id: id.to_owned() }),
        }
    }

    /// The result of ended task `id`: the observation [`call`](Self::call) would have
    /// answered (its call id and tool name those of the call that started it). Kept for the
    /// task's [`ttl`](Task::ttl) after it ended; asking for it does not remove it.
    ///
    /// `Err`: [`TaskError::NotFinished`] while it runs (poll [`task`](Self::task) or
    /// [`wait_task`](Self::wait_task)), [`TaskError::UnknownId`] as for
    /// [`task`](Self::task), a store that failed.
    pub async fn task_result(&self, id: &str) -> Result<Observation, TaskError> {
        let task = self.task(id).await?;
        if !task.status.is_terminal() {
            return Err(TaskError::NotFinished {
                id: id.to_owned(),
                status: task.status,
            });
        }
        self.registry
            .tasks()
            .store
            .result(id)
            .await?
            .ok_or_else(|| TaskError::UnknownId { id: id.to_owned() })
    }

    /// Waits until task `id` has ended, then gives its result
    /// ([`task_result`](Self::task_result)). A task running in this process wakes the wait
    /// when it ends; one running elsewhere (a store shared by replicas) is read again after
    /// a pause that grows to one second. Drop the future to stop waiting: the task goes on.
    pub async fn wait_task(&self, id: &str) -> Result<Observation, TaskError> {
        let mut pause = Duration::from_millis(10);
        loop {
            let task = self.task(id).await?;
            if task.status.is_terminal() {
                return self.task_result(id).await;
            }
            match self.registry.tasks().live.get(id) {
                Some(live) => live.done.cancelled().await,
                None => {
                    futures_timer::Delay::new(pause).await;
                    pause = (pause * 2).min(MAX_POLL);
                }
            }
        }
    }
}

/// A task's tool, run on its own thread to its end.
struct Job {
    registry: Registry,
    task: Task,
    resolved: Resolved,
    timeout: Option<Duration>,
    arguments: Option<(usize, String)>,
    live: Live,
}

impl Job {
    fn run(self) {
        let Job {
            registry,
            task,
            resolved,
            timeout,
            arguments,
            live,
        } = self;
        let clock = Instant::now();
        let Resolved {
            entry,
            context,
            arguments: values,
            ticket,
        } = resolved;
        let scope = Arc::clone(context.scope());
        let outcome = execution::execute_blocking(
            &entry.tool,
            context,
            values,
            timeout,
            registry.blocking_pool(),
        );
        let duration = clock.elapsed();
        // The result checks see a task's result before it is kept for the model.
        let decided =
            super::check::decided(registry.result_checks(), &scope, &entry, ticket, outcome);
        let tasks = registry.tasks();
        let end = end_now(&task, &decided, &tasks.limits);
        let outcome = end.result.error_kind();
        // A result too large to keep: the audit says so, with its size.
        let detail = match &decided.detail {
            None if outcome != decided.observation.error_kind() => end.message.clone(),
            detail => detail.clone(),
        };
        let store = &tasks.store;
        // The tool no longer runs here: its place among this process's tasks is free before
        // its end frees its place in the store, so a caller that saw the end may start
        // another at once.
        tasks.live.remove(&task.id);
        let finished = pollster::block_on(store.finish(&task.id, end));
        match finished {
            Ok(Finish::Finished(ended)) => emit(
                &registry,
                &ended,
                TaskEventKind::Finished,
                Report {
                    run_id: &task.run_id,
                    outcome,
                    duration,
                    arguments: arguments.as_ref(),
                    detail,
                },
            ),
            // Cancelled (audited then) or expired meanwhile: the result is discarded.
            Ok(Finish::AlreadyFinished(_) | Finish::Unknown) => {}
            Err(error) => emit(
                &registry,
                &task,
                TaskEventKind::Finished,
                Report {
                    run_id: &task.run_id,
                    outcome,
                    duration,
                    arguments: arguments.as_ref(),
                    detail: Some(format!("the task store did not keep the end: {error}")),
                },
            ),
        }
        store.stopped(&task.id);
        live.done.cancel();
    }
}

/// `decided` as the end of `task`, now: completed if it succeeded, cancelled if it was
/// cancelled, failed otherwise, and failed too, saying so, if its result is larger than
/// `limits` keep ([`TaskLimits::result_bytes`]): never cut.
fn end_now(task: &Task, decided: &Decided, limits: &TaskLimits) -> TaskEnd {
    let now = SystemTime::now();
    let mut observation = decided
        .observation
        .clone()
        .with_generated_id(decided.generated_id);
    let bytes = kept_bytes(&observation);
    if bytes > limits.result_bytes() {
        let text = task_result_too_large_text(&task.tool_name, bytes, limits.result_bytes());
        observation = Observation::error(
            task.call_id.clone(),
            task.tool_name.clone(),
            ErrorKind::ExecutionFailed,
            text,
        )
        .with_generated_id(decided.generated_id);
    }
    TaskEnd {
        status: match observation.error_kind() {
            None => TaskStatus::Completed,
            Some(ErrorKind::Cancelled) => TaskStatus::Cancelled,
            Some(_) => TaskStatus::Failed,
        },
        message: observation.error_text().map(str::to_owned),
        result: observation,
        at: now,
        expires_at: now + task.ttl,
        limits: *limits,
    }
}

/// What a task event records beyond the task.
#[derive(Default)]
struct Report<'a> {
    run_id: &'a str,
    outcome: Option<ErrorKind>,
    duration: Duration,
    arguments: Option<&'a (usize, String)>,
    detail: Option<String>,
}

/// Audits one step of `task`.
fn emit(registry: &Registry, task: &Task, kind: TaskEventKind, report: Report<'_>) {
    let sink = registry.audit_sink();
    if !audit::wanted(sink) {
        return;
    }
    let (argument_bytes, argument_hash) = report.arguments.cloned().unwrap_or_default();
    audit::emit(
        sink,
        AuditEvent::Task(TaskEvent {
            kind,
            id: task.id.clone(),
            run_id: report.run_id.to_owned(),
            tenant: task.tenant.clone(),
            principal: task.principal.clone(),
            call_id: audit::truncate(&task.call_id, audit::AUDITED_NAME),
            tool: task.tool_name.clone(),
            status: task.status.as_str().to_owned(),
            outcome: report.outcome,
            duration: report.duration,
            argument_bytes,
            argument_hash,
            detail: report.detail,
            tool_version: task.tool_version,
        }),
    );
}
