//! What a running tool knows about the call it serves, and what it can ask of its host.

use std::any::Any;
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::host::call_host::{
    CallHost, CallInfo, DEFAULT_ELICIT_TIMEOUT, DEFAULT_SAMPLE_TIMEOUT, DefaultHost, ElicitError,
    ElicitRequest, Elicitation, LogLevel, Progress, SampleError, SampleReply, SampleRequest,
};
use crate::host::form::{check_answer, form_schema};
use crate::host::state::AppState;
use crate::shared::cancel::{Cancellation, Cancelled};
use crate::shared::deadline::with_deadline;
use crate::shared::subject::Subject;

/// The context of one call, given to any tool that takes a `&ToolContext` parameter: the run,
/// the call, the subject (tenant and scopes) and the application's shared state; and what the
/// tool can do while it runs: report [`progress`](Self::progress), [`log`](Self::log), notice
/// it was [cancelled](Self::is_cancelled), [ask the user](Self::elicit), [ask the client's
/// model](Self::sample). Those go to the call's [`CallHost`]: over MCP, the client.
///
/// It is left out of the tool's schema: the model never sees or sets it.
///
/// ```
/// use registry_core::{tool, ToolContext};
///
/// /// Say which call this is.
/// #[tool(public)]
/// fn whoami(ctx: &ToolContext) -> String {
///     format!("{} for {} in call {}", ctx.tool_name(), ctx.tenant(), ctx.call_id())
/// }
/// ```
#[derive(Clone)]
pub struct ToolContext {
    scope: Arc<RunScope>,
    call: Arc<CallScope>,
}

/// What is particular to one call.
#[derive(Clone)]
struct CallScope {
    call_id: Arc<str>,
    tool_name: Cow<'static, str>,
    host: Arc<dyn CallHost>,
    cancellation: Cancellation,
    waits: HostWaits,
}

/// How long a call's questions and sampling requests wait for an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostWaits {
    pub(crate) elicit: Duration,
    pub(crate) sample: Duration,
}

