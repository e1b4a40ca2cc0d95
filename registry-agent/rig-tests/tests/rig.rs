//! `registry_agent::rig` with rig's own agent (rig-agent 0.44 and rig-core's OpenAI Chat
//! Completions model) against a scripted fake endpoint on loopback that records every request:
//! the model is shown the run's tools and no other, and every call goes through the run.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::IntoResponse;
use registry_agent::rig::{refusal, tools, tools_for};
use registry_core::approval::Verdict;
use registry_core::{ErrorKind, Profile, Registry, Run, Subject, ToolCall, tool};
use rig_agent::agent::{HookContext, InvalidToolCallAction, InvalidToolCallContext};
use rig_agent::run::{InvalidToolCallReason, PromptError};
use rig_agent::{AgentBuilder, AgentHook};
use rig_core::providers::openai::OpenAIConfig;
use serde_json::{Value, json};

static STATUS_READS: AtomicUsize = AtomicUsize::new(0);
static DEPLOYS: AtomicUsize = AtomicUsize::new(0);
static DROPS: AtomicUsize = AtomicUsize::new(0);

/// Read a project's build status.
#[tool(scopes = "build:read", read_only)]
fn get_status(
    /// Project identifier, e.g. `web`.
    project: String,
    /// How many log lines to add (an unsigned 32-bit integer: lowered differently per profile).
    lines: Option<u32>,
) -> String {
    STATUS_READS.fetch_add(1, Ordering::SeqCst);
    format!(
        "{project}: green{}",
        if lines.is_some() { " (with logs)" } else { "" }
    )
}

/// Deploy a project to production.
#[tool(scopes = "deploy:write", destructive, needs_approval)]
fn deploy(
    /// Project identifier.
    project: String,
) -> String {
    DEPLOYS.fetch_add(1, Ordering::SeqCst);
    format!("{project} deployed")
}

/// Drop a database.
#[tool(scopes = "db:admin", destructive)]
fn drop_database(
    /// The database's name.
    name: String,
) -> String {
    DROPS.fetch_add(1, Ordering::SeqCst);
    format!("{name} dropped")
}

/// The run: build and deploy, not the database (`drop_database` is hidden).
fn run(id: &str) -> Arc<Run> {
    let registry = Registry::from_inventory().expect("the tools build a registry");
    let subject = Subject::new("acme").with_scopes(["build:read", "deploy:write"]);
    Arc::new(registry.open_run(id.to_owned(), &subject))
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Value>>,
    /// Every request: its path and its JSON body.
    requests: Mutex<Vec<(String, Value)>>,
}

async fn answer(State(script): State<Arc<Script>>, uri: Uri, body: String) -> impl IntoResponse {
    let body: Value = serde_json::from_str(&body).expect("rig sends JSON");
    script
        .requests
        .lock()
        .unwrap()
        .push((uri.path().to_owned(), body));
    match script.replies.lock().unwrap().pop_front() {
        Some(reply) => (
            StatusCode::OK,
            [("content-type", "application/json")],
            reply.to_string(),
        ),
        None => (
            StatusCode::BAD_REQUEST,
            [("content-type", "application/json")],
            json!({"error": {"message": "the script ran out", "type": "invalid_request_error"}})
                .to_string(),
        ),
    }
}

/// A fake OpenAI endpoint replaying `replies`; its base URL.
async fn fake(replies: Vec<Value>) -> (String, Arc<Script>) {
    let script = Arc::new(Script {
        replies: Mutex::new(replies.into()),
        requests: Mutex::new(Vec::new()),
    });
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, script)
}

/// A Chat Completions response calling `name` with `arguments`.
fn calling(id: &str, name: &str, arguments: Value) -> Value {
    json!({
        "id": format!("chatcmpl-{id}"), "object": "chat.completion", "created": 1, "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": id, "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}],
        }}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    })
}

/// A Chat Completions response answering `text`.
fn answering(text: &str) -> Value {
    json!({
        "id": "chatcmpl-end", "object": "chat.completion", "created": 1, "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 150, "completion_tokens": 10, "total_tokens": 160},
    })
}

