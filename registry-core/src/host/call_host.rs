//! What a running tool can ask of whoever runs it: report progress, log, ask the user a
//! question, ask the client's model. A [`CallHost`] answers; over MCP it is the client.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::shared::subject::Subject;
use crate::shared::tool_error::ToolError;

/// The `tracing` target of the progress and log events of tools, when no host takes them.
pub const TOOL_EVENT_TARGET: &str = "registry_core::tool";

/// What `elicit` and `sample` give: the same as [`BoxFuture`](crate::definition::BoxFuture), spelled out
/// here because `declare` (where that lives) depends on this step.
type HostFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a running tool's progress, logs, questions and sampling requests go.
///
/// A tool reaches it through its [`ToolContext`](crate::ToolContext)
/// ([`progress`](crate::ToolContext::progress), [`log`](crate::ToolContext::log),
/// [`elicit`](crate::ToolContext::elicit), [`sample`](crate::ToolContext::sample)). Each
/// method has a default, so a host implements only what it can do:
///
/// - `progress` and `log` become `tracing` events (target [`TOOL_EVENT_TARGET`]);
/// - `elicit` and `sample` answer [`ElicitError::NotSupported`] and
///   [`SampleError::NotSupported`].
///
/// A call's host is, first found: the one given with the call
/// ([`CallOptions::with_host`](crate::call::CallOptions::with_host)), the run's
/// ([`RunExt::with_host`](crate::server::RunExt::with_host)), the registry's
/// ([`RegistryBuilder::host`](crate::RegistryBuilder::host)), the defaults. `registry-mcp`
/// gives each `tools/call` a host that speaks to the MCP client (progress notifications, log
/// messages, `elicitation/create`, `sampling/createMessage`) and passes what the client cannot
/// take to the run's host. An agent application installs its own to answer questions from its
/// own UI.
///
/// Progress and logs are fire-and-forget: these methods must not block. The futures of
/// `elicit` and `sample` ([`BoxFuture`](crate::definition::BoxFuture)s) may be polled outside any async runtime (a synchronous tool waits on
/// them with a small local executor): a host built on a runtime should spawn its work there.
///
/// ```
/// use registry_core::{
///     definition::BoxFuture, host::CallHost, host::CallInfo, host::ElicitError, host::ElicitRequest, host::Elicitation, Registry,
/// };
/// use serde_json::{json, Value};
///
/// /// Answers every question with a fixed form, as a UI would after asking.
/// struct Kiosk;
///
/// impl CallHost for Kiosk {
///     fn elicit<'a>(
///         &'a self,
///         call: &CallInfo<'_>,
///         request: ElicitRequest,
///     ) -> BoxFuture<'a, Result<Elicitation<Value>, ElicitError>> {
///         println!("{} asks: {}", call.tool_name, request.message);
///         Box::pin(async { Ok(Elicitation::Accepted(json!({"confirm": true}))) })
///     }
/// }
///
/// let registry = Registry::builder().host(Kiosk).allow_empty().build().unwrap();
/// # let _ = registry;
/// ```
pub trait CallHost: Send + Sync + 'static {
    /// The tool made progress. Default: a `tracing` event at `INFO`.
    fn progress(&self, call: &CallInfo<'_>, progress: &Progress) {
        tracing::info!(
            target: TOOL_EVENT_TARGET,
            run_id = %crate::shared::logged::Logged(call.run_id),
            call_id = %crate::shared::logged::Logged(call.call_id),
            tool = %crate::shared::logged::Logged(call.tool_name),
            done = progress.done,
            total = progress.total,
            message = progress.message.as_deref().map(crate::shared::logged::Logged::field),
            "progress"
        );
    }

    /// The tool logged `message` at `level`. Default: a `tracing` event at the nearest level
    /// (`debug`; `info` and `notice`; `warning`; `error` and above).
    fn log(&self, call: &CallInfo<'_>, level: LogLevel, message: &str) {
        macro_rules! event {
            ($macro:ident) => {
                tracing::$macro!(
                    target: TOOL_EVENT_TARGET,
                    run_id = %crate::shared::logged::Logged(call.run_id),
                    call_id = %crate::shared::logged::Logged(call.call_id),
                    tool = %crate::shared::logged::Logged(call.tool_name),
                    level = level.as_str(),
                    "{}",
                    message.escape_debug()
                )
            };
        }
        match level {
            LogLevel::Debug => event!(debug),
            LogLevel::Info | LogLevel::Notice => event!(info),
            LogLevel::Warning => event!(warn),
            LogLevel::Error | LogLevel::Critical | LogLevel::Alert | LogLevel::Emergency => {
                event!(error);
            }
        }
    }

    /// Asks the user to fill in the form `request.schema` (an MCP form: a flat object of
    /// primitive properties, see [`form_schema`](crate::host::form_schema)), with
    /// `request.message` as the question; answers what the user did, the form's content as
    /// JSON when accepted. Default: [`ElicitError::NotSupported`].
    fn elicit<'a>(
        &'a self,
        call: &CallInfo<'_>,
        request: ElicitRequest,
    ) -> HostFuture<'a, Result<Elicitation<Value>, ElicitError>> {
        let _ = (call, request);
        Box::pin(std::future::ready(Err(ElicitError::NotSupported(
            "no host that can ask the user was installed".to_owned(),
        ))))
    }

    /// Asks the client's model for a completion. Default: [`SampleError::NotSupported`].
    fn sample<'a>(
        &'a self,
        call: &CallInfo<'_>,
        request: SampleRequest,
    ) -> HostFuture<'a, Result<SampleReply, SampleError>> {
        let _ = (call, request);
        Box::pin(std::future::ready(Err(SampleError::NotSupported(
            "no host that can ask a model was installed".to_owned(),
        ))))
    }
}

