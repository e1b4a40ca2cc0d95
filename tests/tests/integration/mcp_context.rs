//! What a running tool does through its `ToolContext`, served by `registry-mcp` to rmcp's
//! real client (and, where the wire itself must be read, to a client written by hand):
//! progress notifications only for a progress token, log messages at or above the client's
//! level, `notifications/cancelled` dropping an async tool and flagging a sync one (audited,
//! unanswered), questions (`elicitation/create`) and sampling (`sampling/createMessage`) for
//! clients that declared them and "not supported" or the application's host for others; and
//! the registry's tools served beside an application's resources and prompts in one server.

// Logging and sampling are deprecated by SEP-2577 in rmcp; this tests them.
#![allow(deprecated)]

use crate::mcp_support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_support::*;
use registry_core::server::RunExt;
use registry_core::{
    DynamicTool, ErrorKind, Registry, Subject,
    audit::AuditEvent,
    definition::BoxFuture,
    host::{
        CallHost, CallInfo, ElicitError, ElicitRequest, Elicitation, LogLevel, Progress,
        SampleRequest, form_schema,
    },
};
use registry_mcp::{HttpConfig, HttpServer, McpServer, Principal, ServerOptions, Tokens};
use registry_tests::{DropFlag, wait_until_cancelled};
use rmcp::model::ProtocolVersion;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    ListPromptsResult, ListResourcesResult, LoggingLevel, LoggingMessageNotificationParam,
    PaginatedRequestParams, ProgressNotificationParam, Prompt, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, SamplingCapability, SamplingMessage, ServerCapabilities, ServerConfig,
    SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, ServerHandler, ServiceExt,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::sync::mpsc;

/// Where to deploy.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Env {
    Staging,
    Production,
}

/// What the tool `ask` asks for.
#[derive(Debug, Deserialize, JsonSchema)]
struct Choice {
    /// The environment.
    env: Env,
    /// Tell the team.
    #[serde(default)]
    notify: bool,
}

/// An audited call: call id, tool, outcome.
type Audited = (String, String, Option<ErrorKind>);

/// What the tools report, and signal.
#[derive(Clone, Default)]
struct Probes {
    started: Arc<Mutex<Option<mpsc::UnboundedSender<&'static str>>>>,
    dropped: Arc<AtomicBool>,
    saw_flag: Arc<AtomicUsize>,
    audited: Arc<Mutex<Vec<Audited>>>,
}

