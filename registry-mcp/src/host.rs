//! The host of one `tools/call`: what its tool reports and asks goes to the MCP client that
//! made the call, and what the client cannot take to the run's own host.
//!
//! - **Progress** (`ToolContext::progress`): `notifications/progress` with the request's
//!   progress token, if it carried one; each report must grow (MCP requires it), so one that
//!   does not is passed on instead. Without a token, the run's host takes it (by default a
//!   `tracing` event).
//! - **Logs** (`ToolContext::log`): `notifications/message` (logger: the tool's name) if the
//!   level is at least the client's: the request's own (`_meta`
//!   `io.modelcontextprotocol/logLevel`, protocol 2026-07-28), else the one the connection set
//!   with `logging/setLevel`, else [`ServerOptions::log_level`]. Below it, the run's host
//!   takes it. On 2026-07-28 a request without its own level gets no logs (SEP-2575): the
//!   run's host takes them all.
//! - **Questions** (`ToolContext::elicit`): `elicitation/create` (form mode) if the client
//!   declared elicitation and the protocol allows requests from server to client (before
//!   2026-07-28); answered within [`ServerOptions::approval_timeout`]. Otherwise the run's
//!   host is asked; if it cannot either, "not supported", saying why.
//! - **Sampling** (`ToolContext::sample`): `sampling/createMessage` under the same
//!   conditions, with the `sampling` capability; answered within
//!   [`ServerOptions::sampling_timeout`], else withdrawn (`SampleError::TimedOut`).
//!
//! Notifications keep their order and are all sent before the call's result. Requests to the
//! client are tied to the `tools/call` they serve (over HTTP they ride its response stream),
//! and run on the server's runtime, so that a synchronous tool may wait for them on its own
//! thread; when the call ends first (cancelled, past its deadline), the client is told to
//! stop asking with `notifications/cancelled`.

// Logging and sampling are deprecated by SEP-2577 in rmcp, and still part of every protocol
// version this server speaks before 2026-07-28.
#![allow(deprecated)]

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use registry_core::{
    definition::BoxFuture,
    host::{
        CallHost, CallInfo, ElicitError, ElicitRequest, Elicitation, LogLevel, Progress,
        SampleContent, SampleError, SampleReply, SampleRequest, SampleRole,
    },
};
use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ClientResult, CreateMessageRequest,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitationAction,
    ElicitationSchema, LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam,
    ProgressNotification, ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestId,
    Role, SamplingMessage, SamplingMessageContentBlock, ServerNotification, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::options::ServerOptions;

/// What one connection (a stdio process, an HTTP session) chose: the log level it set with
/// `logging/setLevel`.
#[derive(Debug, Default)]
pub(crate) struct Session {
    log_level: Mutex<Option<LogLevel>>,
}

impl Session {
    /// Remembers the level the client set.
    pub(crate) fn set_log_level(&self, level: LogLevel) {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(level);
    }