impl Default for HostWaits {
    fn default() -> Self {
        HostWaits {
            elicit: DEFAULT_ELICIT_TIMEOUT,
            sample: DEFAULT_SAMPLE_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("run_id", &self.scope.run_id)
            .field("call_id", &self.call.call_id)
            .field("tool_name", &self.call.tool_name)
            .field("subject", &self.scope.subject)
            .field("cancelled", &self.call.cancellation.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// What the caller of one call gives it besides the call: the [`CallHost`] its tool's
/// progress, logs and questions go to, and a [`Cancellation`] that ends it. For
/// [`RunExt::call_with`](crate::server::RunExt::call_with) and
/// [`RunExt::call_blocking_with`](crate::server::RunExt::call_blocking_with); `registry-mcp` makes one per
/// `tools/call`.
///
/// ```
/// use registry_core::{host::CallHost, host::CallInfo, call::CallOptions, call::Cancellation, host::LogLevel};
///
/// struct Console;
///
/// impl CallHost for Console {
///     fn log(&self, call: &CallInfo<'_>, level: LogLevel, message: &str) {
///         eprintln!("[{level}] {}: {message}", call.tool_name);
///     }
/// }
///
/// let cancellation = Cancellation::new();
/// let options = CallOptions::new().with_host(Console).with_cancellation(cancellation.clone());
/// # let _ = options;
/// ```
#[derive(Clone, Default)]
#[must_use = "options do nothing until they are given to a call (`RunExt::call_with`)"]
pub struct CallOptions {
    pub(crate) host: Option<Arc<dyn CallHost>>,
    pub(crate) cancellation: Option<Cancellation>,
    pub(crate) elicit_timeout: Option<Duration>,
    pub(crate) sample_timeout: Option<Duration>,
    /// What a task's thread runs its job inside ([`with_task_context`](Self::with_task_context)).
    pub(crate) task_context: Option<TaskContext>,
    pub(crate) trace: Option<crate::shared::trace::TraceContext>,
    /// A task's questions wait for its caller ([`with_task_questions_for_caller`](Self::with_task_questions_for_caller)).
    pub(crate) task_questions: bool,
}

/// Runs the job it is given (once), inside whatever context the task's tool needs.
pub(crate) type TaskContext = Arc<dyn Fn(&mut dyn FnMut()) + Send + Sync>;

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("host", &self.host.is_some())
            .field("cancellation", &self.cancellation)
            .field("elicit_timeout", &self.elicit_timeout)
            .field("sample_timeout", &self.sample_timeout)
            .field("task_context", &self.task_context.is_some())
            .field("trace", &self.trace)
            .field("task_questions", &self.task_questions)
            .finish()
    }
}

impl CallOptions {
    /// No host of its own (the run's applies) and no cancellation.
    pub fn new() -> CallOptions {
        CallOptions::default()
    }

    /// The call's host, before the run's and the registry's.
    pub fn with_host(mut self, host: impl CallHost) -> CallOptions {
        self.host = Some(Arc::new(host));
        self
    }

    /// Ends the call as [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) once
    /// `cancellation` is tripped.
    pub fn with_cancellation(mut self, cancellation: Cancellation) -> CallOptions {
        self.cancellation = Some(cancellation);
        self
    }

    /// How long the call's questions ([`ToolContext::elicit`]) wait for an answer, instead
    /// of the registry's ([`RegistryBuilder::elicit_timeout`](crate::RegistryBuilder::elicit_timeout),
    /// default 10 minutes); unanswered, a question fails [`ElicitError::TimedOut`].
    pub fn with_elicit_timeout(mut self, timeout: Duration) -> CallOptions {
        self.elicit_timeout = Some(timeout);
        self
    }

    /// For a task ([`RunExt::start_task_with`](crate::server::RunExt::start_task_with)):
    /// `context` runs the job of the task's thread (it must call the job it is given, once),
    /// so that the tool finds what it needs there, say the caller's async runtime for its
    /// timers and I/O. Without it, an async tool runs on a plain thread with a small local
    /// executor, as in [`Run::call_blocking`](crate::Run::call_blocking).
    ///
    /// ```
    /// use registry_core::call::CallOptions;
    ///
    /// // With Tokio: `let handle = tokio::runtime::Handle::current();`, then
    /// // `move |job| { let _entered = handle.enter(); job() }`.
    /// let options = CallOptions::new().with_task_context(|job: &mut dyn FnMut()| job());
    /// # let _ = options;
    /// ```
    pub fn with_task_context(
        mut self,
        context: impl Fn(&mut dyn FnMut()) + Send + Sync + 'static,
    ) -> CallOptions {
        self.task_context = Some(Arc::new(context));
        self
    }

    /// For a task ([`RunExt::start_task_with`](crate::server::RunExt::start_task_with)): its tool's
    /// questions ([`ToolContext::elicit`]) wait for the task's caller instead of going to the
    /// host. Each is kept with the task ([`Task::questions`](crate::task::Task::questions);
    /// the task is [`InputRequired`](crate::task::TaskStatus::InputRequired) meanwhile) until
    /// [`Run::answer_task`](crate::Run::answer_task) answers it, from this process or, with a
    /// store shared by replicas, from any other. A task asks at most
    /// [`MAX_TASK_QUESTIONS`](crate::task::MAX_TASK_QUESTIONS) at once; the call's time for
    /// questions ([`with_elicit_timeout`](Self::with_elicit_timeout)) still bounds each
    /// wait, after which the question is withdrawn.
    ///
    /// This is how the MCP tasks extension asks (`inputRequests` on `tasks/get`, answered by
    /// `tasks/update`): the request that started the task has ended, so nobody else can.
    pub fn with_task_questions_for_caller(mut self) -> CallOptions {
        self.task_questions = true;
        self
    }

    /// How long the call's sampling requests ([`ToolContext::sample`]) wait for a reply,
    /// instead of the registry's ([`RegistryBuilder::sample_timeout`](crate::RegistryBuilder::sample_timeout),
    /// default 2 minutes); without one in time, sampling fails [`SampleError::TimedOut`].
    pub fn with_sample_timeout(mut self, timeout: Duration) -> CallOptions {
        self.sample_timeout = Some(timeout);
        self
    }

    /// The distributed trace the call belongs to (from the caller's `traceparent`): the
    /// parent of the call's `tool_call` span, and the trace id of its audit event.
    pub fn with_trace(mut self, trace: crate::shared::trace::TraceContext) -> CallOptions {
        self.trace = Some(trace);
        self
    }
}

/// What every call of one run shares.
#[derive(Debug)]
pub(crate) struct RunScope {
    pub(crate) run_id: Arc<str>,
    pub(crate) subject: Subject,
    pub(crate) state: AppState,
}

impl RunScope {
    /// The scope of calls made outside any run: no tenant, no scopes, no state.
    fn detached() -> Arc<RunScope> {
        static DETACHED: OnceLock<Arc<RunScope>> = OnceLock::new();
        DETACHED
            .get_or_init(|| {
                Arc::new(RunScope {
                    run_id: Arc::from(""),
                    subject: Subject::new(""),
                    state: AppState::default(),
                })
            })
            .clone()
    }
}

impl ToolContext {
    /// The context of call `call_id` to the tool `tool_name`, outside any run (no tenant, no
    /// scopes, no application state): for unit tests that call a `#[tool]` function as the
    /// plain Rust function it still is. A registered tool runs only through a
    /// [`Run`](crate::Run), which gives its calls their real context.
    pub fn new(call_id: impl Into<Arc<str>>, tool_name: impl Into<String>) -> Self {
        ToolContext {
            scope: RunScope::detached(),
            call: Arc::new(CallScope {
                call_id: call_id.into(),
                tool_name: Cow::Owned(tool_name.into()),
                host: default_host(),
                cancellation: Cancellation::new(),
                waits: HostWaits::default(),
            }),
        }
    }

    /// This context with `host` as its [`CallHost`]: to test a tool that reports progress
    /// or asks questions, called as a plain function.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use registry_core::{host::CallHost, host::CallInfo, host::Progress, ToolContext};
    ///
    /// #[derive(Default)]
    /// struct Recorder(Mutex<Vec<f64>>);
    ///
    /// impl CallHost for Recorder {
    ///     fn progress(&self, _call: &CallInfo<'_>, progress: &Progress) {
    ///         self.0.lock().unwrap().push(progress.done);
    ///     }
    /// }
    ///
    /// let recorder = Arc::new(Recorder::default());
    /// let ctx = ToolContext::new("call-1", "import").with_host(recorder.clone());
    /// ctx.progress(1.0, Some(2.0), "half");
    /// assert_eq!(*recorder.0.lock().unwrap(), [1.0]);
    /// ```
    #[must_use]
    pub fn with_host(mut self, host: impl CallHost) -> Self {
        Arc::make_mut(&mut self.call).host = Arc::new(host);
        self
    }

    /// This context with `cancellation` as what cancels it: to test how a tool reacts.
    ///
    /// ```
    /// use registry_core::{call::Cancellation, ToolContext};
    ///
    /// let cancellation = Cancellation::new();
    /// let ctx = ToolContext::new("call-1", "import").with_cancellation(cancellation.clone());
    /// cancellation.cancel();
    /// assert!(ctx.is_cancelled());
    /// ```
    #[must_use]
    pub fn with_cancellation(mut self, cancellation: Cancellation) -> Self {
        Arc::make_mut(&mut self.call).cancellation = cancellation;
        self
    }

    pub(crate) fn in_run(
        scope: Arc<RunScope>,
        call_id: Arc<str>,
        tool_name: Cow<'static, str>,
        host: Arc<dyn CallHost>,
        cancellation: Cancellation,
        waits: HostWaits,
    ) -> Self {
        ToolContext {
            scope,
            call: Arc::new(CallScope {
                call_id,
                tool_name,
                host,
                cancellation,
                waits,
            }),
        }
    }

    /// The context of a call to a tool that takes none (a `#[tool]` function without a
    /// `&ToolContext` parameter), called without a host, a cancellation or a deadline of its
    /// own: one shared call part, never cancelled, so that such a call allocates nothing for
    /// its context.
    pub(crate) fn unread(scope: Arc<RunScope>) -> Self {
        static UNREAD: OnceLock<Arc<CallScope>> = OnceLock::new();
        let call = UNREAD.get_or_init(|| {
            Arc::new(CallScope {
                call_id: Arc::from(""),
                tool_name: Cow::Borrowed(""),
                host: default_host(),
                cancellation: Cancellation::never(),
                waits: HostWaits::default(),
            })
        });
        ToolContext {
            scope,
            call: Arc::clone(call),
        }
    }

    /// What every call of the run shares: its id, subject and state.
    pub(crate) fn scope(&self) -> &Arc<RunScope> {
        &self.scope
    }

    /// The call's cancellation (its own: a deadline trips it without cancelling the caller's).
    pub(crate) fn cancellation(&self) -> &Cancellation {
        &self.call.cancellation
    }

    /// The run's id (empty outside a run).
    pub fn run_id(&self) -> &str {
        &self.scope.run_id
    }

    /// The id the model gave the call (OpenAI `tool_call_id`, Anthropic `tool_use_id`, ...).
    pub fn call_id(&self) -> &str {
        &self.call.call_id
    }

    /// The name of the tool being called.
    pub fn tool_name(&self) -> &str {
        &self.call.tool_name
    }

    /// The subject the run acts for.
    pub fn subject(&self) -> &Subject {
        &self.scope.subject
    }

    /// The subject's tenant: scope data access by it.
    pub fn tenant(&self) -> &str {
        self.scope.subject.tenant()
    }

    /// Whether the subject was granted `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scope.subject.has_scope(scope)
    }

    /// The application state of type `T` registered with
    /// [`RegistryBuilder::state`](crate::RegistryBuilder::state), if any.
    pub fn state<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.scope.state.get::<T>()
    }

