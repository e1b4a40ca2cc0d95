//! What a running tool can do through `ToolContext` outside MCP: report progress, log, ask
//! the user (elicitation) and the client's model (sampling) through the application's
//! `CallHost` (on the registry, the run or the call), or `tracing` and "not supported" without
//! one; and be cancelled: an async tool's future dropped, a sync tool told by its flag, the
//! outcome audited as cancelled.

mod tracing_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use registry_core::server::RunExt;
use registry_core::{
    DynamicTool, ErrorKind, Registry, Subject, ToolCall, ToolContext,
    audit::AuditEvent,
    call::{CallOptions, Cancellation, ToolError},
    definition::BoxFuture,
    host::{
        CallHost, CallInfo, ElicitError, ElicitRequest, Elicitation, LogLevel, Progress,
        SampleContent, SampleError, SampleReply, SampleRequest, SampleRole, TOOL_EVENT_TARGET,
        form_schema,
    },
    tool,
};
use registry_tests::{DropFlag, success, wait_until_cancelled};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tracing_support::{traced, traced_here};

/// How long a test waits for something that should happen at once.
const WAIT: Duration = Duration::from_secs(10);

/// What the user is asked for.
#[derive(Debug, Deserialize, JsonSchema)]
struct Release {
    /// The version to release.
    #[schemars(length(min = 1))]
    version: String,
    /// Also tag it.
    #[serde(default)]
    tag: bool,
}

/// Release a project after asking which version.
#[tool(public)]
async fn release(ctx: &ToolContext, project: String) -> Result<String, ToolError> {
    ctx.progress(0.0, Some(2.0), "asking");
    ctx.log(LogLevel::Info, format!("releasing {project}"));
    let answer = match ctx.elicit::<Release>(format!("Release {project}?")).await? {
        Elicitation::Accepted(release) => format!("{} tag={}", release.version, release.tag),
        Elicitation::Declined => "declined".to_owned(),
        Elicitation::Cancelled => "cancelled".to_owned(),
    };
    ctx.progress(1.0, Some(2.0), "");
    Ok(answer)
}

/// Summarize a text with the client's model.
#[tool(public)]
async fn summarize(ctx: &ToolContext, text: String) -> Result<String, ToolError> {
    let reply = ctx
        .sample(
            SampleRequest::new(50)
                .with_system_prompt("Be brief.")
                .user(text),
        )
        .await?;
    Ok(format!("{} ({})", reply.text(), reply.model))
}

/// A nested struct: no form.
#[allow(dead_code)] // only its schema is used
#[derive(Debug, Deserialize, JsonSchema)]
struct Address {
    street: String,
}

/// Not a form: a nested object and a list of numbers.
#[allow(dead_code)] // only its schema is used
#[derive(Debug, Deserialize, JsonSchema)]
struct Shipping {
    address: Address,
    weights: Vec<u32>,
}

/// Ask for something no form can hold.
#[tool(public)]
async fn ship(ctx: &ToolContext) -> Result<String, String> {
    match ctx.elicit::<Shipping>("Where to?").await {
        Ok(_) => Ok("asked".to_owned()),
        Err(error @ ElicitError::NotAForm(_)) => Err(error.to_string()),
        Err(other) => Err(format!("unexpected: {other}")),
    }
}

/// Log at every level.
#[tool(public)]
fn chatty(ctx: &ToolContext) -> String {
    for level in LogLevel::ALL {
        ctx.log(level, format!("at {level}"));
    }
    ctx.progress(3.0, None, "three");
    "said".to_owned()
}

fn registry_with(host: Option<Recorder>) -> Registry {
    let builder = Registry::builder().declared_in([module_path!()]);
    match host {
        Some(host) => builder.host(host),
        None => builder,
    }
    .build()
    .unwrap()
}

/// How the recording host answers questions.
#[derive(Clone, Debug)]
enum Answer {
    Accept(Value),
    Decline,
    Cancel,
}

