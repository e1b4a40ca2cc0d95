//! `tools/call` of a trivial tool over MCP streamable HTTP on loopback, against calling it
//! in-process with `Run::call`:
//!
//! - `in-process`: `run.call(ToolCall)` of `add(a, b)` in a Tokio runtime (median of 31
//!   batches of 2,000 calls);
//! - `sequential`: one client, one call at a time over HTTP: latency percentiles; the added
//!   latency is its median minus the in-process median (with rmcp's client, and with the
//!   minimal client below);
//! - `concurrent`: 16 rmcp clients (16 tokens, so 16 subjects and 16 runs), each calling in a
//!   loop for a fixed time: requests per second over all, and latency percentiles;
//! - `concurrent-raw`: the same with 16 minimal HTTP clients (reqwest, one POST per call,
//!   the SSE answer read whole), which cost the machine less than rmcp's client, to show
//!   how much of the 2 cores the client side takes.
//!
//! The server is this program started again as a child process (`bench-mcp serve TOKENS`):
//! `McpServer::http_router` served as `registry_mcp::HttpServer` serves it (bearer-token and
//! protocol-error layers, TCP_NODELAY), on 127.0.0.1 with a free port, logging nothing; beside
//! it a plain axum route that answers a fixed result, to show what HTTP alone costs. Both
//! processes share the machine's cores.
//!
//! Run: `cargo run --release --manifest-path bench/mcp/Cargo.toml` (options: `--clients N`,
//! `--seconds N`, `--calls N`).

use std::io::Write;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::serve::ListenerExt;
use registry_core::{Registry, Subject, ToolCall, tool};
use registry_mcp::{HttpConfig, McpServer, Tokens};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

/// Add two numbers.
#[tool(read_only)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn token(i: usize) -> String {
    format!("bench-client-token-{i:04}")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("serve") {
        serve(&args[2]);
        return;
    }
    let mut clients = 16;
    let mut seconds = 10;
    let mut calls = 5_000;
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        let value = rest
            .next()
            .and_then(|v| v.parse().ok())
            .expect("a number after each option");
        match arg.as_str() {
            "--clients" => clients = value,
            "--seconds" => seconds = value,
            "--calls" => calls = value,
            other => panic!("unknown option {other}"),
        }
    }
    tokio::runtime::Runtime::new().unwrap().block_on(bench(
        clients,
        Duration::from_secs(seconds as u64),
        calls,
    ));
}

/// The server side: the registry of this program (one tool, `add`) over HTTP.
fn serve(tokens: &str) {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let registry = Registry::from_inventory().unwrap();
        let tokens = Tokens::load(tokens).unwrap();
        let config = HttpConfig::new(tokens);
        // The MCP endpoint as `HttpServer` serves it, and beside it a plain route answering
        // a fixed JSON-RPC result: the cost of HTTP alone, for comparison.
        let router = McpServer::new(registry, config.options.clone())
            .unwrap()
            .http_router(&config)
            .route(
                "/baseline",
                axum::routing::post(|body: axum::body::Bytes| async move {
                    let _: Value = serde_json::from_slice(&body).unwrap();
                    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"3"}],"isError":false}}"#
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("http://{}/mcp", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        let listener = listener.tap_io(|tcp| tcp.set_nodelay(true).unwrap());
        axum::serve(listener, router).await.unwrap();
    });
}

async fn bench(clients: usize, duration: Duration, calls: usize) {
    println!(
        "machine: {} cores; {clients} clients, {} s, {calls} sequential calls",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        duration.as_secs()
    );
    let in_process = in_process().await;
    println!("in-process   run.call: median {}", micros(in_process));

    let tokens_file =
        std::env::temp_dir().join(format!("bench-mcp-tokens-{}.json", std::process::id()));
    let entries: Vec<Value> = (0..clients.max(1))
        .map(|i| json!({"id": format!("client-{i}"), "token": token(i), "tenant": "bench"}))
        .collect();
    std::fs::write(&tokens_file, json!({"tokens": entries}).to_string()).unwrap();
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .arg("serve")
        .arg(&tokens_file)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next_line().await.unwrap().expect("the server's URL");

    // One client, one call at a time.
    let client = connect(&url, 0).await;
    for _ in 0..500 {
        call(&client).await;
    }
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        call(&client).await;
        latencies.push(started.elapsed());
    }
    client.cancel().await.unwrap();
    let sequential = Stats::of(latencies);
    println!("sequential   HTTP, 1 rmcp client: {sequential}");
    println!(
        "added latency (HTTP median - in-process median): {}",
        micros(sequential.p50.saturating_sub(in_process))
    );
    let raw = Raw::connect(&url, 0).await;
    for id in 0..500 {
        raw.call(id).await;
    }
    let mut latencies = Vec::with_capacity(calls);
    for id in 0..calls {
        let started = Instant::now();
        raw.call(1_000 + id as u64).await;
        latencies.push(started.elapsed());
    }
    let sequential_raw = Stats::of(latencies);
    println!("sequential   HTTP, 1 raw client:  {sequential_raw}");
    let baseline = url.replace("/mcp", "/baseline");
    let mut latencies = Vec::with_capacity(calls);
    for i in 0..calls + 500 {
        let started = Instant::now();
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}});
        Raw::post(&raw.http, &baseline, &raw.token, None, body.to_string())
            .await
            .text()
            .await
            .unwrap();
        if i >= 500 {
            latencies.push(started.elapsed());
        }
    }
    println!(
        "added latency (raw HTTP median - in-process median): {}",
        micros(sequential_raw.p50.saturating_sub(in_process))
    );
    println!(
        "sequential   HTTP, 1 raw client, a plain axum route (no MCP): {}",
        Stats::of(latencies)
    );

    // Many clients at once, rmcp's client.
    let (rps, stats) = concurrent(&url, clients, duration, Kind::Rmcp).await;
    println!("concurrent   HTTP, {clients} rmcp clients: {rps:.0} calls/s; {stats}");
    let (rps, stats) = concurrent(&url, clients, duration, Kind::Raw).await;
    println!("concurrent   HTTP, {clients} raw clients:  {rps:.0} calls/s; {stats}");

    let _ = std::fs::remove_file(&tokens_file);
    child.kill().await.unwrap();
}

