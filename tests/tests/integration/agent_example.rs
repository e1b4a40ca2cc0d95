//! The `agent` example's contract (examples/src/bin/agent.rs), driven exactly as its
//! documentation writes it, against a scripted fake model endpoint (an in-process HTTP
//! server on loopback) that records every request: the flags, the transcript's JSON, the exit
//! status, and that the model is never shown a tool outside the run. With `--otlp`, an
//! in-process OTLP/HTTP receiver reads back the spans it exports: their parent–child links,
//! their GenAI attributes, that no argument value is on any of them, and that a collector
//! that is not there changes neither the exit status nor, past a bound, the time it takes.

use crate::mcp_support;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::{Value, json};

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<(u16, String)>>,
    requests: Mutex<Vec<Value>>,
}

async fn answer(State(script): State<Arc<Script>>, body: String) -> impl IntoResponse {
    script
        .requests
        .lock()
        .unwrap()
        .push(serde_json::from_str(&body).unwrap_or(Value::Null));
    let (status, body) = script
        .replies
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or((500, "{\"error\": \"the script ran out\"}".into()));
    (
        StatusCode::from_u16(status).unwrap(),
        [("content-type", "application/json")],
        body,
    )
}

/// Serves `app` on loopback on a thread of its own; its address.
fn serve(app: axum::Router) -> std::net::SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

/// Serves `replies` in order on a thread of its own; its base URL and what it recorded.
fn fake(replies: Vec<(u16, String)>) -> (String, Arc<Script>) {
    let script = Arc::new(Script {
        replies: Mutex::new(replies.into()),
        requests: Mutex::new(Vec::new()),
    });
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(script.clone());
    (format!("http://{}/v1", serve(app)), script)
}

/// An OpenAI Chat Completions response calling `calls` (id, name, arguments).
fn calling(calls: &[(&str, &str, Value)]) -> (u16, String) {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, arguments)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}})
        })
        .collect();
    (
        200,
        json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": calls}}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
        .to_string(),
    )
}

fn answering(text: &str) -> (u16, String) {
    (
        200,
        json!({"choices": [{"message": {"role": "assistant", "content": text}}]}).to_string(),
    )
}

/// Runs the example with `flags`; its exit code and transcript.
fn agent(url: &str, scopes: &str, approve: &str, max_turns: &str) -> (i32, Value) {
    let ran = agent_with(url, scopes, approve, max_turns, &[]);
    (ran.code, ran.transcript)
}

/// How one run of the example went.
struct Ran {
    code: i32,
    transcript: Value,
    stderr: String,
    took: Duration,
}