/// An application's host: records what it is given, answers as told.
#[derive(Clone)]
struct Recorder {
    name: &'static str,
    answer: Answer,
    seen: Arc<Mutex<Vec<String>>>,
    questions: Arc<Mutex<Vec<ElicitRequest>>>,
    samples: Arc<Mutex<Vec<SampleRequest>>>,
}

impl Recorder {
    fn new(name: &'static str, answer: Answer) -> Recorder {
        Recorder {
            name,
            answer,
            seen: Arc::default(),
            questions: Arc::default(),
            samples: Arc::default(),
        }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl CallHost for Recorder {
    fn progress(&self, call: &CallInfo<'_>, progress: &Progress) {
        self.seen.lock().unwrap().push(format!(
            "{} progress {} {}/{:?} {:?}",
            self.name, call.tool_name, progress.done, progress.total, progress.message
        ));
    }

    fn log(&self, call: &CallInfo<'_>, level: LogLevel, message: &str) {
        self.seen.lock().unwrap().push(format!(
            "{} log {} {level} {message} (run {}, call {}, tenant {})",
            self.name,
            call.tool_name,
            call.run_id,
            call.call_id,
            call.subject.tenant()
        ));
    }

    fn elicit<'a>(
        &'a self,
        _call: &CallInfo<'_>,
        request: ElicitRequest,
    ) -> BoxFuture<'a, Result<Elicitation<Value>, ElicitError>> {
        self.questions.lock().unwrap().push(request);
        let answer = match &self.answer {
            Answer::Accept(value) => Elicitation::Accepted(value.clone()),
            Answer::Decline => Elicitation::Declined,
            Answer::Cancel => Elicitation::Cancelled,
        };
        Box::pin(async move { Ok(answer) })
    }

    fn sample<'a>(
        &'a self,
        _call: &CallInfo<'_>,
        request: SampleRequest,
    ) -> BoxFuture<'a, Result<SampleReply, SampleError>> {
        self.samples.lock().unwrap().push(request);
        Box::pin(async {
            Ok(
                SampleReply::new("test-model", vec![SampleContent::Text("short".into())])
                    .with_stop_reason("endTurn"),
            )
        })
    }
}

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall::new("c1", name, arguments)
}

#[test]
fn the_applications_host_answers_progress_logs_and_questions() {
    let host = Recorder::new(
        "registry",
        Answer::Accept(json!({"version": "2.0", "tag": true})),
    );
    let registry = registry_with(Some(host.clone()));
    let run = registry.open_run("run-9", &Subject::new("acme"));

    let answer = run.call_blocking(call("release", json!({"project": "web"})));
    assert_eq!(success(answer), json!("2.0 tag=true"));
    assert_eq!(
        host.seen(),
        [
            "registry progress release 0/Some(2.0) Some(\"asking\")",
            "registry log release info releasing web (run run-9, call c1, tenant acme)",
            "registry progress release 1/Some(2.0) None",
        ]
    );
    // The question: the message, and the form made from `Release`.
    let questions = host.questions.lock().unwrap().clone();
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].message, "Release web?");
    assert_eq!(questions[0].schema, form_schema::<Release>().unwrap());
    assert_eq!(
        questions[0].schema,
        json!({
            "type": "object",
            "properties": {
                "tag": {"type": "boolean", "description": "Also tag it.", "default": false},
                "version": {"type": "string", "description": "The version to release.", "minLength": 1},
            },
            "required": ["version"],
            "description": "What the user is asked for.",
        })
    );
}

#[test]
fn declined_and_dismissed_questions_reach_the_tool() {
    for (answer, expected) in [(Answer::Decline, "declined"), (Answer::Cancel, "cancelled")] {
        let registry = registry_with(Some(Recorder::new("app", answer)));
        let run = registry.open_run("run-1", &Subject::new("acme"));
        let result = run.call_blocking(call("release", json!({"project": "web"})));
        assert_eq!(success(result), json!(expected));
    }
}

