//! Benchmark of the PostgreSQL control plane (`registry-postgres`) on a throwaway cluster
//! started with the machine's own server programs:
//!
//! 1. **propagation**: from the commit of a revocation (or restoration) by one connection to
//!    the moment three replicas (three registries, each with its own connections and change
//!    feed) all refuse (or serve) the tool: p50 and p99 over `--rounds` changes;
//! 2. **calls over HTTP**: `tools/call` through `registry-mcp`'s HTTP server by 16 rmcp
//!    clients, with the registry's stores in memory and with the PostgreSQL approval and quota
//!    stores, audit and change feed, interleaved in the same run: calls/s and latency;
//! 3. **audit**: events per second written by `PgAuditSink`, from the first call to the last
//!    event flushed;
//! 4. **approvals**: a call asking for approval on replica A (the request stored), then
//!    approved on replica B (read, decided in one transaction, run): the round trip;
//! 5. **quotas**: the latency a shared token bucket adds to one in-process call.
//!
//! ```text
//! cargo run --release --manifest-path bench/replicas/Cargo.toml            # full
//! cargo run --release --manifest-path bench/replicas/Cargo.toml -- --quick # a smaller run
//! ```

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use registry_core::server::RegistryExt;
use registry_core::approval::Verdict;
use registry_core::{DynamicTool, Registry, RegistryBuilder, Subject, ToolCall};
use registry_mcp::{EdgeLimits, HttpConfig, HttpServer, Principal, Tokens};
use registry_postgres::throwaway::Cluster;
use registry_postgres::{AuditConfig, ChangeFeed, ControlPlane};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

const TOKEN: &str = "bench-token-0001";

struct Options {
    rounds: usize,
    http_rounds: usize,
    seconds: u64,
    clients: usize,
    audit_calls: usize,
    approvals: usize,
    quota_calls: usize,
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let options = if quick {
        Options {
            rounds: 50,
            http_rounds: 1,
            seconds: 2,
            clients: 16,
            audit_calls: 10_000,
            approvals: 50,
            quota_calls: 500,
        }
    } else {
        Options {
            rounds: 300,
            http_rounds: 3,
            seconds: 5,
            clients: 16,
            audit_calls: 50_000,
            approvals: 300,
            quota_calls: 3_000,
        }
    };
    let cluster = Cluster::start().expect("a throwaway PostgreSQL cluster");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        println!(
            "machine: {} cores; PostgreSQL on loopback (throwaway cluster, fsync off)",
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
        propagation(&cluster.create_database("propagation").unwrap(), &options).await;
        http(&cluster.create_database("http").unwrap(), &options).await;
        audit(&cluster.create_database("audit").unwrap(), &options).await;
        approvals(&cluster.create_database("approvals").unwrap(), &options).await;
        quotas(&cluster.create_database("quotas").unwrap(), &options).await;
    });
}

/// The benchmark's tools: `status` (read-only, cheap) and `deploy` (needs approval).
fn tools() -> RegistryBuilder {
    Registry::builder()
        .tool(
            DynamicTool::new("status", "Read the status of a project.")
                .public()
                .parameters(json!({
                    "type": "object",
                    "properties": {"project": {"type": "string"}},
                    "required": ["project"],
                    "additionalProperties": false
                }))
                .read_only()
                .handler(|_, args: serde_json::Value| {
                    Ok::<_, String>(json!(format!("{}: green", args["project"])))
                }),
        )
        .tool(
            DynamicTool::new("deploy", "Deploy a project.")
                .public()
                .parameters(json!({
                    "type": "object",
                    "properties": {"project": {"type": "string"}},
                    "required": ["project"],
                    "additionalProperties": false
                }))
                .needs_approval()
                .handler(|_, _| Ok::<_, String>(json!("deployed"))),
        )
}

fn status_call(id: u64) -> ToolCall {
    ToolCall::new(format!("c{id}"), "status", json!({"project": "web"}))
}

/// A replica: a registry whose stores, audit and change feed are on the plane at `url`.
struct Replica {
    registry: Registry,
    feed: ChangeFeed,
    writer: registry_postgres::AuditWriter,
}