/// A shared host is a host: install an `Arc` of one and keep a clone to look at it.
impl<H: CallHost + ?Sized> CallHost for std::sync::Arc<H> {
    fn progress(&self, call: &CallInfo<'_>, progress: &Progress) {
        (**self).progress(call, progress);
    }

    fn log(&self, call: &CallInfo<'_>, level: LogLevel, message: &str) {
        (**self).log(call, level, message);
    }

    fn elicit<'a>(
        &'a self,
        call: &CallInfo<'_>,
        request: ElicitRequest,
    ) -> HostFuture<'a, Result<Elicitation<Value>, ElicitError>> {
        (**self).elicit(call, request)
    }

    fn sample<'a>(
        &'a self,
        call: &CallInfo<'_>,
        request: SampleRequest,
    ) -> HostFuture<'a, Result<SampleReply, SampleError>> {
        (**self).sample(call, request)
    }
}

/// The host of calls for which nobody installed one: every default of [`CallHost`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct DefaultHost;

impl CallHost for DefaultHost {}

/// Which call a host serves.
///
/// ```
/// use registry_core::{host::CallHost, host::CallInfo, host::LogLevel};
///
/// struct Console;
///
/// impl CallHost for Console {
///     fn log(&self, call: &CallInfo<'_>, level: LogLevel, message: &str) {
///         eprintln!("[{level}] {} ({}): {message}", call.tool_name, call.subject.tenant());
///     }
/// }
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CallInfo<'a> {
    /// The run's id (empty outside a run).
    pub run_id: &'a str,
    /// The call's id.
    pub call_id: &'a str,
    /// The tool's name.
    pub tool_name: &'a str,
    /// The subject the run acts for.
    pub subject: &'a Subject,
}

/// How far a tool got: [`ToolContext::progress`](crate::ToolContext::progress).
///
/// ```
/// use registry_core::{host::CallHost, host::CallInfo, host::Progress};
///
/// struct Bar;
///
/// impl CallHost for Bar {
///     fn progress(&self, _call: &CallInfo<'_>, progress: &Progress) {
///         if let Some(total) = progress.total {
///             eprintln!("{:.0}%", 100.0 * progress.done / total);
///         }
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Progress {
    /// What is done so far; it should grow with each report, even without a total.
    pub done: f64,
    /// What "all done" is, if known.
    pub total: Option<f64>,
    /// What is going on, for a person; `None` when the tool gave an empty message.
    pub message: Option<String>,
}

impl Progress {
    pub(crate) fn new(done: f64, total: Option<f64>, message: String) -> Progress {
        Progress {
            done,
            total,
            message: (!message.is_empty()).then_some(message),
        }
    }
}