#[test]
fn an_answer_that_does_not_fit_the_form_is_refused() {
    for (content, expected) in [
        (json!({"version": ""}), "/version"),
        (json!({"version": 2}), "/version"),
        (
            json!({"tag": true}),
            "missing required property \"version\"",
        ),
    ] {
        let registry = registry_with(Some(Recorder::new("app", Answer::Accept(content))));
        let run = registry.open_run("run-1", &Subject::new("acme"));
        let result = run.call_blocking(call("release", json!({"project": "web"})));
        assert_eq!(result.error_kind(), Some(ErrorKind::ExecutionFailed));
        let text = result.error_text().unwrap();
        assert!(
            text.contains("the user's answer does not fit the question") && text.contains(expected),
            "{text}"
        );
    }
}

#[test]
fn a_type_that_cannot_be_a_form_is_refused_before_anyone_is_asked() {
    let host = Recorder::new("app", Answer::Accept(json!({})));
    let registry = registry_with(Some(host.clone()));
    let run = registry.open_run("run-1", &Subject::new("acme"));
    let result = run.call_blocking(call("ship", json!({})));
    let text = result.error_text().unwrap();
    assert!(
        text.contains("Shipping cannot be asked for as a form"),
        "{text}"
    );
    assert!(text.contains("\"address\": a nested object"), "{text}");
    assert!(
        text.contains("\"weights\": a list of something other than an enum of strings"),
        "{text}"
    );
    assert!(
        host.questions.lock().unwrap().is_empty(),
        "nobody was asked"
    );

    let error = form_schema::<Shipping>().unwrap_err();
    assert_eq!(error.type_name, "Shipping");
    assert_eq!(error.problems.len(), 2, "{error}");
}

#[test]
fn the_applications_host_answers_sampling() {
    let host = Recorder::new("app", Answer::Decline);
    let registry = registry_with(Some(host.clone()));
    let run = registry.open_run("run-1", &Subject::new("acme"));
    let result = run.call_blocking(call("summarize", json!({"text": "a long log"})));
    assert_eq!(success(result), json!("short (test-model)"));
    let samples = host.samples.lock().unwrap().clone();
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].max_tokens, 50);
    assert_eq!(samples[0].system_prompt.as_deref(), Some("Be brief."));
    assert_eq!(samples[0].messages[0].role, SampleRole::User);
    assert_eq!(
        samples[0].messages[0].content,
        [SampleContent::Text("a long log".into())]
    );
}

#[test]
fn a_calls_host_comes_before_the_runs_which_comes_before_the_registrys() {
    let registry_host = Recorder::new("registry", Answer::Decline);
    let run_host = Recorder::new("run", Answer::Decline);
    let call_host = Recorder::new("call", Answer::Decline);
    let registry = registry_with(Some(registry_host.clone()));

    let plain = registry.open_run("run-1", &Subject::new("acme"));
    success(plain.call_blocking(call("chatty", json!({}))));
    let with_run_host = registry
        .open_run("run-2", &Subject::new("acme"))
        .with_host(run_host.clone());
    success(with_run_host.call_blocking(call("chatty", json!({}))));
    let options = CallOptions::new().with_host(call_host.clone());
    success(with_run_host.call_blocking_with(call("chatty", json!({})), options));

    for host in [&registry_host, &run_host, &call_host] {
        let seen = host.seen();
        assert_eq!(seen.len(), 9, "{seen:?}");
        assert!(
            seen.iter().all(|line| line.starts_with(host.name)),
            "{seen:?}"
        );
        assert_eq!(
            seen[8],
            format!("{} progress chatty 3/None Some(\"three\")", host.name)
        );
    }
    assert!(registry_host.seen()[0].contains("(run run-1,"));
    assert!(run_host.seen()[0].contains("(run run-2,"));
}

#[test]
fn without_a_host_questions_and_sampling_are_not_supported() {
    let registry = registry_with(None);
    let run = registry.open_run("run-1", &Subject::new("acme"));
    let asked = run.call_blocking(call("release", json!({"project": "web"})));
    assert_eq!(
        asked.error_text(),
        Some(
            "the tool \"release\" failed: asking the user is not supported here: no host that can ask the user was installed"
        )
    );
    let sampled = run.call_blocking(call("summarize", json!({"text": "x"})));
    assert_eq!(
        sampled.error_text(),
        Some(
            "the tool \"summarize\" failed: asking the client's model is not supported here: no host that can ask a model was installed"
        )
    );
}

