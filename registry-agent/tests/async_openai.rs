//! Another client with the same boundary: async-openai's Chat Completions client sends the
//! requests (its "bring your own types" methods, which take and give JSON), and the run does
//! the rest through its profile: `run.export(profile)` is the request's `tools`,
//! `profile.parse_calls` reads the response's calls, `run.call` runs each (the allowed set,
//! the arguments' schema, the gate), `profile.render` is the message sent back. The loop in
//! `loop_with_async_openai` is the one docs/guide/agent.md ("Other clients") shows.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use registry_core::{DynamicTool, Profile, Registry, Run, Subject};
use serde_json::{Value, json};

/// The guide's loop: async-openai sends, the run decides. Returns the model's answer.
async fn loop_with_async_openai(
    client: &Client<OpenAIConfig>,
    run: &Run,
    prompt: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let profile = Profile::OpenAiChat { strict: false };
    // The run's tools, never the registry's: fixed when the run opened.
    let tools = run.export(profile)?;
    let mut messages = vec![json!({"role": "user", "content": prompt})];
    for _turn in 0..8 {
        let response: Value = client
            .chat()
            .create_byot(json!({"model": "local-model", "messages": messages, "tools": tools}))
            .await?;
        messages.push(response["choices"][0]["message"].clone());
        // Untrusted: an unknown or hidden tool, bad arguments, each an observation.
        let calls = profile.parse_calls(&response)?;
        if calls.is_empty() {
            let answer = response["choices"][0]["message"]["content"].as_str();
            return Ok(answer.unwrap_or_default().to_owned());
        }
        for call in calls {
            let observation = run.call(call).await;
            messages.push(profile.render(&observation));
        }
    }
    Err("no answer in 8 turns".into())
}

/// A scripted Chat Completions endpoint that records every request.
#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Value>>,
    requests: Mutex<Vec<Value>>,
}

async fn fake(replies: Vec<Value>) -> (String, Arc<Script>) {
    let script = Arc::new(Script {
        replies: Mutex::new(replies.into()),
        requests: Mutex::default(),
    });
    let served = script.clone();
    let app = axum::Router::new().fallback(move |body: String| {
        let script = served.clone();
        async move {
            script
                .requests
                .lock()
                .unwrap()
                .push(serde_json::from_str::<Value>(&body).unwrap_or(Value::Null));
            let reply = script.replies.lock().unwrap().pop_front();
            let reply =
                reply.unwrap_or_else(|| json!({"error": {"message": "the script ran out"}}));
            ([("content-type", "application/json")], reply.to_string())
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, script)
}

fn calling(calls: &[(&str, &str, Value)]) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "local-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": calls.iter().map(|(id, name, arguments)| json!({
                "id": id, "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()},
            })).collect::<Vec<_>>(),
        }}],
    })
}

#[tokio::test]
async fn async_openai_sends_the_run_decides() {
    let statuses = Arc::new(AtomicUsize::new(0));
    let drops = Arc::new(AtomicUsize::new(0));
    let (counted, dropped) = (statuses.clone(), drops.clone());
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("get_status", "Read a project's build status.")
                .scopes(["build:read"])
                .read_only()
                .parameters(json!({
                    "type": "object",
                    "properties": {"project": {"type": "string"}},
                    "required": ["project"],
                }))
                .handler(move |_, args| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>(json!(format!(
                        "{}: green",
                        args["project"].as_str().unwrap_or("?")
                    )))
                }),
        )
        .tool(
            DynamicTool::new("drop_database", "Drop a database.")
                .scopes(["db:admin"])
                .destructive()
                .handler(move |_, _| {
                    dropped.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>(json!("dropped"))
                }),
        )
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["build:read"]));
    let (url, script) = fake(vec![
        calling(&[
            ("c1", "get_status", json!({"project": "web"})),
            ("c2", "drop_database", json!({"name": "prod"})),
            ("c3", "get_status", json!({"projct": "web"})),
        ]),
        json!({
            "id": "chatcmpl-2", "object": "chat.completion", "created": 0, "model": "local-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "web is green."}}],
        }),
    ])
    .await;
    let client = Client::with_config(
        OpenAIConfig::new()
            .with_api_base(&url)
            .with_api_key("sk-test"),
    );

    let answer = loop_with_async_openai(&client, &run, "Is web green? Then drop prod.")
        .await
        .unwrap();
    assert_eq!(answer, "web is green.");
    assert_eq!(
        statuses.load(Ordering::SeqCst),
        1,
        "the valid call ran once"
    );
    assert_eq!(drops.load(Ordering::SeqCst), 0, "the hidden tool never ran");

    let requests = script.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    for request in requests.iter() {
        assert_eq!(
            request["tools"],
            run.export(Profile::OpenAiChat { strict: false }).unwrap()
        );
        assert!(
            !request.to_string().contains("Drop a database"),
            "{request}"
        );
    }
    // The second request answers every call, in the model's order, as the run saw them.
    let answers: Vec<(&str, &str)> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0], ("c1", "web: green"));
    assert_eq!(answers[1].0, "c2");
    assert!(answers[1].1.contains("drop_database"), "{answers:?}");
    assert_eq!(answers[2].0, "c3");
    assert!(answers[2].1.starts_with("invalid arguments"), "{answers:?}");
}

#[test]
fn the_guide_shows_this_loop_as_written() {
    let source = include_str!("async_openai.rs");
    let start = source
        .find("/// The guide's loop: async-openai sends")
        .expect("the loop's doc comment");
    let end = start + source[start..].find("\n}\n").expect("the loop's end") + 3;
    let guide = include_str!("../../docs/guide/agent.md");
    assert!(
        guide.contains(&source[start..end]),
        "docs/guide/agent.md (\"Other clients\") does not show loop_with_async_openai as it is here"
    );
}