    fn info(&self) -> CallInfo<'_> {
        CallInfo {
            run_id: &self.scope.run_id,
            call_id: &self.call.call_id,
            tool_name: &self.call.tool_name,
            subject: &self.scope.subject,
        }
    }

    /// Reports progress: `done` of `total` (if known), with a message for a person (empty:
    /// none). Over MCP it is a `notifications/progress` if the client asked for progress
    /// (its request carried a progress token), otherwise it goes where the run's host sends
    /// it (by default, a `tracing` event). `done` should grow with each report.
    ///
    /// ```
    /// use registry_core::{tool, ToolContext};
    ///
    /// /// Import the rows of a file.
    /// #[tool(public)]
    /// fn import(ctx: &ToolContext, rows: Vec<String>) -> usize {
    ///     let total = rows.len() as f64;
    ///     for (done, _row) in rows.iter().enumerate() {
    ///         ctx.progress(done as f64, Some(total), format!("row {done}"));
    ///     }
    ///     rows.len()
    /// }
    /// ```
    pub fn progress(&self, done: f64, total: Option<f64>, message: impl Into<String>) {
        let progress = Progress::new(done, total, message.into());
        self.call.host.progress(&self.info(), &progress);
    }

    /// Logs `message` at `level`. Over MCP it is a `notifications/message` if the client's
    /// level (`logging/setLevel`) lets it through, otherwise it goes where the run's host
    /// sends it (by default, a `tracing` event, target
    /// [`TOOL_EVENT_TARGET`](crate::host::TOOL_EVENT_TARGET)).
    ///
    /// ```
    /// use registry_core::{tool, host::LogLevel, ToolContext};
    ///
    /// /// Clean the build cache.
    /// #[tool(public)]
    /// fn clean(ctx: &ToolContext) -> String {
    ///     ctx.log(LogLevel::Notice, "removed 3 GiB");
    ///     "done".into()
    /// }
    /// ```
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        self.call.host.log(&self.info(), level, &message.into());
    }

    /// Whether the call was cancelled: by its caller (over MCP, `notifications/cancelled`),
    /// or because its deadline passed. A cheap check for loops in synchronous tools, which
    /// cannot be stopped otherwise: whatever a cancelled tool returns is discarded.
    ///
    /// ```
    /// use registry_core::{tool, ToolContext};
    ///
    /// /// Count up to a limit, slowly.
    /// #[tool(public)]
    /// fn count(ctx: &ToolContext, limit: u64) -> Result<u64, String> {
    ///     for n in 0..limit {
    ///         if ctx.is_cancelled() {
    ///             return Err("cancelled".into());
    ///         }
    ///         std::thread::sleep(std::time::Duration::from_millis(1));
    ///         let _ = n;
    ///     }
    ///     Ok(limit)
    /// }
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.call.cancellation.is_cancelled()
    }

    /// A future that completes when the call is cancelled (see
    /// [`is_cancelled`](Self::is_cancelled)). An async tool need not wait on it: a cancelled
    /// call's future is dropped at its next `.await`. It is for work the tool must stop
    /// itself, such as a child process or a spawned task.
    ///
    /// ```
    /// use registry_core::{tool, ToolContext};
    ///
    /// /// Wait for a signal that may never come.
    /// #[tool(public)]
    /// async fn wait(ctx: &ToolContext) -> String {
    ///     ctx.cancelled().await;
    ///     "cancelled".into()
    /// }
    /// ```
    pub fn cancelled(&self) -> Cancelled {
        self.call.cancellation.cancelled()
    }

    /// Asks the user to fill in a form made from `T`, with `message` as the question, and
    /// gives what they did: [`Elicitation::Accepted`] with the answer, [`Declined`], or
    /// [`Cancelled`] (dismissed).
    ///
    /// The form is `T`'s JSON Schema as an MCP form ([`form_schema`](crate::host::form_schema)):
    /// a struct whose fields are strings (formats email, uri, date, date-time; lengths),
    /// numbers and integers (bounds), booleans, or enums of strings (one, or a list of
    /// several); `Option` fields may be left empty, and `#[serde(default)]` fields show their
    /// default. Any other `T` is refused with [`ElicitError::NotAForm`], naming each field
    /// that does not fit, before anyone is asked. An answer that does not fit the form or
    /// `T` is [`ElicitError::InvalidAnswer`].
    ///
    /// Over MCP it is an `elicitation/create` to a client that declared elicitation (on
    /// protocols before 2026-07-28). Elsewhere, the application's host answers
    /// ([`RegistryBuilder::host`](crate::RegistryBuilder::host),
    /// [`RunExt::with_host`](crate::server::RunExt::with_host)); without one, it is
    /// [`ElicitError::NotSupported`].
    ///
    /// An answer that does not come in time (by default 10 minutes:
    /// [`RegistryBuilder::elicit_timeout`](crate::RegistryBuilder::elicit_timeout),
    /// [`CallOptions::with_elicit_timeout`]) is [`ElicitError::TimedOut`]: a client that
    /// never answers does not hold the call for ever.
    ///
    /// [`Declined`]: Elicitation::Declined
    /// [`Cancelled`]: Elicitation::Cancelled
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, host::Elicitation, ToolContext, call::ToolError};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Confirm {
    ///     /// Deploy even though the tests are red.
    ///     force: bool,
    /// }
    ///
    /// /// Deploy a project.
    /// #[tool(public)]
    /// async fn deploy(ctx: &ToolContext, project: String) -> Result<String, ToolError> {
    ///     match ctx.elicit::<Confirm>(format!("The tests of {project} are red. Deploy?")).await? {
    ///         Elicitation::Accepted(Confirm { force: true }) => Ok(format!("{project} deployed")),
    ///         _ => Ok("nothing deployed".into()),
    ///     }
    /// }
    /// ```
    pub async fn elicit<T>(&self, message: impl Into<String>) -> Result<Elicitation<T>, ElicitError>
    where
        T: DeserializeOwned + JsonSchema,
    {
        let schema = form_schema::<T>()?;
        let request = ElicitRequest::new(message, schema.clone());
        let wait = self.call.waits.elicit;
        let asked = self.call.host.elicit(&self.info(), request);
        let answer = with_deadline(asked, wait)
            .await
            .ok_or(ElicitError::TimedOut(wait))??;
        match answer {
            Elicitation::Accepted(content) => {
                check_answer(&schema, &content).map_err(ElicitError::InvalidAnswer)?;
                let value = serde_path_to_error::deserialize(&content)
                    .map_err(|error| ElicitError::InvalidAnswer(error.to_string()))?;
                Ok(Elicitation::Accepted(value))
            }
            Elicitation::Declined => Ok(Elicitation::Declined),
            Elicitation::Cancelled => Ok(Elicitation::Cancelled),
        }
    }

    /// Asks the client's model for a reply to `request`. Over MCP it is a
    /// `sampling/createMessage` to a client that declared sampling (on protocols before
    /// 2026-07-28; the client may show it to its user, change it, or refuse). Elsewhere the
    /// application's host answers; without one, it is [`SampleError::NotSupported`]. A reply
    /// that does not come in time (by default 2 minutes:
    /// [`RegistryBuilder::sample_timeout`](crate::RegistryBuilder::sample_timeout),
    /// [`CallOptions::with_sample_timeout`]) is [`SampleError::TimedOut`].
    ///
    /// ```
    /// use registry_core::{tool, host::SampleRequest, ToolContext, call::ToolError};
    ///
    /// /// Summarize a build log.
    /// #[tool(public)]
    /// async fn summarize(ctx: &ToolContext, log: String) -> Result<String, ToolError> {
    ///     let request = SampleRequest::new(100)
    ///         .with_system_prompt("Summarize build logs in one sentence.")
    ///         .user(log);
    ///     Ok(ctx.sample(request).await?.text())
    /// }
    /// ```
    pub async fn sample(&self, request: SampleRequest) -> Result<SampleReply, SampleError> {
        let wait = self.call.waits.sample;
        let asked = self.call.host.sample(&self.info(), request);
        with_deadline(asked, wait)
            .await
            .ok_or(SampleError::TimedOut(wait))?
    }
}

/// The host of calls nobody gave one: `tracing` for progress and logs, "not supported" for
/// questions and sampling.
pub(crate) fn default_host() -> Arc<dyn CallHost> {
    static DEFAULT: OnceLock<Arc<dyn CallHost>> = OnceLock::new();
    DEFAULT.get_or_init(|| Arc::new(DefaultHost)).clone()
}
