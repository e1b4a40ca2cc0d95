//! A call forwarded to an upstream MCP server through the registry (`Run::call` of a
//! federated tool: resolution, validation, the gate, then rmcp's client), against the same
//! call sent to the same upstream directly with rmcp's client, interleaved in one run; and
//! the time to start with 10 upstreams (connect, list, pin, build, first readiness check).
//!
//! ```sh
//! cargo run --release --manifest-path bench/federation/Cargo.toml
//! cargo run --release --manifest-path bench/federation/Cargo.toml -- --batches 31 --calls 500 --starts 7
//! ```
//!
//! The upstream is this program started again (`serve-upstream`): a registry with one public
//! tool `echo` served over stdio by `registry_mcp::serve_stdio`, a child process.

use std::time::{Duration, Instant};

use registry_core::{DynamicTool, Registry, Subject, ToolCall};
use registry_mcp::upstream::{Federation, UpstreamLock, UpstreamsConfig};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

fn upstream_registry() -> Registry {
    let echo = DynamicTool::new("echo", "Repeat the text back.")
        .public()
        .parameters(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": false
        }))
        .handler(|_, args| Ok::<_, String>(args["text"].clone()));
    Registry::builder()
        .tool(echo)
        .build()
        .expect("the upstream's registry builds")
}

struct Options {
    batches: usize,
    calls: usize,
    starts: usize,
}

fn options() -> Options {
    let mut options = Options {
        batches: 31,
        calls: 500,
        starts: 7,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = || -> usize {
            args.next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{arg} needs a number"))
        };
        match arg.as_str() {
            "--batches" => options.batches = number(),
            "--calls" => options.calls = number(),
            "--starts" => options.starts = number(),
            other => panic!("unknown argument {other:?}"),
        }
    }
    options
}

fn exe() -> String {
    std::env::current_exe()
        .expect("the program's path")
        .display()
        .to_string()
}

fn config(upstreams: usize) -> UpstreamsConfig {
    let mut text = String::new();
    for i in 0..upstreams {
        text.push_str(&format!(
            "[[upstream]]\nname = \"up{i}\"\ncommand = [{:?}, \"serve-upstream\"]\npublic = true\n",
            exe()
        ));
    }
    UpstreamsConfig::from_toml(&text).expect("the upstreams file")
}

/// Connects to `upstreams` upstreams, lists and pins their tools, builds the registry and
/// checks readiness: what a server does before it serves.
async fn start(upstreams: usize) -> (Federation, Registry) {
    let federation = Federation::connect(config(upstreams), UpstreamLock::in_memory(), &[])
        .await
        .expect("the federation connects");
    let registry = federation
        .register(Registry::builder())
        .build()
        .expect("the registry builds");
    registry.check_readiness().await;
    (federation, registry)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

#[tokio::main]
async fn main() {
    if std::env::args().nth(1).as_deref() == Some("serve-upstream") {
        registry_mcp::serve_stdio(upstream_registry(), Subject::new("bench"))
            .await
            .expect("the upstream serves");
        return;
    }
    let options = options();

    // Direct: rmcp's client on its own child process of the upstream.
    let mut command = tokio::process::Command::new(exe());
    command.arg("serve-upstream");
    let direct =
        ().serve(TokioChildProcess::new(command).expect("the upstream starts"))
            .await
            .expect("the direct client connects");
    let params = || {
        CallToolRequestParams::new("echo")
            .with_arguments(json!({"text": "hi"}).as_object().unwrap().clone())
    };
    let answer = direct.call_tool(params()).await.expect("a direct call");
    assert_eq!(answer.content[0].as_text().unwrap().text, "hi");

    // Forwarded: the same upstream, federated, called through a run.
    let (federation, registry) = start(1).await;
    federation.attach(&registry);
    let run = registry.open_run("bench", &Subject::new("bench"));
    let call = || ToolCall::new("c", "up0_echo", json!({"text": "hi"}));
    let answer = run.call(call()).await;
    assert_eq!(answer.error_kind(), None, "{:?}", answer.error_text());

    for _ in 0..500 {
        direct.call_tool(params()).await.unwrap();
        assert!(!run.call(call()).await.is_error());
    }
    let (mut direct_us, mut forwarded_us) = (Vec::new(), Vec::new());
    for batch in 0..options.batches {
        let measure_direct = async {
            let start = Instant::now();
            for _ in 0..options.calls {
                direct.call_tool(params()).await.unwrap();
            }
            start.elapsed().as_secs_f64() * 1e6 / options.calls as f64
        };
        let measure_forwarded = async {
            let start = Instant::now();
            for _ in 0..options.calls {
                let answer = run.call(call()).await;
                assert!(!answer.is_error());
            }
            start.elapsed().as_secs_f64() * 1e6 / options.calls as f64
        };
        // Interleaved, each first in turn.
        if batch % 2 == 0 {
            direct_us.push(measure_direct.await);
            forwarded_us.push(measure_forwarded.await);
        } else {
            forwarded_us.push(measure_forwarded.await);
            direct_us.push(measure_direct.await);
        }
    }
    let ratios: Vec<f64> = forwarded_us
        .iter()
        .zip(&direct_us)
        .map(|(f, d)| f / d)
        .collect();
    let (d, f) = (median(direct_us.clone()), median(forwarded_us.clone()));
    println!(
        "sequential calls of `echo`, {} batches of {} calls, interleaved (median µs per call):",
        options.batches, options.calls
    );
    println!("| path | µs per call | range |");
    println!("| --- | --- | --- |");
    let range = |v: &[f64]| {
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(0.0, f64::max);
        format!("{min:.1}–{max:.1}")
    };
    println!("| direct, rmcp client | {d:.1} | {} |", range(&direct_us));
    println!(
        "| forwarded, Run::call through the registry | {f:.1} | {} |",
        range(&forwarded_us)
    );
    println!(
        "overhead: {:.1} µs per call; ratio of medians {:.2}, median of per-batch ratios {:.2}",
        f - d,
        f / d,
        median(ratios)
    );
    drop(run);
    drop(registry);
    drop(federation);
    drop(direct);

    // Start: connect, list, pin, register, build, check readiness.
    for upstreams in [1, 10] {
        let mut times = Vec::new();
        for _ in 0..options.starts {
            let started = Instant::now();
            let (federation, registry) = start(upstreams).await;
            let elapsed = started.elapsed();
            assert_eq!(registry.len(), upstreams);
            times.push(elapsed.as_secs_f64() * 1e3);
            drop(registry);
            drop(federation);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        println!(
            "start with {upstreams} upstream(s): median {:.1} ms ({} starts, {})",
            median(times.clone()),
            options.starts,
            range(&times)
        );
    }
}
