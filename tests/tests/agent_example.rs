//! The `agent` example's contract (examples/src/bin/agent.rs), driven exactly as its
//! documentation writes it, against a scripted fake model endpoint (an in-process HTTP
//! server on loopback) that records every request: the flags, the transcript's JSON, the exit
//! status, and that the model is never shown a tool outside the run.

mod mcp_support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
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

/// Serves `replies` in order on a thread of its own; its base URL and what it recorded.
fn fake(replies: Vec<(u16, String)>) -> (String, Arc<Script>) {
    let script = Arc::new(Script {
        replies: Mutex::new(replies.into()),
        requests: Mutex::new(Vec::new()),
    });
    let served = script.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = axum::Router::new().fallback(answer).with_state(served);
            axum::serve(listener, app).await.unwrap();
        });
    });
    let addr = rx.recv().unwrap();
    (format!("http://{addr}/v1"), script)
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
    let dir = std::env::temp_dir().join(format!(
        "agent-example-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join("transcript.json");
    let output = std::process::Command::new(mcp_support::example_binary("agent"))
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
        .env("AGENT_API_KEY", "sk-example-key-0001")
        .env_remove("CHAT_WEBHOOK_URL")
        .output()
        .expect("the example runs");
    let written = std::fs::read_to_string(&transcript).unwrap_or_else(|_| {
        panic!(
            "no transcript; stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    std::fs::remove_dir_all(&dir).unwrap();
    (
        output.status.code().unwrap_or(-1),
        serde_json::from_str(&written).unwrap(),
    )
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