async fn replica(url: &str, name: &str, builder: RegistryBuilder) -> Replica {
    let plane = ControlPlane::builder(url)
        .replica(name)
        .connect()
        .await
        .unwrap();
    let (sink, writer) = plane.audit_sink(AuditConfig::default());
    let registry = builder
        .approval_store(plane.approval_store())
        .quota_store(plane.quota_store())
        .audit_sink(sink)
        .build()
        .unwrap();
    let feed = plane.follow(&registry).await.unwrap();
    Replica {
        registry,
        feed,
        writer,
    }
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index.min(samples.len() - 1)]
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

fn us(duration: Duration) -> String {
    format!("{:.0} µs", duration.as_secs_f64() * 1e6)
}

async fn propagation(url: &str, options: &Options) {
    let admin = ControlPlane::builder(url)
        .replica("bench-admin")
        .connect()
        .await
        .unwrap();
    let mut replicas = Vec::new();
    for name in ["r1", "r2", "r3"] {
        replicas.push(replica(url, name, tools()).await);
    }
    let registries: Vec<Registry> = replicas.iter().map(|r| r.registry.clone()).collect();
    let mut delays = Vec::new();
    for round in 0..options.rounds {
        let revoke = round % 2 == 0;
        if revoke {
            admin.revoke("status", "bench", "bench").await.unwrap();
        } else {
            admin.restore("status", "bench", "bench").await.unwrap();
        }
        let committed = Instant::now();
        let watched = registries.clone();
        let delay = tokio::task::spawn_blocking(move || {
            let deadline = committed + Duration::from_secs(10);
            loop {
                let all = watched
                    .iter()
                    .all(|registry| registry.is_revoked_now("status") == Some(revoke));
                if all {
                    return committed.elapsed();
                }
                assert!(Instant::now() < deadline, "a change did not arrive in 10 s");
                std::thread::sleep(Duration::from_micros(50));
            }
        })
        .await
        .unwrap();
        delays.push(delay);
    }
    // A run opened before the last revocation is refused on every replica: the state read
    // above is the state calls are checked against.
    let runs: Vec<_> = registries
        .iter()
        .map(|registry| registry.open_run("check", &Subject::new("acme")))
        .collect();
    admin.revoke("status", "bench", "bench").await.unwrap();
    for (registry, run) in registries.iter().zip(&runs) {
        while registry.is_revoked_now("status") != Some(true) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let refused = run.call(status_call(0)).await;
        assert_eq!(
            refused.error_kind(),
            Some(registry_core::ErrorKind::Revoked)
        );
    }
    let p50 = percentile(&mut delays, 0.5);
    let p99 = percentile(&mut delays, 0.99);
    let max = *delays.iter().max().unwrap();
    println!();
    println!(
        "## 1. Propagation: commit of a change -> applied on all 3 replicas ({} changes, revoke and restore alternately)",
        options.rounds
    );
    println!("| p50 | p99 | max |");
    println!("| --- | --- | --- |");
    println!("| {} | {} | {} |", ms(p50), ms(p99), ms(max));
    for replica in replicas {
        replica.feed.shutdown().await;
        let _ = replica.writer.shutdown(Duration::from_secs(10)).await;
    }
}