/// The severity of a tool's log message: MCP's eight levels (those of syslog, RFC 5424),
/// ordered from `Debug` up.
///
/// ```
/// use registry_core::host::LogLevel;
///
/// assert!(LogLevel::Warning > LogLevel::Info);
/// assert_eq!(LogLevel::Critical.as_str(), "critical");
/// assert_eq!("notice".parse::<LogLevel>(), Ok(LogLevel::Notice));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed information for debugging.
    Debug,
    /// Something happened, as expected.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A critical condition.
    Critical,
    /// Someone must act at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, from `Debug` up.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level as MCP writes it: `debug`, `info`, `notice`, `warning`, `error`,
    /// `critical`, `alert`, `emergency`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for LogLevel {
    type Err = String;

    fn from_str(text: &str) -> Result<LogLevel, String> {
        LogLevel::ALL
            .into_iter()
            .find(|level| level.as_str() == text)
            .ok_or_else(|| format!("{text:?} is not a log level"))
    }
}

/// A question for the user: [`ToolContext::elicit`](crate::ToolContext::elicit) made it from
/// the type of the answer.
///
/// ```
/// use registry_core::{host::ElicitRequest, host::form_schema};
/// # use schemars::JsonSchema;
/// # #[derive(JsonSchema)]
/// # struct Confirm { confirm: bool }
/// // What a host receives for `ctx.elicit::<Confirm>("Deploy now?")`:
/// let request = ElicitRequest::new("Deploy now?", form_schema::<Confirm>().unwrap());
/// assert_eq!(request.schema["properties"]["confirm"]["type"], "boolean");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitRequest {
    /// The question, for a person.
    pub message: String,
    /// The form to fill in: an MCP `requestedSchema`.
    pub schema: Value,
}

impl ElicitRequest {
    /// A question with its form (for testing a host).
    pub fn new(message: impl Into<String>, schema: Value) -> ElicitRequest {
        ElicitRequest {
            message: message.into(),
            schema,
        }
    }
}

/// What the user did with a question: filled in the form, declined it, or dismissed it.
///
/// ```
/// use registry_core::host::Elicitation;
///
/// let answer: Elicitation<u32> = Elicitation::Accepted(3);
/// assert_eq!(answer.map(|n| n * 2).accepted(), Some(6));
/// assert_eq!(Elicitation::<u32>::Declined.accepted(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicitation<T> {
    /// The user submitted the form: its content.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user dismissed the question without choosing.
    Cancelled,
}

impl<T> Elicitation<T> {
    /// The answer, if the form was submitted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicitation::Accepted(value) => Some(value),
            Elicitation::Declined | Elicitation::Cancelled => None,
        }
    }

    /// The same outcome with the accepted answer mapped.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Elicitation<U> {
        match self {
            Elicitation::Accepted(value) => Elicitation::Accepted(f(value)),
            Elicitation::Declined => Elicitation::Declined,
            Elicitation::Cancelled => Elicitation::Cancelled,
        }
    }
}

/// Why a question could not be asked or answered.
///
/// A tool returning `Result<_, ToolError>` can use `?` on it (it becomes
/// [`ToolError::Failed`](crate::call::ToolError::Failed) with this text).
///
/// ```
/// use registry_core::{host::ElicitError, ToolContext};
/// # use schemars::JsonSchema;
/// # use serde::Deserialize;
/// # #[derive(Debug, Deserialize, JsonSchema)]
/// # struct Confirm { confirm: bool }
///
/// // Outside MCP and without a host of the application's, nobody can be asked.
/// let ctx = ToolContext::new("call-1", "deploy");
/// let error = pollster::block_on(ctx.elicit::<Confirm>("Deploy now?")).unwrap_err();
/// assert!(matches!(error, ElicitError::NotSupported(_)));
/// assert!(error.to_string().starts_with("asking the user is not supported here"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElicitError {
    /// Nobody can be asked here: the MCP client did not declare elicitation, or there is no
    /// MCP client and the application installed no host that can ask. The text says which.
    #[error("asking the user is not supported here: {0}")]
    NotSupported(String),
    /// The answer's type cannot be a form.
    #[error(transparent)]
    NotAForm(#[from] FormError),
    /// The user's answer does not fit the form or the type (the client did not check it).
    #[error("the user's answer does not fit the question: {0}")]
    InvalidAnswer(String),
    /// The question was asked but no answer came: the connection closed, the client failed
    /// the request.
    #[error("no answer from the user: {0}")]
    Failed(String),
    /// No answer came within the call's time for questions
    /// ([`RegistryBuilder::elicit_timeout`](crate::RegistryBuilder::elicit_timeout),
    /// [`CallOptions::with_elicit_timeout`](crate::call::CallOptions::with_elicit_timeout); over
    /// MCP the server's `approval_timeout`). Nobody will answer this question now: go on
    /// without the answer, or fail.
    #[error("no answer from the user within {} s; the question was withdrawn", .0.as_secs_f64())]
    TimedOut(Duration),
}