    fn log_level(&self) -> Option<LogLevel> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The registry's level of rmcp's.
pub(crate) fn level_of(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

/// rmcp's level of the registry's.
fn logging_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// A message for the task that sends a call's notifications, in order.
enum Outgoing {
    Notification(ServerNotification),
    /// Answered once everything before it was sent.
    Flush(oneshot::Sender<()>),
}

/// The host of one `tools/call`.
pub(crate) struct McpHost {
    peer: Peer<RoleServer>,
    /// The `tools/call` request, which requests to the client are tied to.
    request: RequestId,
    progress_token: Option<ProgressToken>,
    /// The least level sent to the client; `None`: no logs to the client.
    log_level: Option<LogLevel>,
    /// Why the client cannot be asked a question, if it cannot.
    no_elicitation: Option<&'static str>,
    /// Why the client's model cannot be asked, if it cannot.
    no_sampling: Option<&'static str>,
    question_timeout: Duration,
    sampling_timeout: Duration,
    runtime: tokio::runtime::Handle,
    /// The run's own host, for what the client cannot take.
    fallback: Arc<dyn CallHost>,
    outgoing: Arc<Lane>,
    last_progress: Mutex<Option<f64>>,
}

/// Where a call's notifications go, in order: a task of its own, started with the first
/// one (most calls send none, and then cost no task and no wait at their end).
struct Lane {
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    sender: OnceLock<mpsc::UnboundedSender<Outgoing>>,
}

impl Lane {
    fn send(&self, notification: ServerNotification) {
        let sender = self.sender.get_or_init(|| {
            let (sender, queue) = mpsc::unbounded_channel();
            self.runtime.spawn(send_in_order(self.peer.clone(), queue));
            sender
        });
        // Fails only once the connection's task is gone: nobody is listening any more.
        let _ = sender.send(Outgoing::Notification(notification));
    }
}

/// Waits, at the end of a call, for its notifications to be sent.
pub(crate) struct Flush(Arc<Lane>);

impl Flush {
    /// Returns once every notification of the call made so far was handed to the transport
    /// (at once if it sent none).
    pub(crate) async fn wait(self) {
        let Some(sender) = self.0.sender.get() else {
            return;
        };
        let (done, sent) = oneshot::channel();
        if sender.send(Outgoing::Flush(done)).is_ok() {
            let _ = sent.await;
        }
    }
}

impl McpHost {
    /// The host of the call `context` serves, passing to `fallback` what the client cannot
    /// take; and what waits for its notifications.
    pub(crate) fn new(
        context: &RequestContext<RoleServer>,
        session: &Session,
        options: &ServerOptions,
        fallback: Arc<dyn CallHost>,
    ) -> (McpHost, Flush) {
        let capabilities = context.client_capabilities();
        let modern = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let no_requests = "protocol 2026-07-28 allows no requests from server to client";
        let no_elicitation = if !can_elicit_form(capabilities.as_ref()) {
            Some("the MCP client did not declare the elicitation capability (form mode)")
        } else if modern {
            Some(no_requests)
        } else {
            None
        };
        let no_sampling = if capabilities
            .as_ref()
            .is_none_or(|capabilities| capabilities.sampling.is_none())
        {
            Some("the MCP client did not declare the sampling capability")
        } else if modern {
            Some(no_requests)
        } else {
            None
        };
        // On 2026-07-28 only the request's own `_meta` level lets logs reach the client
        // (SEP-2575: no `notifications/message` for a request that set none); before it, the
        // level the connection set, else the server's.
        let log_level = match context.meta.log_level().map(level_of) {
            Some(level) => Some(level),
            None if modern => None,
            None => Some(session.log_level().unwrap_or(options.log_level)),
        };
        let runtime = tokio::runtime::Handle::current();
        let outgoing = Arc::new(Lane {
            peer: context.peer.clone(),
            runtime: runtime.clone(),
            sender: OnceLock::new(),
        });
        let host = McpHost {
            peer: context.peer.clone(),
            request: context.id.clone(),
            progress_token: context.meta.get_progress_token(),
            log_level,
            no_elicitation,
            no_sampling,
            question_timeout: options.approval_timeout,
            sampling_timeout: options.sampling_timeout,
            runtime,
            fallback,
            outgoing: outgoing.clone(),
            last_progress: Mutex::new(None),
        };
        (host, Flush(outgoing))
    }

    fn notify(&self, notification: ServerNotification) {
        self.outgoing.send(notification);
    }

    /// Sends `request` to the client, tied to the `tools/call` it serves, from the server's
    /// runtime; `None` if the call ended before the answer came (the client is then told to
    /// stop).
    fn ask(
        &self,
        mut request: ServerRequest,
        timeout: Option<Duration>,
    ) -> BoxFuture<'static, Result<ClientResult, ServiceError>> {
        use rmcp::model::GetExtensions;
        request
            .extensions_mut()
            .insert(OriginatingRequestId(self.request.clone()));
        let peer = self.peer.clone();
        let (answer, answered) = oneshot::channel();
        self.runtime.spawn(async move {
            let mut options = PeerRequestOptions::no_options();
            options.timeout = timeout;
            let handle = match peer.send_request_with_option(request, options).await {
                Ok(handle) => handle,
                Err(error) => {
                    let _ = answer.send(Err(error));
                    return;
                }
            };
            let id = handle.id.clone();
            let mut answer = answer;
            let result = tokio::select! {
                result = handle.await_response() => Some(result),
                () = answer.closed() => None,
            };
            match result {
                Some(result) => {
                    let _ = answer.send(result);
                }
                None => {
                    let reason = "the tool call that asked ended".to_owned();
                    let cancel = CancelledNotificationParam::new(Some(id), Some(reason));
                    let _ = peer.notify_cancelled(cancel).await;
                }
            }
        });
        Box::pin(async move { answered.await.unwrap_or(Err(ServiceError::TransportClosed)) })
    }
}

/// Sends a call's notifications, one after the other, until the call's host is gone.
async fn send_in_order(peer: Peer<RoleServer>, mut queue: mpsc::UnboundedReceiver<Outgoing>) {
    while let Some(outgoing) = queue.recv().await {
        match outgoing {
            Outgoing::Notification(notification) => {
                if let Err(error) = peer.send_notification(notification).await {
                    tracing::debug!(%error, "a tool's notification could not be sent");
                }
            }
            Outgoing::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Whether the client declared form elicitation (an empty `elicitation` capability means form,
/// as before modes existed).
pub(crate) fn can_elicit_form(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|capabilities| capabilities.elicitation.as_ref())
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

impl CallHost for McpHost {
    fn progress(&self, call: &CallInfo<'_>, progress: &Progress) {
        let Some(token) = &self.progress_token else {
            return self.fallback.progress(call, progress);
        };
        {
            let mut last = self
                .last_progress
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|last| progress.done <= last) || !progress.done.is_finite() {
                drop(last);
                tracing::debug!(
                    tool = ?call.tool_name,
                    done = progress.done,
                    "progress that does not grow is not sent to the client"
                );
                return self.fallback.progress(call, progress);
            }
            *last = Some(progress.done);
        }
        let mut params = ProgressNotificationParam::new(token.clone(), progress.done);
        if let Some(total) = progress.total {
            params = params.with_total(total);
        }
        if let Some(message) = &progress.message {
            params = params.with_message(message.clone());
        }
        self.notify(ServerNotification::ProgressNotification(
            ProgressNotification::new(params),
        ));
    }

    fn log(&self, call: &CallInfo<'_>, level: LogLevel, message: &str) {
        if self.log_level.is_none_or(|least| level < least) {
            return self.fallback.log(call, level, message);
        }
        let params = LoggingMessageNotificationParam::new(logging_level(level), json!(message))
            .with_logger(call.tool_name);
        self.notify(ServerNotification::LoggingMessageNotification(
            LoggingMessageNotification::new(params),
        ));
    }

    fn elicit<'a>(
        &'a self,
        call: &CallInfo<'_>,
        request: ElicitRequest,
    ) -> BoxFuture<'a, Result<Elicitation<Value>, ElicitError>> {
        if let Some(why) = self.no_elicitation {
            let asked = self.fallback.elicit(call, request);
            return Box::pin(async move {
                match asked.await {
                    Err(ElicitError::NotSupported(_)) => Err(ElicitError::NotSupported(format!(
                        "{why}, and the application installed no host that can ask"
                    ))),
                    other => other,
                }
            });
        }
        let schema = match serde_json::from_value::<ElicitationSchema>(request.schema) {
            Ok(schema) => schema,
            Err(error) => {
                let error = ElicitError::Failed(format!("the form is not an MCP form: {error}"));
                return Box::pin(std::future::ready(Err(error)));
            }
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: request.message,
            requested_schema: schema,
        };
        let question = ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(params));
        let timeout = self.question_timeout;
        let asked = self.ask(question, Some(timeout));
        Box::pin(async move {
            let result = match asked.await {
                Ok(ClientResult::ElicitResult(result)) => result,
                Ok(_) => {
                    return Err(ElicitError::Failed(
                        "the client answered something else".into(),
                    ));
                }
                Err(ServiceError::Timeout { .. }) => return Err(ElicitError::TimedOut(timeout)),
                Err(error) => return Err(ElicitError::Failed(failure(&error, timeout))),
            };
            match result.action {
                ElicitationAction::Accept => Ok(Elicitation::Accepted(
                    result.content.unwrap_or_else(|| json!({})),
                )),
                ElicitationAction::Decline => Ok(Elicitation::Declined),
                ElicitationAction::Cancel => Ok(Elicitation::Cancelled),
                // `ElicitationAction` is non-exhaustive: an action this server does not know
                // is no answer.
                other => Err(ElicitError::Failed(format!(
                    "the client answered with an unknown action ({other:?})"
                ))),
            }
        })
    }

    fn sample<'a>(
        &'a self,
        call: &CallInfo<'_>,
        request: SampleRequest,
    ) -> BoxFuture<'a, Result<SampleReply, SampleError>> {
        if let Some(why) = self.no_sampling {
            let asked = self.fallback.sample(call, request);
            return Box::pin(async move {
                match asked.await {
                    Err(SampleError::NotSupported(_)) => Err(SampleError::NotSupported(format!(
                        "{why}, and the application installed no host that can ask a model"
                    ))),
                    other => other,
                }
            });
        }
        let params = match create_message(request) {
            Ok(params) => params,
            Err(error) => return Box::pin(std::future::ready(Err(SampleError::Failed(error)))),
        };
        let timeout = self.sampling_timeout;
        let asked = self.ask(
            ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params)),
            Some(timeout),
        );
        Box::pin(async move {
            match asked.await {
                Ok(ClientResult::CreateMessageResult(result)) => Ok(reply_of(*result)),
                Ok(_) => Err(SampleError::Failed(
                    "the client answered something else".into(),
                )),
                Err(ServiceError::Timeout { .. }) => Err(SampleError::TimedOut(timeout)),
                Err(error) => Err(SampleError::Failed(failure(&error, timeout))),
            }
        })
    }
}