/// Serves `registry` over HTTP on loopback with the edge's request rate lifted.
async fn serve(registry: Registry) -> String {
    let mut tokens = Tokens::new();
    tokens
        .insert(TOKEN, Principal::new("bench", Subject::new("acme")))
        .unwrap();
    let limits = EdgeLimits::default()
        .with_requests_per_second(10_000_000)
        .with_burst(10_000_000)
        // Many clients of one token on one address: the caps per IP, on unauthenticated
        // connections and on one principal's streams are lifted too.
        .with_max_connections_per_ip(1_000_000)
        .with_max_unauthenticated_connections(1_000_000)
        .with_max_streams_per_principal(1_000_000);
    let config = HttpConfig::new(tokens)
        .with_addr(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .with_limits(limits);
    let server = HttpServer::bind(registry, config).await.unwrap();
    let url = server.url();
    tokio::spawn(server.serve());
    url
}

/// `clients` rmcp clients calling `status` for `seconds`: calls per second, and each call's
/// latency.
async fn load(url: &str, clients: usize, seconds: u64) -> (f64, Vec<Duration>) {
    let mut connected = Vec::new();
    for _ in 0..clients {
        let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(TOKEN);
        let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
        connected.push(client);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for client in &connected {
        let peer = client.peer().clone();
        let stop = stop.clone();
        let count = count.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let params = CallToolRequestParams::new("status")
                    .with_arguments(json!({"project": "web"}).as_object().unwrap().clone());
                let started = Instant::now();
                let result = peer.call_tool(params).await.unwrap();
                assert_eq!(result.is_error, Some(false), "{result:?}");
                latencies.push(started.elapsed());
                count.fetch_add(1, Ordering::Relaxed);
            }
            latencies
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = count.load(Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let calls = count.load(Ordering::Relaxed) - before;
    let rate = calls as f64 / started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.unwrap());
    }
    for client in connected {
        let _ = client.cancel().await;
    }
    (rate, latencies)
}

async fn http(url: &str, options: &Options) {
    // The same generous rate limit on both, so that every call takes a token: in memory on
    // one, in PostgreSQL on the other.
    let limit = "1000000/s";
    let memory = serve(tools().rate_limit(limit).build().unwrap()).await;
    let shared = replica(url, "http", tools().rate_limit(limit)).await;
    let postgres = serve(shared.registry.clone()).await;
    let exact_url = {
        // The same, with a token from the database for every call.
        let plane = ControlPlane::builder(url)
            .replica("exact")
            .connect()
            .await
            .unwrap();
        let registry = tools()
            .rate_limit(limit)
            .approval_store(plane.approval_store())
            .quota_store(plane.quota_store().exact())
            .build()
            .unwrap();
        serve(registry).await
    };
    let mut rows: Vec<(&str, Vec<f64>, Vec<Duration>)> = vec![
        ("in memory", Vec::new(), Vec::new()),
        ("PostgreSQL", Vec::new(), Vec::new()),
        (
            "PostgreSQL, quota `exact()`, no audit",
            Vec::new(),
            Vec::new(),
        ),
    ];
    for _ in 0..options.http_rounds {
        for (index, target) in [&memory, &postgres, &exact_url].into_iter().enumerate() {
            let (rate, latencies) = load(target, options.clients, options.seconds).await;
            rows[index].1.push(rate);
            rows[index].2.extend(latencies);
        }
    }
    let flushed = shared.writer.flush(Duration::from_secs(30)).await;
    println!();
    println!(
        "## 2. tools/call over HTTP, {} rmcp clients, {} interleaved rounds of {} s",
        options.clients, options.http_rounds, options.seconds
    );
    println!(
        "PostgreSQL: shared quota store (limit 1,000,000/s: tokens in chunks of 100), approval store, change feed, audit of every call ({} events written{})",
        shared.writer.written(),
        if flushed { "" } else { ", NOT all flushed" }
    );
    println!("| stores | calls/s (median round) | ratio | p50 | p99 |");
    println!("| --- | --- | --- | --- | --- |");
    let median = |rates: &mut Vec<f64>| {
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    };
    let base = median(&mut rows[0].1.clone());
    for (name, rates, latencies) in &mut rows {
        let rate = median(rates);
        println!(
            "| {name} | {rate:.0} | {:.2} | {} | {} |",
            rate / base,
            ms(percentile(latencies, 0.5)),
            ms(percentile(latencies, 0.99))
        );
    }
    shared.feed.shutdown().await;
    let _ = shared.writer.shutdown(Duration::from_secs(10)).await;
}

async fn audit(url: &str, options: &Options) {
    let plane = ControlPlane::builder(url)
        .replica("audit")
        .connect()
        .await
        .unwrap();
    let (sink, writer) = plane.audit_sink(AuditConfig::default());
    let registry = tools().audit_sink(sink).build().unwrap();
    let run = Arc::new(registry.open_run("audit", &Subject::new("acme")));
    let started = Instant::now();
    let mut tasks = Vec::new();
    let per_task = options.audit_calls / 2;
    for task in 0..2u64 {
        let run = run.clone();
        tasks.push(tokio::task::spawn_blocking(move || {
            for i in 0..per_task as u64 {
                let observation = run.call_blocking(status_call(task * 1_000_000 + i));
                assert_eq!(observation.error_kind(), None);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let recorded = started.elapsed();
    assert!(writer.flush(Duration::from_secs(120)).await);
    let flushed = started.elapsed();
    let written = writer.written();
    println!();
    println!("## 3. Audit: {written} events (one per call, plus the projection) from 2 threads");
    println!("| recorded in | all written after | events/s written |");
    println!("| --- | --- | --- |");
    println!(
        "| {} | {} | {:.0} |",
        ms(recorded),
        ms(flushed),
        written as f64 / flushed.as_secs_f64()
    );
    let _ = writer.shutdown(Duration::from_secs(10)).await;
}

async fn approvals(url: &str, options: &Options) {
    let a = replica(url, "a", tools()).await;
    let b = replica(url, "b", tools()).await;
    let subject = Subject::new("acme");
    let run_a = a.registry.open_run("ask", &subject);
    let run_b = b.registry.open_run("decide", &subject);
    let mut asked = Vec::new();
    let mut approved = Vec::new();
    for i in 0..options.approvals {
        let started = Instant::now();
        let pending = run_a
            .call(ToolCall::new(
                format!("d{i}"),
                "deploy",
                json!({"project": "web"}),
            ))
            .await;
        let id = pending
            .approval()
            .expect("an approval request")
            .id()
            .to_owned();
        let stored = Instant::now();
        let done = run_b
            .decide(&id, Verdict::approve())
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert_eq!(done.error_kind(), None);
        approved.push(stored.elapsed());
        asked.push(stored - started);
    }
    let mut total: Vec<Duration> = asked.iter().zip(&approved).map(|(a, b)| *a + *b).collect();
    println!();
    println!(
        "## 4. Approvals: asked on replica A, approved on replica B and run there ({} requests)",
        options.approvals
    );
    println!("| step | p50 | p99 |");
    println!("| --- | --- | --- |");
    println!(
        "| call -> request stored (A) | {} | {} |",
        ms(percentile(&mut asked, 0.5)),
        ms(percentile(&mut asked, 0.99))
    );
    println!(
        "| approve -> decided and run (B) | {} | {} |",
        ms(percentile(&mut approved, 0.5)),
        ms(percentile(&mut approved, 0.99))
    );
    println!(
        "| round trip | {} | {} |",
        ms(percentile(&mut total, 0.5)),
        ms(percentile(&mut total, 0.99))
    );
    for replica in [a, b] {
        replica.feed.shutdown().await;
        let _ = replica.writer.shutdown(Duration::from_secs(10)).await;
    }
}

async fn quotas(url: &str, options: &Options) {
    let plane = ControlPlane::builder(url)
        .replica("quotas")
        .connect()
        .await
        .unwrap();
    let limit = "1000000/s";
    let memory = tools().rate_limit(limit).build().unwrap();
    let exact = tools()
        .rate_limit(limit)
        .quota_store(plane.quota_store().exact())
        .build()
        .unwrap();
    let chunked = tools()
        .rate_limit(limit)
        .quota_store(plane.quota_store())
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for (name, registry) in [
        ("in memory", &memory),
        ("PostgreSQL, a token per call (`exact()`)", &exact),
        (
            "PostgreSQL, in chunks (the default for this limit)",
            &chunked,
        ),
    ] {
        let run = registry.open_run("quota", &Subject::new("acme"));
        for i in 0..100 {
            let _ = run.call(status_call(i)).await;
        }
        let mut latencies = Vec::new();
        for i in 0..options.quota_calls as u64 {
            let started = Instant::now();
            let observation = run.call(status_call(i)).await;
            latencies.push(started.elapsed());
            assert_eq!(observation.error_kind(), None);
        }
        rows.push((
            name,
            percentile(&mut latencies, 0.5),
            percentile(&mut latencies, 0.99),
        ));
    }
    println!();
    println!(
        "## 5. Quotas: one in-process call with a rate limit, sequential ({} calls)",
        options.quota_calls
    );
    println!("| bucket | p50 | p99 |");
    println!("| --- | --- | --- |");
    for (name, p50, p99) in &rows {
        println!("| {name} | {} | {} |", us(*p50), us(*p99));
    }
    println!(
        "added by the shared bucket at p50: {} a token per call, {} in chunks",
        us(rows[1].1.saturating_sub(rows[0].1)),
        us(rows[2].1.saturating_sub(rows[0].1))
    );
}