async fn in_process() -> Duration {
    let registry = Registry::from_inventory().unwrap();
    let run = registry.open_run("bench", &Subject::new("bench"));
    let mut batches = Vec::new();
    for _ in 0..31 {
        let started = Instant::now();
        for i in 0..2_000 {
            let observation = run
                .call(ToolCall::new(
                    format!("{i}"),
                    "add",
                    json!({"a": 1, "b": 2}),
                ))
                .await;
            assert!(!observation.is_error());
        }
        batches.push(started.elapsed() / 2_000);
    }
    batches.sort();
    batches[batches.len() / 2]
}

type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

async fn connect(url: &str, i: usize) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token(i)),
    );
    ().serve(transport).await.unwrap()
}

async fn call(client: &Client) {
    let arguments = json!({"a": 1, "b": 2}).as_object().unwrap().clone();
    let result = client
        .call_tool(CallToolRequestParams::new("add").with_arguments(arguments))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
}

#[derive(Clone, Copy)]
enum Kind {
    Rmcp,
    Raw,
}

/// `clients` clients calling in a loop for `duration` after a warm-up: calls per second and
/// latencies.
async fn concurrent(url: &str, clients: usize, duration: Duration, kind: Kind) -> (f64, Stats) {
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for i in 0..clients {
        let url = url.to_owned();
        let (measuring, stop) = (measuring.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            match kind {
                Kind::Rmcp => {
                    let client = connect(&url, i).await;
                    while !stop.load(Ordering::Relaxed) {
                        let started = Instant::now();
                        call(&client).await;
                        if measuring.load(Ordering::Relaxed) {
                            latencies.push(started.elapsed());
                        }
                    }
                    client.cancel().await.unwrap();
                }
                Kind::Raw => {
                    let client = Raw::connect(&url, i).await;
                    let mut id = 1;
                    while !stop.load(Ordering::Relaxed) {
                        id += 1;
                        let started = Instant::now();
                        client.call(id).await;
                        if measuring.load(Ordering::Relaxed) {
                            latencies.push(started.elapsed());
                        }
                    }
                }
            }
            latencies
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(duration).await;
    measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    (all.len() as f64 / elapsed.as_secs_f64(), Stats::of(all))
}

/// A minimal MCP client: initialize, then one POST per call, the answer read whole.
struct Raw {
    http: reqwest::Client,
    url: String,
    token: String,
    session: String,
}

impl Raw {
    async fn connect(url: &str, i: usize) -> Raw {
        let http = reqwest::Client::new();
        let token = token(i);
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
        let response = Self::post(&http, url, &token, None, initialize.to_string()).await;
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        response.text().await.unwrap();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        Self::post(&http, url, &token, Some(&session), initialized.to_string())
            .await
            .text()
            .await
            .unwrap();
        Raw {
            http,
            url: url.to_owned(),
            token,
            session,
        }
    }

    async fn post(
        http: &reqwest::Client,
        url: &str,
        token: &str,
        session: Option<&str>,
        body: String,
    ) -> reqwest::Response {
        let mut request = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {token}"))
            .body(body);
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let response = request.send().await.unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        response
    }

    async fn call(&self, id: u64) {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}});
        let text = Self::post(
            &self.http,
            &self.url,
            &self.token,
            Some(&self.session),
            body.to_string(),
        )
        .await
        .text()
        .await
        .unwrap();
        assert!(text.contains(r#""isError":false"#), "{text}");
    }
}

struct Stats {
    p50: Duration,
    p90: Duration,
    p99: Duration,
    mean: Duration,
}

impl Stats {
    fn of(mut latencies: Vec<Duration>) -> Stats {
        assert!(!latencies.is_empty());
        latencies.sort();
        let at =
            |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
        Stats {
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            mean: latencies.iter().sum::<Duration>() / latencies.len() as u32,
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "latency median {}, p90 {}, p99 {}, mean {}",
            micros(self.p50),
            micros(self.p90),
            micros(self.p99),
            micros(self.mean)
        )
    }
}

fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}