impl Probes {
    fn started(&self) -> mpsc::UnboundedReceiver<&'static str> {
        let (sender, receiver) = mpsc::unbounded_channel();
        *self.started.lock().unwrap() = Some(sender);
        receiver
    }

    fn signal(&self, what: &'static str) {
        if let Some(sender) = &*self.started.lock().unwrap() {
            let _ = sender.send(what);
        }
    }

    /// The audited outcome of call `call_id`, once it was audited.
    async fn outcome_of(&self, call_id: &str) -> Option<ErrorKind> {
        within("the audit record", async {
            loop {
                let found = self
                    .audited
                    .lock()
                    .unwrap()
                    .iter()
                    .find(|(id, _, _)| id == call_id)
                    .map(|(_, _, outcome)| *outcome);
                if let Some(outcome) = found {
                    return outcome;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
    }
}

/// The tools of these tests, reporting to `probes`; `host`, if any, is the application's.
fn registry(probes: &Probes, host: Option<AppHost>) -> Registry {
    let mut builder = Registry::builder()
        .tool(
            DynamicTool::new("count", "Count to three, reporting progress.")
                .public()
                .read_only()
                .async_handler(|ctx, _args| async move {
                    for step in 1..=3 {
                        ctx.progress(f64::from(step), Some(3.0), format!("step {step}"));
                    }
                    Ok::<Value, String>(json!("counted"))
                }),
        )
        .tool(
            DynamicTool::new("chatty", "Log at every level.")
                .public()
                .read_only()
                .handler(|ctx, _args| {
                    for level in LogLevel::ALL {
                        ctx.log(level, format!("at {level}"));
                    }
                    Ok::<Value, String>(json!("said"))
                }),
        )
        .tool(
            DynamicTool::new("ask", "Ask where to deploy.")
                .public()
                .async_handler(|ctx, _args| async move {
                    match ctx.elicit::<Choice>("Where to?").await {
                        Ok(Elicitation::Accepted(choice)) => {
                            Ok(json!(format!("{:?} notify={}", choice.env, choice.notify)))
                        }
                        Ok(Elicitation::Declined) => Ok(json!("declined")),
                        Ok(Elicitation::Cancelled) => Ok(json!("dismissed")),
                        Err(error) => Err(error.to_string()),
                    }
                }),
        )
        .tool(
            DynamicTool::new("summarize", "Summarize with the client's model.")
                .public()
                .read_only()
                .async_handler(|ctx, _args| async move {
                    let request = SampleRequest::new(64)
                        .with_system_prompt("One sentence.")
                        .user("step 2 failed: disk full");
                    match ctx.sample(request).await {
                        Ok(reply) => Ok(json!(format!(
                            "{} ({}, {})",
                            reply.text(),
                            reply.model,
                            reply.stop_reason.unwrap_or_default()
                        ))),
                        Err(error) => Err(error.to_string()),
                    }
                }),
        );
    let (dropped, signal) = (probes.dropped.clone(), probes.clone());
    builder = builder.tool(
        DynamicTool::new("wait_async", "Wait for ever.")
            .public()
            .async_handler(move |_ctx, _args| {
                let guard = DropFlag(dropped.clone());
                signal.signal("async");
                async move {
                    let _guard = guard;
                    std::future::pending::<()>().await;
                    Ok::<Value, String>(json!("never"))
                }
            }),
    );
    builder = builder.tool(
        DynamicTool::new("ask_sync", "Ask where to deploy, from a thread.")
            .public()
            .timeout(STEP)
            .handler(|ctx, _args| {
                match pollster::block_on(ctx.elicit::<Choice>("Where to, synchronously?")) {
                    Ok(Elicitation::Accepted(choice)) => Ok(json!(format!("{:?}", choice.env))),
                    Ok(_) => Ok(json!("no")),
                    Err(error) => Err(error.to_string()),
                }
            }),
    );
    let (saw, signal) = (probes.saw_flag.clone(), probes.clone());
    builder = builder.tool(
        DynamicTool::new("wait_sync", "Wait until cancelled.")
            .public()
            .handler(move |ctx, _args| {
                signal.signal("sync");
                if wait_until_cancelled(ctx, STEP) {
                    saw.fetch_add(1, Ordering::SeqCst);
                }
                Ok::<Value, String>(json!("finished anyway"))
            }),
    );
    let audited = probes.audited.clone();
    builder = builder.audit_sink(move |event: &AuditEvent| {
        if let AuditEvent::Call(call) = event {
            audited
                .lock()
                .unwrap()
                .push((call.call_id.clone(), call.tool.clone(), call.outcome));
        }
    });
    if let Some(host) = host {
        builder = builder.host(host);
    }
    builder.build().unwrap()
}

/// The application's own host: records progress and logs, answers questions with staging.
#[derive(Clone, Default)]
struct AppHost {
    seen: Arc<Mutex<Vec<String>>>,
}

impl CallHost for AppHost {
    fn progress(&self, call: &CallInfo<'_>, progress: &Progress) {
        let line = format!("progress {} {}", call.tool_name, progress.done);
        self.seen.lock().unwrap().push(line);
    }

    fn log(&self, call: &CallInfo<'_>, level: LogLevel, message: &str) {
        let line = format!("log {} {level} {message}", call.tool_name);
        self.seen.lock().unwrap().push(line);
    }

    fn elicit<'a>(
        &'a self,
        _call: &CallInfo<'_>,
        request: ElicitRequest,
    ) -> BoxFuture<'a, Result<Elicitation<Value>, ElicitError>> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("asked {}", request.message));
        Box::pin(async { Ok(Elicitation::Accepted(json!({"env": "staging"}))) })
    }
}

/// What the test's person answers to questions.
#[derive(Clone, Debug)]
enum Reply {
    Accept(Value),
    Decline,
    Cancel,
}

/// An rmcp client: declares elicitation and sampling as told, answers questions with
/// `reply`, and records every question, sampling request, progress and log message.
#[derive(Clone)]
struct Person {
    elicitation: bool,
    sampling: bool,
    reply: Reply,
    questions: Arc<Mutex<Vec<(String, Value)>>>,
    samples: Arc<Mutex<Vec<CreateMessageRequestParams>>>,
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    logs: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
}

impl Person {
    fn new(elicitation: bool, sampling: bool, reply: Reply) -> Person {
        Person {
            elicitation,
            sampling,
            reply,
            questions: Arc::default(),
            samples: Arc::default(),
            progress: Arc::default(),
            logs: Arc::default(),
        }
    }

    /// A client that declares nothing.
    fn plain() -> Person {
        Person::new(false, false, Reply::Decline)
    }

    /// Waits until `count` log messages arrived, and gives them as `level logger data`.
    async fn logs(&self, count: usize) -> Vec<String> {
        within("log messages", async {
            while self.logs.lock().unwrap().len() < count {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        // Anything more would have come before: they are sent in order.
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.logs
            .lock()
            .unwrap()
            .iter()
            .map(|log| {
                let level = serde_json::to_value(log.level).unwrap();
                format!(
                    "{} {} {}",
                    level.as_str().unwrap(),
                    log.logger.as_deref().unwrap_or("-"),
                    log.data.as_str().unwrap_or_default()
                )
            })
            .collect()
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitation {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        if self.sampling {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        let mut config = ClientConfig::default();
        config.capabilities = capabilities;
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.questions.lock().unwrap().push(form_question(request));
        Ok(match &self.reply {
            Reply::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content.clone())
            }
            Reply::Decline => ElicitResult::new(ElicitationAction::Decline),
            Reply::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.samples.lock().unwrap().push(params);
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text("Disk full."),
            "client-model".to_owned(),
        )
        .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params);
    }
}

/// A server for `registry` (acme, as client `test`) that checks for changes only when told.
fn server(registry: &Registry) -> McpServer {
    let options = ServerOptions::default().with_poll_interval(Duration::from_secs(3600));
    McpServer::new(registry.clone(), options).unwrap()
}

/// An rmcp client connected in process to `server`.
async fn connect<H: ClientHandler>(
    server: &McpServer,
    handler: H,
) -> RunningService<RoleClient, H> {
    let client_io = spawn(server);
    within("initialize", handler.serve(tokio::io::split(client_io)))
        .await
        .expect("the client connects")
}

/// Serves one connection of `server` in process; the client's end of the pipe.
fn spawn(server: &McpServer) -> DuplexStream {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_io);
    let server = server.clone();
    tokio::spawn(async move {
        server
            .serve_io("test", Subject::new("acme"), read, write)
            .await
    });
    client_io
}

/// A client written by hand: JSON-RPC lines out, every line in, nothing hidden.
struct Raw {
    write: tokio::io::WriteHalf<DuplexStream>,
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
}

impl Raw {
    /// Connected to `server`, initialized (protocol 2025-06-18, no capabilities).
    async fn connect(server: &McpServer) -> Raw {
        let (read, write) = tokio::io::split(spawn(server));
        let mut raw = Raw {
            write,
            lines: BufReader::new(read).lines(),
        };
        raw.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            }}),
        )
        .await;
        let (_, initialized) = raw.until_response(0).await;
        assert!(initialized.get("result").is_some(), "{initialized}");
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        raw
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.flush().await.unwrap();
    }

    /// Every message up to the answer to request `id`, and that answer.
    async fn until_response(&mut self, id: i64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let line = within("a message", self.lines.next_line())
                .await
                .unwrap()
                .expect("the server keeps the connection open");
            let message: Value = serde_json::from_str(&line).unwrap();
            let is_answer = message.get("method").is_none() && message["id"] == json!(id);
            if is_answer {
                return (before, message);
            }
            before.push(message);
        }
    }

    async fn call(&mut self, id: i64, tool: &str, meta: Option<Value>) {
        let mut params = json!({"name": tool, "arguments": {}});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
            .await;
    }
}