/// The MCP request for a sampling request.
fn create_message(request: SampleRequest) -> Result<CreateMessageRequestParams, String> {
    let messages = request
        .messages
        .into_iter()
        .map(|message| {
            let role = match message.role {
                SampleRole::User => Role::User,
                SampleRole::Assistant => Role::Assistant,
            };
            let blocks = message
                .content
                .into_iter()
                .map(block_of)
                .collect::<Result<Vec<_>, String>>()?;
            Ok(SamplingMessage::new_multiple(role, blocks))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut params = CreateMessageRequestParams::new(messages, request.max_tokens);
    params.system_prompt = request.system_prompt;
    params.validate()?;
    Ok(params)
}

fn block_of(content: SampleContent) -> Result<SamplingMessageContentBlock, String> {
    let json = match content {
        SampleContent::Text(text) => return Ok(SamplingMessageContentBlock::text(text)),
        SampleContent::Image { data, mime_type } => {
            json!({"type": "image", "data": data, "mimeType": mime_type})
        }
        SampleContent::Audio { data, mime_type } => {
            json!({"type": "audio", "data": data, "mimeType": mime_type})
        }
        SampleContent::Other(json) => json,
        // `SampleContent` is non-exhaustive.
        other => return Err(format!("content MCP sampling cannot carry: {other:?}")),
    };
    serde_json::from_value(json)
        .map_err(|error| format!("content MCP sampling cannot carry: {error}"))
}

/// The reply of a client's `CreateMessageResult`.
fn reply_of(result: CreateMessageResult) -> SampleReply {
    let content = result
        .message
        .content
        .into_vec()
        .into_iter()
        .map(|block| match block {
            SamplingMessageContentBlock::Text(text) => SampleContent::Text(text.text),
            SamplingMessageContentBlock::Image(image) => SampleContent::Image {
                data: image.data,
                mime_type: image.mime_type,
            },
            SamplingMessageContentBlock::Audio(audio) => SampleContent::Audio {
                data: audio.data,
                mime_type: audio.mime_type,
            },
            other => SampleContent::Other(serde_json::to_value(other).unwrap_or_default()),
        })
        .collect();
    let mut reply = SampleReply::new(result.model, content);
    if let Some(reason) = result.stop_reason {
        reply = reply.with_stop_reason(reason);
    }
    reply
}

/// Why a request to the client failed, in a few words.
pub(crate) fn failure(error: &ServiceError, wait: Duration) -> String {
    match error {
        ServiceError::Timeout { .. } => format!("no one answered within {} s", wait.as_secs()),
        ServiceError::McpError(data) => {
            format!("the client refused the request: {}", data.message)
        }
        ServiceError::TransportClosed => "the connection closed before an answer came".to_owned(),
        other => format!("the request could not be sent: {other}"),
    }
}
