//! The loop's own cost per turn (issue 37's goal: at most 1.2x the fake endpoint's round trip
//! alone, on a 10-tool run).
//!
//! `cargo run --release -p registry-agent --example bench`
//!
//! A fake OpenAI Chat endpoint on loopback answers at once: the first turn calls a tool, the
//! second answers. The loop's turn (the request built with the run's export, sent, the
//! response read and checked, the call resolved, gated and run, its result rendered) is timed
//! against the round trip alone: the same two request bodies posted with the same client and
//! their responses parsed as JSON, by a client with the same timeout. Both in one process,
//! interleaved, the ratio from the same run; once on a current-thread runtime (the endpoint
//! and the loop on one thread: the round trip is CPU, the figure stable) and once on a
//! multi-threaded one with two workers (the round trip is mostly threads waking each other).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::IntoResponse;
use registry_agent::{Agent, AgentEnd, Api, ModelConfig};
use registry_core::{DynamicTool, Registry, Subject};
use serde_json::{Value, json};

/// Answers a request that has no tool result yet with a call, and one that has with an answer.
async fn answer(State(served): State<Arc<AtomicUsize>>, body: String) -> impl IntoResponse {
    served.fetch_add(1, Ordering::Relaxed);
    let answered = body.contains("\"role\":\"tool\"");
    let reply = if answered {
        json!({"choices": [{"message": {"role": "assistant", "content": "tool_3 says 42."}}],
               "usage": {"prompt_tokens": 300, "completion_tokens": 8}})
    } else {
        json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "tool_3", "arguments": "{\"n\": 42}"}}
        ]}}], "usage": {"prompt_tokens": 250, "completion_tokens": 12}})
    };
    ([("content-type", "application/json")], reply.to_string())
}

fn registry() -> Registry {
    (0..10)
        .fold(Registry::builder(), |builder, i| {
            builder.tool(
                DynamicTool::new(
                    format!("tool_{i}"),
                    format!("Tool number {i}: echoes a number."),
                )
                .scopes(["bench"])
                .read_only()
                .parameters(json!({
                    "type": "object",
                    "properties": {"n": {"type": "integer", "description": "A number."}},
                    "required": ["n"],
                }))
                .non_blocking()
                .handler(|_, args: Value| Ok::<_, String>(args["n"].clone())),
            )
        })
        .build()
        .unwrap()
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    println!("## The loop's cost per turn (10-tool run, OpenAI Chat, fake endpoint on loopback)\n");
    println!(
        "| runtime | round trip alone, median per turn (µs) | the loop, median per turn (µs) | the loop's own (µs) | ratio | goal: ≤ 1.2x |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | --- |");
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    current.block_on(measure("current-thread"));
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    multi.block_on(measure("multi-thread, 2 workers"));
}

async fn measure(runtime: &str) {
    let served = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(served.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let registry = registry();
    let subject = Subject::new("acme").with_scopes(["bench"]);
    let agent = Agent::new(ModelConfig::new(Api::OpenAiChat, &base, "bench-model")).unwrap();

    // The two request bodies the loop sends, captured once, for the round trip alone.
    let run = registry.open_run("capture", &subject);
    let outcome = agent.run(&run, "What does tool_3 say?").await.unwrap();
    let AgentEnd::Answered { state, .. } = outcome else {
        panic!("{outcome:?}")
    };
    let tools = run.export(Api::OpenAiChat.profile()).unwrap();
    let conversation = state.conversation();
    let bodies: Vec<String> = [&conversation[..1], &conversation[..3]]
        .iter()
        .map(|messages| {
            json!({"model": "bench-model", "messages": messages, "max_completion_tokens": 1024, "tools": tools})
                .to_string()
        })
        .collect();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let url = format!("{base}/chat/completions");

    let rounds = 2_000;
    for _ in 0..200 {
        let run = registry.open_run("warm", &subject);
        let _ = agent.run(&run, "What does tool_3 say?").await.unwrap();
    }
    let mut alone = Vec::with_capacity(rounds);
    let mut looped = Vec::with_capacity(rounds);
    for i in 0..rounds {
        // Interleaved, so that both see the same machine.
        let started = Instant::now();
        for body in &bodies {
            let response = client
                .post(&url)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            let _: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        }
        alone.push(started.elapsed() / 2);
        let run = registry.open_run(format!("r{i}"), &subject);
        let started = Instant::now();
        let outcome = agent.run(&run, "What does tool_3 say?").await.unwrap();
        looped.push(started.elapsed() / 2);
        assert!(matches!(outcome, AgentEnd::Answered { .. }));
    }
    let alone = median(alone);
    let looped = median(looped);
    let ratio = looped.as_secs_f64() / alone.as_secs_f64();
    println!(
        "| {runtime} | {:.1} | {:.1} | {:.1} | {ratio:.2}x | {} |",
        micros(alone),
        micros(looped),
        micros(looped) - micros(alone),
        if ratio <= 1.2 { "met" } else { "missed" }
    );
    assert_eq!(served.load(Ordering::Relaxed), 2 * (1 + 200 + 2 * rounds));
}