fn methods(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .filter_map(|message| message["method"].as_str())
        .collect()
}

#[tokio::test]
async fn progress_is_sent_for_a_progress_token_and_only_then() {
    let app = AppHost::default();
    let server = server(&registry(&Probes::default(), Some(app.clone())));
    let mut raw = Raw::connect(&server).await;

    // With a token: three notifications, in order, before the result.
    raw.call(1, "count", Some(json!({"progressToken": "tok-1"})))
        .await;
    let (before, answer) = raw.until_response(1).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "counted",
        "{answer}"
    );
    let progress: Vec<&Value> = before
        .iter()
        .filter(|message| message["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{before:?}");
    for (step, notification) in progress.iter().enumerate() {
        let params = &notification["params"];
        assert_eq!(params["progressToken"], "tok-1");
        assert_eq!(params["progress"], json!(step as f64 + 1.0));
        assert_eq!(params["total"], json!(3.0));
        assert_eq!(params["message"], format!("step {}", step + 1));
    }
    assert!(
        app.seen.lock().unwrap().is_empty(),
        "the client took them all"
    );

    // Without: none on the wire; the application's host gets them.
    raw.call(2, "count", None).await;
    let (before, answer) = raw.until_response(2).await;
    assert_eq!(answer["result"]["content"][0]["text"], "counted");
    assert!(
        !methods(&before).contains(&"notifications/progress"),
        "{before:?}"
    );
    assert_eq!(
        *app.seen.lock().unwrap(),
        ["progress count 1", "progress count 2", "progress count 3"]
    );
}