/// The tools a request offered: (name, description, parameters), in order.
fn offered(body: &Value) -> Vec<(String, Value, Value)> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| {
                    let function = &tool["function"];
                    (
                        function["name"].as_str().unwrap().to_owned(),
                        function["description"].clone(),
                        function["parameters"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The tool results a request sends back, as (call id, text), in order.
fn results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let text = match &m["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|part| part["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                other => other.to_string(),
            };
            (m["tool_call_id"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

/// rig-agent's hook for calls of tools the agent was not given: the run's own answer, which
/// reads the same for a hidden tool and an unknown one.
struct RunRefusals(Arc<Run>);

impl AgentHook for RunRefusals {
    async fn on_invalid_tool_call(
        &self,
        _ctx: &HookContext,
        event: &InvalidToolCallContext,
    ) -> Option<InvalidToolCallAction> {
        match event.reason {
            InvalidToolCallReason::UnknownTool => refusal(&self.0, &event.tool_name)
                .await
                .map(|reason| InvalidToolCallAction::Skip { reason }),
            _ => None,
        }
    }
}

fn model(url: &str) -> impl Into<rig_core::DynModel<rig_core::operation::Completion>> {
    OpenAIConfig::new("sk-test-key-0001")
        .with_base_url(url)
        .client()
        .chat("test-model")
}

#[tokio::test]
async fn a_rig_agent_sees_only_the_run_and_every_call_goes_through_it() {
    let run = run("rig-1");
    let (url, script) = fake(vec![
        calling("c1", "drop_database", json!({"name": "prod"})),
        calling("c2", "get_status", json!({"projct": "web"})),
        calling("c3", "deploy", json!({"project": "web"})),
        calling("c4", "get_status", json!({"project": "web"})),
        answering("web is green; its deploy waits for a person."),
    ])
    .await;
    let agent = AgentBuilder::new(model(&url))
        .preamble("You operate the build and deploy tools.")
        .dynamic_tools(tools(&run).unwrap())
        .add_hook(RunRefusals(run.clone()))
        .build();

    let response = agent
        .prompt("Is web green? Then deploy it.")
        .max_turns(8)
        .await
        .unwrap();

    // The final answer is what rig returns.
    assert_eq!(
        response.output(),
        "web is green; its deploy waits for a person."
    );
    let requests = script.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 5);

    // Every request offers the run's tools, with the schemas of its OpenAI Chat export, and
    // never the hidden one.
    let export = run.export(Profile::OpenAiChat { strict: false }).unwrap();
    let exported: Vec<(String, Value, Value)> = export
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            let function = &tool["function"];
            (
                function["name"].as_str().unwrap().to_owned(),
                function["description"].clone(),
                function["parameters"].clone(),
            )
        })
        .collect();
    let names: Vec<&str> = exported.iter().map(|(name, ..)| name.as_str()).collect();
    assert_eq!(names, ["deploy", "get_status"]);
    // (The lowering matters: the canonical schema of `get_status` is not the one shown.)
    let canonical = run.export(Profile::Mcp).unwrap();
    assert_ne!(canonical[1]["inputSchema"], exported[1].2);
    for (path, body) in &requests {
        assert_eq!(path, "/v1/chat/completions");
        assert_eq!(body["model"], "test-model");
        assert_eq!(offered(body), exported);
        assert!(!body["tools"].to_string().contains("drop_database"));
    }

    // Each call's answer reaches the model in the next request, in order.
    let answers = results(&requests[4].1);
    let ids: Vec<&str> = answers.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    for (index, (_, body)) in requests.iter().enumerate().skip(1) {
        assert_eq!(results(body), answers[..index], "request {index}");
    }

    // The hidden tool: refused with the run's own text (what registry-agent's loop sends),
    // which reads as an unknown tool's; it never ran.
    let hidden = run.call_blocking(ToolCall::new(
        "x1",
        "drop_database",
        json!({"name": "prod"}),
    ));
    assert_eq!(hidden.error_kind(), Some(ErrorKind::NotAllowed));
    assert_eq!(answers[0].1, hidden.error_text().unwrap());
    let unknown = run.call_blocking(ToolCall::new("x2", "drop_table", json!({})));
    assert_eq!(
        answers[0].1.replace("drop_database", "X"),
        unknown.error_text().unwrap().replace("drop_table", "X")
    );
    assert_eq!(DROPS.load(Ordering::SeqCst), 0);

    // Invalid arguments: the run's observation, and the tool did not run for them.
    assert!(
        answers[1]
            .1
            .starts_with(r#"invalid arguments for "get_status": missing required property "project"; unknown property "projct""#),
        "{}",
        answers[1].1
    );

    // The call that needs a person: not run, and the model is told it waits.
    assert_eq!(DEPLOYS.load(Ordering::SeqCst), 0);
    let waiting = &answers[2].1;
    assert!(
        waiting.starts_with(r#"the call to "deploy" needs a person's approval"#),
        "{waiting}"
    );
    assert!(waiting.contains("will not come back here"), "{waiting}");

    // The visible tool ran once, and its result reached the model.
    assert_eq!(STATUS_READS.load(Ordering::SeqCst), 1);
    assert_eq!(answers[3].1, "web: green");

    // The request waits in the run's approval store: a person's verdict runs the call, once.
    let request = waiting
        .split_once("The request (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(id, _)| id)
        .expect("the text names the request");
    let decided = run
        .decide(request, Verdict::approve().by("ana"))
        .await
        .unwrap()
        .into_answer()
        .unwrap();
    assert_eq!(decided.error_kind(), None);
    assert_eq!(DEPLOYS.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn without_the_hook_rig_fails_the_prompt_on_a_hidden_tool_and_nothing_runs() {
    let run = run("rig-2");
    let (url, script) = fake(vec![calling(
        "c1",
        "drop_database",
        json!({"name": "prod"}),
    )])
    .await;
    let agent = AgentBuilder::new(model(&url))
        .dynamic_tools(tools(&run).unwrap())
        .build();

    let error = agent.prompt("Drop prod.").max_turns(4).await.unwrap_err();

    assert!(
        matches!(&error, PromptError::UnknownToolCall { tool_name, .. } if tool_name == "drop_database"),
        "{error:?}"
    );
    assert_eq!(script.requests.lock().unwrap().len(), 1);
    assert_eq!(DROPS.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn each_profile_gives_its_own_lowering_and_refusal_keeps_to_unknown_names() {
    let run = run("rig-3");
    // Anthropic: the schemas of its export's `input_schema`.
    let export = run.export(Profile::Anthropic).unwrap();
    let anthropic = tools_for(&run, Profile::Anthropic).unwrap();
    assert_eq!(anthropic.len(), 2);
    for (tool, exported) in anthropic.iter().zip(export.as_array().unwrap()) {
        let definition = tool.definition();
        assert_eq!(definition.name.as_str(), exported["name"]);
        assert_eq!(definition.description, exported["description"]);
        assert_eq!(definition.parameters, exported["input_schema"]);
    }
    // Gemini's list is wrapped in `functionDeclarations`.
    let gemini = tools_for(&run, Profile::Gemini).unwrap();
    let names: Vec<&str> = gemini.iter().map(|tool| tool.name().as_str()).collect();
    assert_eq!(names, ["deploy", "get_status"]);

    // An allowed name is not the run's to refuse; nothing runs for a hidden one.
    assert_eq!(refusal(&run, "get_status").await, None);
    let hidden = refusal(&run, "drop_database").await.unwrap();
    assert!(hidden.contains("drop_database"), "{hidden}");
    assert_eq!(DROPS.load(Ordering::SeqCst), 0);
}

/// docs/guide/agent.md's rig example is `examples/guide.rs`, which cargo builds with the tests.
#[test]
fn the_guide_shows_the_compiled_example() {
    let root = env!("CARGO_MANIFEST_DIR");
    let guide = std::fs::read_to_string(format!("{root}/../../docs/guide/agent.md")).unwrap();
    let example = std::fs::read_to_string(format!("{root}/examples/guide.rs")).unwrap();
    let code = example
        .split_once("\n\n")
        .map(|(_, code)| code)
        .expect("the example's doc comment, then its code");
    let section = guide
        .split_once("\n## rig\n")
        .expect("the guide's rig section")
        .1;
    let shown = section
        .split_once("```rust,ignore\n")
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .map(|(shown, _)| shown)
        .expect("the section's example");
    assert_eq!(shown, code);
}