#[test]
fn without_a_host_progress_and_logs_are_tracing_events() {
    traced();
    let registry = registry_with(None);
    let run = registry.open_run("run-t", &Subject::new("acme"));
    success(run.call_blocking(call("chatty", json!({}))));

    let events = traced_here(TOOL_EVENT_TARGET);
    assert_eq!(events.len(), 9, "{events:?}");
    let levels: Vec<tracing::Level> = events.iter().map(|event| event.level).collect();
    use tracing::Level;
    assert_eq!(
        levels,
        [
            Level::DEBUG,
            Level::INFO,
            Level::INFO,
            Level::WARN,
            Level::ERROR,
            Level::ERROR,
            Level::ERROR,
            Level::ERROR,
            Level::INFO,
        ]
    );
    assert_eq!(events[2].fields["message"], "at notice");
    assert_eq!(events[2].fields["level"], "notice");
    assert_eq!(events[2].fields["tool"], "chatty");
    assert_eq!(events[2].fields["run_id"], "run-t");
    assert_eq!(events[2].fields["call_id"], "c1");
    assert_eq!(events[8].fields["done"], "3.0");
    assert_eq!(events[8].fields["message"], "three");
}

/// The audited calls: tool and outcome.
type Audited = Arc<Mutex<Vec<(String, Option<ErrorKind>)>>>;

/// Tools that never finish on their own, an audit log, and signals that they started.
struct Stuck {
    registry: Registry,
    started: mpsc::Receiver<&'static str>,
    dropped: Arc<AtomicBool>,
    saw_flag: Arc<AtomicUsize>,
    audited: Audited,
}