#[tokio::test]
async fn rmcps_client_gets_the_progress_of_its_calls() {
    let server = server(&registry(&Probes::default(), None));
    let person = Person::plain();
    let client = connect(&server, person.clone()).await;
    let result = call(&client, "count", json!({})).await.unwrap();
    assert_eq!(text(&result), "counted");
    within("progress", async {
        while person.progress.lock().unwrap().len() < 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let progress = person.progress.lock().unwrap().clone();
    let reported: Vec<(f64, Option<f64>, Option<String>)> = progress
        .iter()
        .map(|p| (p.progress, p.total, p.message.clone()))
        .collect();
    assert_eq!(
        reported,
        [
            (1.0, Some(3.0), Some("step 1".to_owned())),
            (2.0, Some(3.0), Some("step 2".to_owned())),
            (3.0, Some(3.0), Some("step 3".to_owned())),
        ]
    );
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn logs_reach_the_client_at_or_above_its_level() {
    let app = AppHost::default();
    let server = server(&registry(&Probes::default(), Some(app.clone())));

    // Without `logging/setLevel`: info and above (`ServerOptions::log_level`).
    let default = Person::plain();
    let client = connect(&server, default.clone()).await;
    let info = client.peer().peer_info().unwrap();
    assert!(info.capabilities.logging.is_some(), "logging is advertised");
    assert_eq!(
        text(&call(&client, "chatty", json!({})).await.unwrap()),
        "said"
    );
    assert_eq!(
        default.logs(7).await,
        [
            "info chatty at info",
            "notice chatty at notice",
            "warning chatty at warning",
            "error chatty at error",
            "critical chatty at critical",
            "alert chatty at alert",
            "emergency chatty at emergency",
        ]
    );
    assert_eq!(*app.seen.lock().unwrap(), ["log chatty debug at debug"]);

    // Another connection sets warning: its own level, not the first one's.
    let strict = Person::plain();
    let strict_client = connect(&server, strict.clone()).await;
    within(
        "logging/setLevel",
        strict_client
            .peer()
            .set_level(SetLevelRequestParams::new(LoggingLevel::Warning)),
    )
    .await
    .unwrap();
    call(&strict_client, "chatty", json!({})).await.unwrap();
    assert_eq!(
        strict.logs(5).await,
        [
            "warning chatty at warning",
            "error chatty at error",
            "critical chatty at critical",
            "alert chatty at alert",
            "emergency chatty at emergency",
        ]
    );
    call(&client, "chatty", json!({})).await.unwrap();
    assert_eq!(default.logs(14).await.len(), 14, "the first keeps info");
    let seen = app.seen.lock().unwrap().clone();
    assert_eq!(
        seen[1..4],
        [
            "log chatty debug at debug",
            "log chatty info at info",
            "log chatty notice at notice",
        ]
    );
    within("shutdown", client.cancel()).await.unwrap();
    within("shutdown", strict_client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_cancelled_async_call_is_dropped_audited_and_never_answered() {
    let probes = Probes::default();
    let mut started = probes.started();
    let server = server(&registry(&probes, None));
    let mut raw = Raw::connect(&server).await;

    raw.call(7, "wait_async", None).await;
    assert_eq!(
        within("the tool starts", started.recv()).await,
        Some("async")
    );
    raw.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the user pressed stop"}}),
    )
    .await;
    assert_eq!(probes.outcome_of("7").await, Some(ErrorKind::Cancelled));
    assert!(
        probes.dropped.load(Ordering::SeqCst),
        "the tool's future was dropped"
    );

    // The connection goes on, and nothing ever answered request 7.
    raw.call(8, "count", None).await;
    let (before, answer) = raw.until_response(8).await;
    assert_eq!(answer["result"]["content"][0]["text"], "counted");
    assert!(
        before
            .iter()
            .all(|message| message.get("id") != Some(&json!(7))),
        "{before:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_sync_call_sees_its_flag_and_is_never_answered() {
    let probes = Probes::default();
    let mut started = probes.started();
    let server = server(&registry(&probes, None));
    let mut raw = Raw::connect(&server).await;

    raw.call(3, "wait_sync", None).await;
    assert_eq!(
        within("the tool starts", started.recv()).await,
        Some("sync")
    );
    raw.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 3}}),
    )
    .await;
    assert_eq!(probes.outcome_of("3").await, Some(ErrorKind::Cancelled));
    // The call is answered as cancelled at once; the tool, on its own thread, sees its flag
    // when it next looks (within moments, however loaded the machine).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while probes.saw_flag.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        probes.saw_flag.load(Ordering::SeqCst),
        1,
        "the tool saw its flag"
    );

    raw.call(4, "count", None).await;
    let (before, _) = raw.until_response(4).await;
    assert!(
        before
            .iter()
            .all(|message| message.get("id") != Some(&json!(3))),
        "{before:?}"
    );
}