/// Runs the example with `flags` and `extra` ones after them.
fn agent_with(url: &str, scopes: &str, approve: &str, max_turns: &str, extra: &[&str]) -> Ran {
    let dir = std::env::temp_dir().join(format!(
        "agent-example-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join("transcript.json");
    let binary = mcp_support::example_binary("agent");
    let started = Instant::now();
    let output = std::process::Command::new(binary)
        .args([
            "--api",
            "openai-chat",
            "--base-url",
            url,
            "--model",
            "test-model",
        ])
        .args(["--tenant", "acme", "--scopes", scopes, "--approve", approve])
        .args(["--max-turns", max_turns, "--prompt", "Is web green?"])
        .arg("--transcript")
        .arg(&transcript)
        .args(extra)
        .env("AGENT_API_KEY", "sk-example-key-0001")
        .env_remove("CHAT_WEBHOOK_URL")
        .env_remove("RUST_LOG")
        .env_remove("OTEL_EXPORTER_OTLP_HEADERS")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        .output()
        .expect("the example runs");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let written = std::fs::read_to_string(&transcript)
        .unwrap_or_else(|_| panic!("no transcript; stderr: {stderr}"));
    std::fs::remove_dir_all(&dir).unwrap();
    Ran {
        code: output.status.code().unwrap_or(-1),
        transcript: serde_json::from_str(&written).unwrap(),
        stderr,
        took,
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The names of the tools a request offered.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_model_sees_the_runs_tools_and_its_mistakes_come_back_as_observations() {
    let (url, script) = fake(vec![
        calling(&[
            ("c1", "get_status", json!({"project": "web"})),
            ("c2", "deploy", json!({"project": "web", "env": "staging"})),
            ("c3", "get_status", json!({"project": 1})),
        ]),
        answering("web is green."),
    ]);
    let (code, transcript) = agent(&url, "build:read", "never", "8");
    assert_eq!(code, 0, "{transcript}");
    assert_eq!(
        transcript,
        json!({
            "outcome": "answered",
            "turns": 2,
            "calls": [
                {"id": "c1", "name": "get_status", "outcome": "ok", "ran": true},
                {"id": "c2", "name": "deploy", "outcome": "not_allowed", "ran": false},
                {"id": "c3", "name": "get_status", "outcome": "invalid_arguments", "ran": false},
            ],
            "answer": "web is green.",
        })
    );
    let requests = script.requests.lock().unwrap();
    for request in requests.iter() {
        // Read-only build scopes: the deploy tools are never offered.
        assert_eq!(
            offered(request),
            ["changelog", "get_status", "list_builds", "search_docs"]
        );
    }
    let results: Vec<&Value> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .collect();
    assert_eq!(results.len(), 3);
    assert!(
        results[0]["content"].as_str().unwrap().contains("passed"),
        "{results:?}"
    );
}

#[test]
fn a_call_that_needs_a_person_is_decided_by_approve() {
    for (approve, outcome, ran) in [("never", "denied", false), ("always", "ok", true)] {
        let (url, script) = fake(vec![
            calling(&[("d1", "drop_preview", json!({"name": "pr-7"}))]),
            answering("done"),
        ]);
        let (code, transcript) = agent(&url, "deploy:write", approve, "8");
        assert_eq!(code, 0, "{transcript}");
        assert_eq!(transcript["outcome"], "answered");
        assert_eq!(
            transcript["calls"],
            json!([{"id": "d1", "name": "drop_preview", "outcome": outcome, "ran": ran}]),
            "--approve {approve}"
        );
        let requests = script.requests.lock().unwrap();
        let result = requests[1]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|message| message["role"] == "tool")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned();
        if ran {
            assert!(result.contains("deleted"), "{result}");
        } else {
            assert!(result.contains("--approve never"), "{result}");
        }
    }
}

#[test]
fn a_model_that_keeps_calling_stops_at_the_budget_with_status_3() {
    let looping = (0..5)
        .map(|i| {
            calling(&[(
                ["a", "b", "c", "d", "e"][i],
                "search_docs",
                json!({"query": "deploy"}),
            )])
        })
        .collect();
    let (url, script) = fake(looping);
    let (code, transcript) = agent(&url, "", "never", "2");
    assert_eq!(code, 3, "{transcript}");
    assert_eq!(transcript["outcome"], "budget_spent");
    assert_eq!(transcript["turns"], 2);
    assert_eq!(transcript["calls"].as_array().unwrap().len(), 2);
    assert_eq!(script.requests.lock().unwrap().len(), 2);
}

#[test]
fn a_malformed_response_is_an_error_with_status_1() {
    let (url, _) = fake(vec![(200, "{\"choices\": \"none\"}".into())]);
    let (code, transcript) = agent(&url, "build:read", "never", "8");
    assert_eq!(code, 1);
    assert_eq!(transcript["outcome"], "error");
    assert_eq!(transcript["turns"], 1);
}

#[test]
fn tool_choice_flags_reach_the_request_and_a_hidden_name_is_refused_with_status_1() {
    let (url, script) = fake(vec![
        calling(&[("c1", "get_status", json!({"project": "web"}))]),
        answering("web is green."),
    ]);
    let ran = agent_with(
        &url,
        "build:read",
        "never",
        "8",
        &[
            "--first-turn-tool-choice",
            "required",
            "--tool-choice",
            "auto",
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let requests = script.requests.lock().unwrap();
    let sent: Vec<&Value> = requests.iter().map(|r| &r["tool_choice"]).collect();
    assert_eq!(sent, [&json!("required"), &json!("auto")]);
    // The assistant's tool-call turn goes back with a string content.
    assert_eq!(requests[1]["messages"][2]["content"], "", "{}", requests[1]);
    drop(requests);

    let (url, script) = fake(vec![answering("ok")]);
    let ran = agent_with(
        &url,
        "build:read",
        "never",
        "8",
        &["--tool-choice", "get_status"],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(
        script.requests.lock().unwrap()[0]["tool_choice"],
        json!({"type": "function", "function": {"name": "get_status"}})
    );

    // `deploy` exists but these scopes do not reach it: refused before any request, as an
    // unknown name is.
    for name in ["deploy", "no_such_tool"] {
        let (url, script) = fake(vec![answering("ok")]);
        let ran = agent_with(&url, "build:read", "never", "8", &["--tool-choice", name]);
        assert_eq!(ran.code, 1, "{name}: {}", ran.stderr);
        assert_eq!(ran.transcript["outcome"], "error");
        assert!(
            ran.stderr.contains("not a tool this run may call"),
            "{name}: {}",
            ran.stderr
        );
        assert!(script.requests.lock().unwrap().is_empty(), "{name}");
    }
}

/// `--deferred` shows the model the search tool; with `--model-dir DIR`, a search that
/// shares no word with `drop_preview` (and that words alone do not answer with it) loads it
/// by meaning.
#[test]
fn deferred_searches_rank_by_meaning_with_a_model_dir() {
    let search = || calling(&[("s1", "search_tools", json!({"query": "nuke ephemeral env"}))]);
    let model = mcp_support::model_dir().to_str().unwrap().to_owned();
    let mut loaded = Vec::new();
    for extra in [
        vec!["--deferred"],
        vec!["--deferred", "--model-dir", model.as_str()],
    ] {
        let (url, script) = fake(vec![search(), answering("found it")]);
        let ran = agent_with(&url, "build:read,deploy:write", "never", "4", &extra);
        assert_eq!(ran.code, 0, "{extra:?}: {}", ran.stderr);
        let requests = script.requests.lock().unwrap();
        assert_eq!(requests.len(), 2, "{extra:?}");
        assert_eq!(offered(&requests[0]), ["search_tools"], "{extra:?}");
        loaded.push(offered(&requests[1]));
    }
    assert!(
        !loaded[0].contains(&"drop_preview".to_owned()),
        "words alone: {:?}",
        loaded[0]
    );
    assert!(
        loaded[1].contains(&"drop_preview".to_owned()),
        "by meaning: {:?}",
        loaded[1]
    );
}

/// A `--model-dir` that is not a model's directory is a bad flag (status 2), with the
/// loader's reason, before any request; so is `--embed-cache` without it.
#[test]
fn a_bad_model_dir_is_a_bad_flag() {
    let (url, script) = fake(vec![answering("ok")]);
    let missing = mcp_support::workspace().join("target/no-such-model");
    let missing = missing.to_str().unwrap();
    for (flags, why) in [
        (
            vec!["--model-dir", missing],
            format!("agent: --model-dir {missing}: {missing}: no such directory"),
        ),
        (
            vec!["--embed-cache", "vectors.cache"],
            "agent: --embed-cache needs --model-dir DIR".to_owned(),
        ),
    ] {
        let output = std::process::Command::new(mcp_support::example_binary("agent"))
            .args(["--api", "openai-chat", "--base-url", &url, "--model", "m"])
            .args(["--prompt", "hello", "--deferred"])
            .args(&flags)
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(&why), "{flags:?}: {stderr}");
    }
    assert!(script.requests.lock().unwrap().is_empty());
}

/// Everything a second server received: method, headers, raw body.
type Collected = Arc<Mutex<Vec<(String, HeaderMap, Vec<u8>)>>>;

/// A second server on loopback that records every request, whatever its method or body, and
/// answers it as an Anthropic model would (a followed redirect would end in success); its
/// origin and what it received.
fn collector() -> (String, Collected) {
    let received: Collected = Arc::default();
    let record = received.clone();
    let app = axum::Router::new().fallback(
        move |method: axum::http::Method, headers: HeaderMap, body: Bytes| {
            let record = record.clone();
            async move {
                record
                    .lock()
                    .unwrap()
                    .push((method.to_string(), headers, body.to_vec()));
                (
                    StatusCode::OK,
                    [("content-type", "application/json")],
                    json!({"content": [{"type": "text", "text": "collected"}],
                           "stop_reason": "end_turn"})
                    .to_string(),
                )
            }
        },
    );
    (format!("http://{}", serve(app)), received)
}

/// A model endpoint that answers every request with `status` and a `Location` to `to`; its
/// base URL.
fn redirecting(status: u16, to: String) -> String {
    let app = axum::Router::new().fallback(move || {
        let to = to.clone();
        async move {
            (
                StatusCode::from_u16(status).unwrap(),
                [("location", to)],
                String::new(),
            )
        }
    });
    format!("http://{}/v1", serve(app))
}

#[test]
fn a_redirect_is_an_error_with_status_1_and_nothing_reaches_the_other_host() {
    for status in [302, 307] {
        let (elsewhere, received) = collector();
        let url = redirecting(status, format!("{elsewhere}/collect"));
        // Anthropic: its key travels as `x-api-key`, a header reqwest keeps across hosts.
        let ran = agent_with(&url, "build:read", "never", "8", &["--api", "anthropic"]);
        assert_eq!(ran.code, 1, "{status}: {}", ran.stderr);
        assert_eq!(ran.transcript["outcome"], "error", "{status}");
        assert!(
            received.lock().unwrap().is_empty(),
            "{status}: the other host received {:?}",
            received.lock().unwrap()
        );
        assert!(
            ran.stderr.contains(&format!("redirecting to {elsewhere}:"))
                && ran.stderr.contains("not followed"),
            "{status}: {}",
            ran.stderr
        );
        assert!(
            !ran.stderr.contains("sk-example-key-0001"),
            "{}",
            ran.stderr
        );
    }
}

#[test]
fn plain_http_to_a_host_that_is_not_loopback_is_refused_with_status_1() {
    // Refused before any request: no network is needed to see it.
    let ran = agent_with("http://example.com/v1", "build:read", "never", "8", &[]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert_eq!(ran.transcript["outcome"], "error");
    assert!(
        ran.stderr.contains("plain http://") && ran.stderr.contains("allow_insecure_http"),
        "{}",
        ran.stderr
    );

    // `0.0.0.0` is not a loopback address, but a connection to it reaches this machine
    // (Linux routes it to 127.0.0.1): the refusal and the opt-out end to end, no traffic
    // leaving the machine.
    let (url, script) = fake(vec![answering("Web is green.")]);
    let far = url.replace("127.0.0.1", "0.0.0.0");
    let ran = agent_with(&far, "build:read", "never", "8", &[]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("plain http://"), "{}", ran.stderr);
    assert!(
        script.requests.lock().unwrap().is_empty(),
        "nothing was sent"
    );
    let ran = agent_with(&far, "build:read", "never", "8", &["--allow-insecure-http"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(ran.transcript["answer"], "Web is green.");
    assert_eq!(script.requests.lock().unwrap().len(), 1);
}

/// One span as an OTLP receiver got it.
#[derive(Debug, Clone)]
struct Received {
    service: String,
    name: String,
    kind: i32,
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent_span_id: Vec<u8>,
    start: u64,
    end: u64,
    attributes: BTreeMap<String, String>,
    /// Every other text the span carries: its events' names and attributes, its resource's.
    other_text: Vec<String>,
}

/// What the receiver recorded: the spans, and each request's content type.
#[derive(Default)]
struct Collector {
    spans: Mutex<Vec<Received>>,
    content_types: Mutex<Vec<String>>,
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|value| value.value.as_ref()) {
        Some(any_value::Value::StringValue(text)) => text.clone(),
        Some(any_value::Value::IntValue(number)) => number.to_string(),
        Some(any_value::Value::BoolValue(flag)) => flag.to_string(),
        Some(any_value::Value::DoubleValue(number)) => number.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
        .collect()
}

/// `POST /v1/traces`: an OTLP/HTTP protobuf export, its spans recorded.
async fn receive(
    State(collector): State<Arc<Collector>>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let content_type = headers
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    collector.content_types.lock().unwrap().push(content_type);
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new());
    };
    let mut spans = collector.spans.lock().unwrap();
    for resource_spans in request.resource_spans {
        let resource = attributes(
            resource_spans
                .resource
                .as_ref()
                .map(|resource| resource.attributes.as_slice())
                .unwrap_or_default(),
        );
        for scope_spans in resource_spans.scope_spans {
            for span in scope_spans.spans {
                let mut other_text: Vec<String> = resource.values().cloned().collect();
                for event in &span.events {
                    other_text.push(event.name.clone());
                    other_text.extend(attributes(&event.attributes).into_values());
                }
                spans.push(Received {
                    service: resource.get("service.name").cloned().unwrap_or_default(),
                    name: span.name.clone(),
                    kind: span.kind,
                    trace_id: span.trace_id.clone(),
                    span_id: span.span_id.clone(),
                    parent_span_id: span.parent_span_id.clone(),
                    start: span.start_time_unix_nano,
                    end: span.end_time_unix_nano,
                    attributes: attributes(&span.attributes),
                    other_text,
                });
            }
        }
    }
    // An empty ExportTraceServiceResponse: everything accepted.
    (StatusCode::OK, Vec::new())
}

/// An OTLP/HTTP receiver on loopback: the base URL `--otlp` takes, and what it records.
fn receiver() -> (String, Arc<Collector>) {
    let collector = Arc::new(Collector::default());
    let app = axum::Router::new()
        .route("/v1/traces", axum::routing::post(receive))
        .with_state(collector.clone());
    (format!("http://{}", serve(app)), collector)
}

/// The spans named `name`, in the order they started.
fn named<'a>(spans: &'a [Received], name: &str) -> Vec<&'a Received> {
    let mut found: Vec<&Received> = spans.iter().filter(|span| span.name == name).collect();
    found.sort_by_key(|span| span.start);
    found
}

fn attribute<'a>(span: &'a Received, key: &str) -> Option<&'a str> {
    span.attributes.get(key).map(String::as_str)
}

#[test]
fn otlp_exports_the_loops_spans_linked_and_without_argument_values() {
    // Values the model sends that must never be on a span (the first also comes back in
    // search_docs's result).
    let secrets = [
        "needle-query-4711",
        "needle-project-0815",
        "needle-env-2323",
        "needle-typo-9191",
    ];
    let (url, script) = fake(vec![
        calling(&[
            ("c1", "search_docs", json!({"query": secrets[0]})),
            (
                "c2",
                "deploy",
                json!({"project": secrets[1], "env": secrets[2]}),
            ),
            ("c3", "get_status", json!({"projct": secrets[3]})),
        ]),
        answering("web is green."),
    ]);
    let (endpoint, collector) = receiver();
    let ran = agent_with(&url, "build:read", "never", "8", &["--otlp", &endpoint]);
    assert_eq!(ran.code, 0, "{}\n{}", ran.transcript, ran.stderr);
    assert!(!ran.stderr.contains("warning"), "{}", ran.stderr);
    let outcomes: Vec<&str> = ran.transcript["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["ok", "not_allowed", "invalid_arguments"]);

    // Flushed before the process exited: everything is here once it has.
    let spans = collector.spans.lock().unwrap().clone();
    assert!(
        collector
            .content_types
            .lock()
            .unwrap()
            .iter()
            .all(|content_type| content_type == "application/x-protobuf")
    );
    assert!(
        spans
            .iter()
            .all(|span| span.service == "registry-agent-example"),
        "{spans:#?}"
    );

    // One invocation, the root of one trace.
    let agents = named(&spans, "invoke_agent");
    assert_eq!(agents.len(), 1, "{spans:#?}");
    let root = agents[0];
    assert!(root.parent_span_id.is_empty(), "{root:?}");
    assert_eq!(root.trace_id.len(), 16);
    assert_eq!(
        attribute(root, "gen_ai.operation.name"),
        Some("invoke_agent")
    );
    assert_eq!(attribute(root, "gen_ai.provider.name"), Some("openai"));
    assert_eq!(attribute(root, "gen_ai.request.model"), Some("test-model"));
    assert!(
        attribute(root, "gen_ai.conversation.id").is_some_and(|id| id.starts_with("agent-")),
        "{root:?}"
    );
    // Nothing else was exported: every span is the invocation or one of its children.
    assert!(
        spans.iter().all(|span| span.trace_id == root.trace_id
            && (span.span_id == root.span_id || span.parent_span_id == root.span_id)),
        "{spans:#?}"
    );

    // One chat span per model request, children of the invocation, with the usage the
    // response reported (the answer reported none).
    let chats = named(&spans, "chat test-model");
    assert_eq!(chats.len(), script.requests.lock().unwrap().len());
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        assert_eq!(chat.parent_span_id, root.span_id, "{chat:?}");
        assert_eq!(chat.trace_id, root.trace_id);
        assert_eq!(chat.kind, SpanKind::Client as i32, "{chat:?}");
        assert_eq!(attribute(chat, "gen_ai.operation.name"), Some("chat"));
        assert_eq!(attribute(chat, "gen_ai.provider.name"), Some("openai"));
        assert_eq!(attribute(chat, "gen_ai.request.model"), Some("test-model"));
        assert_eq!(attribute(chat, "error.type"), None, "{chat:?}");
        assert!(root.start <= chat.start && chat.end <= root.end, "{chat:?}");
    }
    assert_eq!(attribute(chats[0], "gen_ai.usage.input_tokens"), Some("10"));
    assert_eq!(attribute(chats[0], "gen_ai.usage.output_tokens"), Some("5"));
    assert_eq!(attribute(chats[1], "gen_ai.usage.input_tokens"), None);
    assert_eq!(attribute(chats[1], "gen_ai.usage.output_tokens"), None);

    // One execute_tool span per call of the model's, refused ones included, between the
    // request that asked for it and the next one; error.type is the refusal's kind.
    let mut tools: Vec<&Received> = spans
        .iter()
        .filter(|span| attribute(span, "gen_ai.operation.name") == Some("execute_tool"))
        .collect();
    tools.sort_by_key(|span| attribute(span, "gen_ai.tool.call.id").map(str::to_owned));
    let expected = [
        ("c1", "search_docs", None),
        ("c2", "deploy", Some("not_allowed")),
        ("c3", "get_status", Some("invalid_arguments")),
    ];
    assert_eq!(tools.len(), expected.len(), "{spans:#?}");
    for (span, (id, name, error)) in tools.iter().zip(expected) {
        assert_eq!(span.name, format!("execute_tool {name}"));
        assert_eq!(span.parent_span_id, root.span_id, "{span:?}");
        assert_eq!(span.trace_id, root.trace_id);
        assert_eq!(span.kind, SpanKind::Internal as i32, "{span:?}");
        assert_eq!(attribute(span, "gen_ai.tool.name"), Some(name));
        assert_eq!(attribute(span, "gen_ai.tool.call.id"), Some(id));
        assert_eq!(attribute(span, "gen_ai.tool.type"), Some("function"));
        assert_eq!(attribute(span, "error.type"), error, "{span:?}");
        assert!(
            chats[0].end <= span.start && span.end <= chats[1].start,
            "{span:?} not between the two requests"
        );
    }
    assert_eq!(spans.len(), 1 + chats.len() + tools.len(), "{spans:#?}");

    // No argument value, no result, and not the key, on any span: not in a name, an
    // attribute, an event or the resource.
    for span in &spans {
        let texts = std::iter::once(&span.name)
            .chain(span.attributes.keys())
            .chain(span.attributes.values())
            .chain(&span.other_text);
        for text in texts {
            for secret in secrets
                .iter()
                .chain(&["sk-example-key-0001", "guides/deploying.md"])
            {
                assert!(!text.contains(secret), "{secret:?} is on {span:?}");
            }
        }
    }
}

#[test]
fn otlp_flushes_the_spans_on_every_exit_status() {
    // 3: a spent budget, after two requests.
    let (url, _) = fake(
        ["a", "b", "c"]
            .iter()
            .map(|id| calling(&[(id, "search_docs", json!({"query": "deploy"}))]))
            .collect(),
    );
    let (endpoint, collector) = receiver();
    let ran = agent_with(&url, "", "never", "2", &["--otlp", &endpoint]);
    assert_eq!(ran.code, 3, "{}\n{}", ran.transcript, ran.stderr);
    let spans = collector.spans.lock().unwrap().clone();
    assert_eq!(named(&spans, "invoke_agent").len(), 1, "{spans:#?}");
    assert_eq!(named(&spans, "chat test-model").len(), 2, "{spans:#?}");
    assert_eq!(
        named(&spans, "execute_tool search_docs").len(),
        2,
        "{spans:#?}"
    );

    // 1: a malformed response, its chat span marked with the error's type.
    let (url, _) = fake(vec![(200, "{\"choices\": \"none\"}".into())]);
    let (endpoint, collector) = receiver();
    let ran = agent_with(&url, "build:read", "never", "8", &["--otlp", &endpoint]);
    assert_eq!(ran.code, 1, "{}\n{}", ran.transcript, ran.stderr);
    assert_eq!(ran.transcript["outcome"], "error");
    let spans = collector.spans.lock().unwrap().clone();
    let root = named(&spans, "invoke_agent");
    assert_eq!(root.len(), 1, "{spans:#?}");
    let chats = named(&spans, "chat test-model");
    assert_eq!(chats.len(), 1, "{spans:#?}");
    assert_eq!(chats[0].parent_span_id, root[0].span_id);
    assert_eq!(
        attribute(chats[0], "error.type"),
        Some("malformed"),
        "{:?}",
        chats[0]
    );
}

#[test]
fn an_unreachable_collector_is_a_warning_and_changes_nothing_else() {
    // A port nothing listens on: bound, then closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (url, _) = fake(vec![
        calling(&[("c1", "search_docs", json!({"query": "deploy"}))]),
        answering("done"),
    ]);
    let ran = agent_with(&url, "", "never", "8", &["--otlp", &endpoint]);
    assert_eq!(ran.code, 0, "{}\n{}", ran.transcript, ran.stderr);
    assert_eq!(ran.transcript["outcome"], "answered");
    assert_eq!(ran.transcript["answer"], "done");
    assert!(
        ran.stderr
            .contains("warning: the spans could not all be exported to"),
        "{}",
        ran.stderr
    );
    // The exporter's bounds: 4 s for a batch with its retries, 7 s for the flush at exit.
    assert!(ran.took < Duration::from_secs(12), "took {:?}", ran.took);

    // A collector that takes the connection and never answers: each request times out, and
    // the exporter gives up at its deadline.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let (url, _) = fake(vec![answering("done")]);
    let ran = agent_with(&url, "", "never", "8", &["--otlp", &endpoint]);
    assert_eq!(ran.code, 0, "{}\n{}", ran.transcript, ran.stderr);
    assert!(ran.stderr.contains("timed out"), "{}", ran.stderr);
    assert!(ran.took < Duration::from_secs(12), "took {:?}", ran.took);
    drop(silent);

    // A flag that is not an http:// URL is refused before anything runs.
    let output = std::process::Command::new(mcp_support::example_binary("agent"))
        .args(["--api", "openai-chat", "--base-url", &url, "--model", "m"])
        .args(["--prompt", "hi", "--otlp", "grpc://127.0.0.1:4317"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--otlp"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