/// How long a question ([`ToolContext::elicit`](crate::ToolContext::elicit)) waits for an
/// answer by default: 10 minutes.
pub const DEFAULT_ELICIT_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// How long a sampling request ([`ToolContext::sample`](crate::ToolContext::sample)) waits for
/// the model's reply by default: 2 minutes.
pub const DEFAULT_SAMPLE_TIMEOUT: Duration = Duration::from_secs(2 * 60);

/// A type that cannot be asked for as an MCP form, and why: [`form_schema`](crate::host::form_schema).
///
/// ```
/// use registry_core::host::form_schema;
/// # use schemars::JsonSchema;
///
/// #[derive(JsonSchema)]
/// struct Address { street: String }
///
/// #[derive(JsonSchema)]
/// struct Order { quantity: u32, address: Address }
///
/// let error = form_schema::<Order>().unwrap_err();
/// assert_eq!(error.problems, ["\"address\": a nested object"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{type_name} cannot be asked for as a form ({}): a form is a flat object whose fields are strings (formats email, uri, date, date-time), numbers, integers, booleans, or enums of strings (one, or a list for several)",
    .problems.join("; ")
)]
#[non_exhaustive]
pub struct FormError {
    /// The Rust type.
    pub type_name: String,
    /// What does not fit, a field at a time.
    pub problems: Vec<String>,
}

impl FormError {
    pub(crate) fn new(type_name: &str, problems: Vec<String>) -> FormError {
        FormError {
            type_name: type_name.to_owned(),
            problems,
        }
    }
}

/// A request for the client's model: [`ToolContext::sample`](crate::ToolContext::sample).
///
/// ```
/// use registry_core::host::SampleRequest;
///
/// let request = SampleRequest::new(200)
///     .with_system_prompt("You summarize build logs in one sentence.")
///     .user("step 1 ok\nstep 2 failed: disk full");
/// assert_eq!(request.messages.len(), 1);
/// assert_eq!(request.max_tokens, 200);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SampleRequest {
    /// The conversation so far, oldest first.
    pub messages: Vec<SampleMessage>,
    /// At most this many tokens in the reply.
    pub max_tokens: u32,
    /// The system prompt, if any (the client may ignore or change it).
    pub system_prompt: Option<String>,
}

impl SampleRequest {
    /// An empty conversation, for a reply of at most `max_tokens` tokens.
    pub fn new(max_tokens: u32) -> SampleRequest {
        SampleRequest {
            messages: Vec::new(),
            max_tokens,
            system_prompt: None,
        }
    }

    /// Adds a text message from the user.
    #[must_use]
    pub fn user(self, text: impl Into<String>) -> SampleRequest {
        self.message(SampleMessage::new(
            SampleRole::User,
            vec![SampleContent::Text(text.into())],
        ))
    }

    /// Adds a text message from the assistant.
    #[must_use]
    pub fn assistant(self, text: impl Into<String>) -> SampleRequest {
        self.message(SampleMessage::new(
            SampleRole::Assistant,
            vec![SampleContent::Text(text.into())],
        ))
    }

    /// Adds a message.
    #[must_use]
    pub fn message(mut self, message: SampleMessage) -> SampleRequest {
        self.messages.push(message);
        self
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> SampleRequest {
        self.system_prompt = Some(prompt.into());
        self
    }
}

/// One message of a [`SampleRequest`].
///
/// ```
/// use registry_core::{host::SampleContent, host::SampleMessage, host::SampleRole};
///
/// let message = SampleMessage::new(
///     SampleRole::User,
///     vec![SampleContent::Image { data: "iVBORw0KGgo=".into(), mime_type: "image/png".into() }],
/// );
/// assert_eq!(message.role, SampleRole::User);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SampleMessage {
    /// Who says it.
    pub role: SampleRole,
    /// What it says, one block or more.
    pub content: Vec<SampleContent>,
}