fn stuck() -> Stuck {
    let (started, started_rx) = mpsc::channel::<&'static str>();
    let dropped = Arc::new(AtomicBool::new(false));
    let saw_flag = Arc::new(AtomicUsize::new(0));
    let audited: Audited = Arc::default();
    let started_async = Mutex::new(started.clone());
    let dropped_by_tool = dropped.clone();
    let started_sync = Mutex::new(started.clone());
    let saw = saw_flag.clone();
    let started_deadline = Mutex::new(started);
    let saw_deadline = saw_flag.clone();
    let log = audited.clone();
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("wait_async", "Wait for ever, asynchronously.")
                .public()
                .async_handler(move |_ctx, _args| {
                    let guard = DropFlag(dropped_by_tool.clone());
                    let _ = started_async.lock().unwrap().send("async");
                    async move {
                        let _guard = guard;
                        std::future::pending::<()>().await;
                        Ok::<Value, String>(json!("never"))
                    }
                }),
        )
        .tool(
            DynamicTool::new("wait_sync", "Wait until cancelled.")
                .public()
                .handler(move |ctx, _args| {
                    let _ = started_sync.lock().unwrap().send("sync");
                    if wait_until_cancelled(ctx, WAIT) {
                        saw.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok::<Value, String>(json!("finished anyway"))
                }),
        )
        .tool(
            DynamicTool::new("wait_deadline", "Wait past the deadline.")
                .public()
                .timeout(Duration::from_millis(30))
                .handler(move |ctx, _args| {
                    let _ = started_deadline.lock().unwrap().send("deadline");
                    if wait_until_cancelled(ctx, WAIT) {
                        saw_deadline.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok::<Value, String>(json!("late"))
                }),
        )
        .audit_sink(move |event: &AuditEvent| {
            if let AuditEvent::Call(call) = event {
                log.lock().unwrap().push((call.tool.clone(), call.outcome));
            }
        })
        .build()
        .unwrap();
    Stuck {
        registry,
        started: started_rx,
        dropped,
        saw_flag,
        audited,
    }
}

/// Calls `tool` on a thread of its own with a cancellation, cancels it once the tool started,
/// and gives the observation.
fn cancel_once_started(stuck: &Stuck, tool: &str, blocking: bool) -> registry_core::Observation {
    let run = stuck.registry.open_run("run-c", &Subject::new("acme"));
    let cancellation = Cancellation::new();
    let options = CallOptions::new().with_cancellation(cancellation.clone());
    let tool = tool.to_owned();
    let calling = std::thread::spawn(move || {
        let call = ToolCall::new("c1", tool, json!({}));
        if blocking {
            run.call_blocking_with(call, options)
        } else {
            pollster::block_on(run.call_with(call, options))
        }
    });
    stuck.started.recv_timeout(WAIT).expect("the tool started");
    cancellation.cancel();
    calling.join().unwrap()
}

#[test]
fn a_cancelled_async_call_is_dropped_and_audited_as_cancelled() {
    let stuck = stuck();
    let answer = cancel_once_started(&stuck, "wait_async", false);
    assert_eq!(answer.error_kind(), Some(ErrorKind::Cancelled));
    assert_eq!(
        answer.error_text(),
        Some(
            "the call to \"wait_async\" was cancelled before it finished; its result, if any, was discarded"
        )
    );
    assert!(
        stuck.dropped.load(Ordering::SeqCst),
        "the future was dropped"
    );
    assert_eq!(
        *stuck.audited.lock().unwrap(),
        [("wait_async".to_owned(), Some(ErrorKind::Cancelled))]
    );
    assert_eq!(ErrorKind::Cancelled.as_str(), "cancelled");
}

#[test]
fn a_cancelled_sync_call_sees_its_flag_and_its_result_is_discarded() {
    let stuck = stuck();
    for blocking in [true, false] {
        let answer = cancel_once_started(&stuck, "wait_sync", blocking);
        assert_eq!(
            answer.error_kind(),
            Some(ErrorKind::Cancelled),
            "{answer:?}"
        );
        assert_ne!(answer.json(), &json!("finished anyway"));
    }
    // Called from async code the tool runs on the registry's pool, and the call is answered
    // as soon as it is cancelled: the tool sees its flag there, a moment later.
    let deadline = std::time::Instant::now() + WAIT;
    while stuck.saw_flag.load(Ordering::SeqCst) < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(stuck.saw_flag.load(Ordering::SeqCst), 2);
    assert_eq!(
        *stuck.audited.lock().unwrap(),
        [
            ("wait_sync".to_owned(), Some(ErrorKind::Cancelled)),
            ("wait_sync".to_owned(), Some(ErrorKind::Cancelled)),
        ]
    );
}

#[test]
fn past_its_deadline_a_tool_left_on_its_thread_sees_its_flag() {
    let stuck = stuck();
    let run = stuck.registry.open_run("run-d", &Subject::new("acme"));
    let answer = run.call_blocking(ToolCall::new("c1", "wait_deadline", json!({})));
    assert_eq!(answer.error_kind(), Some(ErrorKind::TimedOut));
    let begun = std::time::Instant::now();
    while stuck.saw_flag.load(Ordering::SeqCst) == 0 {
        assert!(begun.elapsed() < WAIT, "the tool never saw its flag");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A deadline is not a cancellation by the caller.
    assert_eq!(
        *stuck.audited.lock().unwrap(),
        [("wait_deadline".to_owned(), Some(ErrorKind::TimedOut))]
    );
}

#[test]
fn a_call_cancelled_before_it_starts_does_not_run() {
    let stuck = stuck();
    let run = stuck.registry.open_run("run-e", &Subject::new("acme"));
    let cancellation = Cancellation::new();
    cancellation.cancel();
    let options = CallOptions::new().with_cancellation(cancellation);
    let answer = run.call_blocking_with(ToolCall::new("c1", "wait_sync", json!({})), options);
    assert_eq!(answer.error_kind(), Some(ErrorKind::Cancelled));
    assert!(stuck.started.try_recv().is_err(), "the tool did not start");
}