#[tokio::test]
async fn a_question_is_asked_with_the_form_of_its_type_and_answered() {
    let server = server(&registry(&Probes::default(), None));
    for (reply, expected) in [
        (
            Reply::Accept(json!({"env": "production", "notify": true})),
            "Production notify=true",
        ),
        (
            Reply::Accept(json!({"env": "staging"})),
            "Staging notify=false",
        ),
        (Reply::Decline, "declined"),
        (Reply::Cancel, "dismissed"),
    ] {
        let person = Person::new(true, false, reply);
        let client = connect(&server, person.clone()).await;
        let result = call(&client, "ask", json!({})).await.unwrap();
        assert_eq!(result.is_error, Some(false), "{result:?}");
        assert_eq!(text(&result), expected);
        let questions = person.questions.lock().unwrap().clone();
        assert_eq!(questions.len(), 1);
        assert_eq!(questions[0].0, "Where to?");
        assert_eq!(questions[0].1, form_schema::<Choice>().unwrap());
        assert_eq!(
            questions[0].1["properties"]["env"],
            json!({"type": "string", "enum": ["staging", "production"], "description": "The environment."})
        );
        within("shutdown", client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn a_synchronous_tool_on_its_own_thread_can_ask_too() {
    let server = server(&registry(&Probes::default(), None));
    let person = Person::new(true, false, Reply::Accept(json!({"env": "staging"})));
    let client = connect(&server, person.clone()).await;
    let result = call(&client, "ask_sync", json!({})).await.unwrap();
    assert_eq!(text(&result), "Staging");
    assert_eq!(
        person.questions.lock().unwrap()[0].0,
        "Where to, synchronously?"
    );
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn on_protocol_2026_07_28_a_tool_cannot_ask_the_client() {
    let server = server(&registry(&Probes::default(), None));
    let person = Person::new(true, true, Reply::Decline);
    let client = within(
        "discover",
        person.clone().serve_with_lifecycle(
            tokio::io::split(spawn(&server)),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("a 2026-07-28 client connects");
    let result = call(&client, "ask", json!({})).await.unwrap();
    assert_eq!(
        text(&result),
        "the tool \"ask\" failed: asking the user is not supported here: protocol 2026-07-28 allows no requests from server to client, and the application installed no host that can ask"
    );
    let result = call(&client, "summarize", json!({})).await.unwrap();
    assert!(text(&result).contains("protocol 2026-07-28 allows no requests"));
    assert!(person.questions.lock().unwrap().is_empty());
    // Progress still reaches it.
    assert_eq!(
        text(&call(&client, "count", json!({})).await.unwrap()),
        "counted"
    );
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_form_is_an_error() {
    let server = server(&registry(&Probes::default(), None));
    let person = Person::new(true, false, Reply::Accept(json!({"env": "moon"})));
    let client = connect(&server, person).await;
    let result = call(&client, "ask", json!({})).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    let text = text(&result);
    assert!(
        text.contains("the user's answer does not fit the question") && text.contains("/env"),
        "{text}"
    );
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_client_without_elicitation_cannot_be_asked() {
    // Nobody else can ask either: "not supported", saying why.
    let server = server(&registry(&Probes::default(), None));
    let client = connect(&server, Person::plain()).await;
    let result = call(&client, "ask", json!({})).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        "the tool \"ask\" failed: asking the user is not supported here: the MCP client did not declare the elicitation capability (form mode), and the application installed no host that can ask"
    );
    within("shutdown", client.cancel()).await.unwrap();

    // The application's host can: it answers instead of the client.
    let app = AppHost::default();
    let with_host = self::server(&registry(&Probes::default(), Some(app.clone())));
    let client = connect(&with_host, Person::plain()).await;
    let result = call(&client, "ask", json!({})).await.unwrap();
    assert_eq!(text(&result), "Staging notify=false");
    assert_eq!(*app.seen.lock().unwrap(), ["asked Where to?"]);
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn sampling_asks_the_clients_model_when_the_client_supports_it() {
    let server = server(&registry(&Probes::default(), None));
    let person = Person::new(false, true, Reply::Decline);
    let client = connect(&server, person.clone()).await;
    let result = call(&client, "summarize", json!({})).await.unwrap();
    assert_eq!(text(&result), "Disk full. (client-model, endTurn)");
    let samples = person.samples.lock().unwrap().clone();
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].max_tokens, 64);
    assert_eq!(samples[0].system_prompt.as_deref(), Some("One sentence."));
    assert_eq!(samples[0].messages.len(), 1);
    assert_eq!(samples[0].messages[0].role, Role::User);
    assert_eq!(
        serde_json::to_value(&samples[0].messages[0].content).unwrap(),
        json!([{"type": "text", "text": "step 2 failed: disk full"}])
    );
    within("shutdown", client.cancel()).await.unwrap();

    let client = connect(&server, Person::plain()).await;
    let result = call(&client, "summarize", json!({})).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        "the tool \"summarize\" failed: asking the client's model is not supported here: the MCP client did not declare the sampling capability, and the application installed no host that can ask a model"
    );
    within("shutdown", client.cancel()).await.unwrap();
}

/// A client that declares sampling and elicitation and never answers either: it counts the
/// requests, and holds each for ever.
#[derive(Clone, Default)]
struct Silent {
    asked: Arc<AtomicUsize>,
}

impl ClientHandler for Silent {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        capabilities.sampling = Some(SamplingCapability::default());
        let mut config = ClientConfig::default();
        config.capabilities = capabilities;
        config
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        std::future::pending().await
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_client_that_never_answers_sampling_or_a_question_does_not_hang_the_call() {
    let registry = registry(&Probes::default(), None);
    let options = ServerOptions::default()
        .with_poll_interval(Duration::from_secs(3600))
        .with_sampling_timeout(Duration::from_millis(200))
        .with_approval_timeout(Duration::from_millis(200));
    let server = McpServer::new(registry, options).unwrap();
    let silent = Silent::default();
    let client = connect(&server, silent.clone()).await;
    let started = std::time::Instant::now();
    let result = call(&client, "summarize", json!({})).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        "the tool \"summarize\" failed: the client's model did not answer within 0.2 s; the request was withdrawn"
    );
    let result = call(&client, "ask", json!({})).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        "the tool \"ask\" failed: no answer from the user within 0.2 s; the question was withdrawn"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(silent.asked.load(Ordering::SeqCst), 2, "both were asked");
    within("shutdown", client.cancel()).await.unwrap();
}

#[test]
fn an_application_host_that_never_answers_times_out_at_the_registrys_bound() {
    struct Silent;
    impl CallHost for Silent {
        fn sample<'a>(
            &'a self,
            _call: &CallInfo<'_>,
            _request: SampleRequest,
        ) -> BoxFuture<'a, Result<registry_core::host::SampleReply, registry_core::host::SampleError>>
        {
            Box::pin(std::future::pending())
        }
        fn elicit<'a>(
            &'a self,
            _call: &CallInfo<'_>,
            _request: ElicitRequest,
        ) -> BoxFuture<'a, Result<Elicitation<Value>, ElicitError>> {
            Box::pin(std::future::pending())
        }
    }
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("summarize", "Summarize with the client's model.")
                .scopes(["docs:read"])
                .async_handler(|ctx, _args| async move {
                    match ctx.sample(SampleRequest::new(8).user("hi")).await {
                        Err(registry_core::host::SampleError::TimedOut(wait)) => {
                            Ok::<_, String>(json!(format!("no reply in {} ms", wait.as_millis())))
                        }
                        other => Err(format!("{other:?}")),
                    }
                }),
        )
        .tool(
            DynamicTool::new("ask", "Ask where to deploy.")
                .scopes(["docs:read"])
                // A synchronous tool, driving the question itself, on the pool.
                .handler(|ctx, _args| {
                    match pollster::block_on(ctx.elicit::<Choice>("Where to?")) {
                        Err(ElicitError::TimedOut(wait)) => {
                            Ok(json!(format!("no answer in {} ms", wait.as_millis())))
                        }
                        other => Err(format!("{other:?}")),
                    }
                }),
        )
        .host(Silent)
        .sample_timeout(Duration::from_millis(50))
        .elicit_timeout(Duration::from_millis(80))
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["docs:read"]));
    let started = std::time::Instant::now();
    let sampled = run.call_blocking(registry_core::ToolCall::new("c1", "summarize", json!({})));
    assert_eq!(sampled.json(), &json!("no reply in 50 ms"));
    let asked = pollster::block_on(run.call(registry_core::ToolCall::new("c2", "ask", json!({}))));
    assert_eq!(asked.json(), &json!("no answer in 80 ms"));
    // A call's own bound comes first.
    let options =
        registry_core::call::CallOptions::new().with_sample_timeout(Duration::from_millis(10));
    let own = run.call_blocking_with(
        registry_core::ToolCall::new("c3", "summarize", json!({})),
        options,
    );
    assert_eq!(own.json(), &json!("no reply in 10 ms"));
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// An application's own MCP handler: one resource and one prompt.
#[derive(Clone)]
struct Docs;