impl SampleMessage {
    /// A message of `role` made of `content`.
    pub fn new(role: SampleRole, content: Vec<SampleContent>) -> SampleMessage {
        SampleMessage { role, content }
    }
}

/// Who says a message of a sampling conversation.
///
/// ```
/// use registry_core::host::SampleRole;
///
/// assert_ne!(SampleRole::User, SampleRole::Assistant);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampleRole {
    /// The user (here: the tool, speaking for it).
    User,
    /// The model.
    Assistant,
}

/// A block of a sampling message or reply.
///
/// ```
/// use registry_core::host::SampleContent;
///
/// let block = SampleContent::Text("hello".into());
/// assert_eq!(block.as_text(), Some("hello"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SampleContent {
    /// Text.
    Text(String),
    /// An image, base64-encoded.
    Image {
        /// The bytes, in base64.
        data: String,
        /// Its MIME type, e.g. `image/png`.
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// The bytes, in base64.
        data: String,
        /// Its MIME type, e.g. `audio/wav`.
        mime_type: String,
    },
    /// A block of a kind this library does not model (an MCP tool use, say), as its JSON.
    Other(Value),
}

impl SampleContent {
    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            SampleContent::Text(text) => Some(text),
            _ => None,
        }
    }
}

/// The client model's reply to a [`SampleRequest`].
///
/// ```
/// use registry_core::{host::SampleContent, host::SampleReply};
///
/// let reply = SampleReply::new("claude-sonnet", vec![SampleContent::Text("Disk full.".into())])
///     .with_stop_reason("endTurn");
/// assert_eq!(reply.text(), "Disk full.");
/// assert_eq!(reply.stop_reason.as_deref(), Some("endTurn"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SampleReply {
    /// What the model said, one block or more.
    pub content: Vec<SampleContent>,
    /// The model that answered, as the client names it.
    pub model: String,
    /// Why it stopped (MCP: `endTurn`, `stopSequence`, `maxTokens`, ...), if said.
    pub stop_reason: Option<String>,
}

impl SampleReply {
    /// A reply of `model` made of `content`.
    pub fn new(model: impl Into<String>, content: Vec<SampleContent>) -> SampleReply {
        SampleReply {
            content,
            model: model.into(),
            stop_reason: None,
        }
    }

    /// Sets why the model stopped.
    #[must_use]
    pub fn with_stop_reason(mut self, reason: impl Into<String>) -> SampleReply {
        self.stop_reason = Some(reason.into());
        self
    }

    /// The text blocks of the reply, joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(SampleContent::as_text)
            .collect()
    }
}

/// Why the client's model could not be asked, or did not answer.
///
/// ```
/// use registry_core::{host::SampleError, host::SampleRequest, ToolContext};
///
/// let ctx = ToolContext::new("call-1", "summarize");
/// let error = pollster::block_on(ctx.sample(SampleRequest::new(100).user("hi"))).unwrap_err();
/// assert!(matches!(error, SampleError::NotSupported(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SampleError {
    /// No model can be asked here: the MCP client did not declare sampling, or there is no
    /// MCP client and the application installed no host that can ask one. The text says which.
    #[error("asking the client's model is not supported here: {0}")]
    NotSupported(String),
    /// The model was asked but no reply came: the client refused, the connection closed.
    #[error("the client's model did not answer: {0}")]
    Failed(String),
    /// No reply came within the call's time for sampling
    /// ([`RegistryBuilder::sample_timeout`](crate::RegistryBuilder::sample_timeout),
    /// [`CallOptions::with_sample_timeout`](crate::call::CallOptions::with_sample_timeout); over MCP
    /// the server's `sampling_timeout`). The request was withdrawn: go on without the reply,
    /// or fail.
    #[error("the client's model did not answer within {} s; the request was withdrawn", .0.as_secs_f64())]
    TimedOut(Duration),
}

impl From<ElicitError> for ToolError {
    fn from(error: ElicitError) -> Self {
        ToolError::Failed(error.to_string())
    }
}

impl From<SampleError> for ToolError {
    fn from(error: SampleError) -> Self {
        ToolError::Failed(error.to_string())
    }
}