impl ServerHandler for Docs {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_instructions("Read docs://guide first.")
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let guide = Resource::new("docs://guide", "guide").with_description("How to deploy.");
        Ok(ListResourcesResult::with_all_items(vec![guide]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != "docs://guide" {
            return Err(ErrorData::resource_not_found("no such resource", None));
        }
        let contents = ResourceContents::text("Deploy on Tuesdays.", "docs://guide");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompt = Prompt::new("review", Some("Review a deployment."), None);
        Ok(ListPromptsResult::with_all_items(vec![prompt]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != "review" {
            return Err(ErrorData::invalid_params("no such prompt", None));
        }
        let message = PromptMessage::new_text(Role::User, "Review the last deployment.");
        Ok(GetPromptResult::new(vec![message]).into())
    }
}

#[derive(Clone)]
struct Listening {
    person: Person,
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Listening {
    fn get_info(&self) -> ClientConfig {
        self.person.get_info()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

#[tokio::test]
async fn a_composed_server_serves_the_apps_resources_and_prompts_beside_the_tools() {
    let registry = registry(&Probes::default(), None);
    let server = server(&registry);
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_io);
    let serving = server.clone();
    tokio::spawn(async move {
        serving
            .serve_io_with("test", Subject::new("acme"), read, write, |tools| {
                tools.with_handler(Docs)
            })
            .await
    });
    let (changed, mut changes) = mpsc::unbounded_channel();
    let handler = Listening {
        person: Person::plain(),
        changed,
    };
    let client = within("initialize", handler.serve(tokio::io::split(client_io)))
        .await
        .unwrap();

    // One server, every capability.
    let info = client.peer().peer_info().unwrap();
    let capabilities = &info.capabilities;
    assert_eq!(
        capabilities
            .tools
            .as_ref()
            .and_then(|tools| tools.list_changed),
        Some(true)
    );
    assert!(capabilities.logging.is_some());
    assert!(capabilities.resources.is_some());
    assert!(capabilities.prompts.is_some());
    assert_eq!(
        info.instructions.as_deref(),
        Some("Read docs://guide first.")
    );

    // The application's resources and prompts.
    let resources = within("resources/list", client.list_resources(None))
        .await
        .unwrap();
    assert_eq!(resources.resources.len(), 1);
    assert_eq!(resources.resources[0].uri, "docs://guide");
    let read = within(
        "resources/read",
        client.read_resource(ReadResourceRequestParams::new("docs://guide")),
    )
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&read.contents[0]).unwrap()["text"],
        "Deploy on Tuesdays."
    );
    let prompts = within("prompts/list", client.list_prompts(None))
        .await
        .unwrap();
    assert_eq!(prompts.prompts[0].name, "review");
    let prompt = within(
        "prompts/get",
        client.get_prompt(GetPromptRequestParams::new("review")),
    )
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&prompt.messages[0]).unwrap()["content"]["text"],
        "Review the last deployment."
    );

    // The registry's tools, from the client's run, with progress and all.
    let (tools, _) = list_all(client.peer()).await;
    assert_eq!(
        names(&tools),
        [
            "ask",
            "ask_sync",
            "chatty",
            "count",
            "summarize",
            "wait_async",
            "wait_sync"
        ]
    );
    assert_eq!(
        text(&call(&client, "count", json!({})).await.unwrap()),
        "counted"
    );

    // Changes are still announced.
    registry.revoke("chatty", "retired").unwrap();
    server.check_changes().await;
    within("tools/list_changed", changes.recv()).await.unwrap();
    let (tools, _) = list_all(client.peer()).await;
    assert!(!names(&tools).contains(&"chatty".to_owned()));
    within("shutdown", client.cancel()).await.unwrap();
}

const TOKEN: &str = "context-tests-token-0001";

fn http_transport(url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(TOKEN),
    )
}

#[tokio::test]
async fn over_http_a_composed_server_asks_reports_and_serves_resources() {
    let registry = registry(&Probes::default(), None);
    let mut tokens = Tokens::new();
    tokens
        .insert(TOKEN, Principal::new("ctx", Subject::new("acme")))
        .unwrap();
    let config = HttpConfig::new(tokens)
        .with_addr(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .with_options(
            ServerOptions::default()
                .with_poll_interval(Duration::from_secs(3600))
                .with_list_ttl(Duration::from_secs(60)),
        );
    let http = HttpServer::bind_with(registry, config, |tools| tools.with_handler(Docs))
        .await
        .unwrap();
    let url = http.url();
    tokio::spawn(http.serve());

    let person = Person::new(true, false, Reply::Accept(json!({"env": "production"})));
    let client = within("initialize", person.clone().serve(http_transport(&url)))
        .await
        .unwrap();
    // The question rides the call's own response stream.
    let result = call(&client, "ask", json!({})).await.unwrap();
    assert_eq!(text(&result), "Production notify=false");
    assert_eq!(person.questions.lock().unwrap().len(), 1);
    // Progress too.
    assert_eq!(
        text(&call(&client, "count", json!({})).await.unwrap()),
        "counted"
    );
    within("progress", async {
        while person.progress.lock().unwrap().len() < 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    // And the application's resources, behind the same token.
    let resources = within("resources/list", client.list_resources(None))
        .await
        .unwrap();
    assert_eq!(resources.resources[0].uri, "docs://guide");
    let listed = within("tools/list", client.list_tools(None)).await.unwrap();
    let listed = serde_json::to_value(&listed).unwrap();
    assert_eq!(listed["cacheScope"], "private");
    assert_eq!(listed["ttlMs"], 60_000);
    within("shutdown", client.cancel()).await.unwrap();
}
