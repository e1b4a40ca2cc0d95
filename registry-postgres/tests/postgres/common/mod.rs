//! Helpers shared by the integration tests: a throwaway cluster, planes with fast timings,
//! counted tools, and waits with deadlines.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use registry_core::{DynamicTool, Registry, RegistryBuilder, Subject, ToolCall, ToolContext};
use registry_postgres::ControlPlane;
use registry_postgres::throwaway::Cluster;
use serde_json::{Value, json};

/// This test binary's shared cluster and a fresh database of this test's own in it, named
/// `db` and a number: (cluster, url). For a test that needs nothing cluster-wide: starting a
/// cluster of its own (`initdb`) took longer than most tests.
pub(crate) fn cluster(db: &str) -> (&'static Cluster, String) {
    let cluster = Cluster::shared().expect("the shared throwaway cluster starts");
    let url = cluster.fresh_database(db).expect("a database is created");
    (cluster, url)
}

/// A cluster of its own and a database in it: (cluster, url). For a test that stops the
/// server or changes what is cluster-wide (roles).
pub(crate) fn own_cluster(db: &str) -> (Cluster, String) {
    let cluster = Cluster::start().expect("a throwaway cluster starts");
    let url = cluster.create_database(db).expect("a database is created");
    (cluster, url)
}

/// A plane with fast timings (heartbeat 50 ms, lease 500 ms, timeout 1 s), without the
/// default retention (the tests of retention build their planes themselves). Opening a
/// connection may take 10 s: on a loaded machine (CI builds beside the tests) a server's new
/// backend has taken longer than a second to start, and that is not what the tests measure.
pub(crate) async fn plane(url: &str, replica: &str) -> ControlPlane {
    plane_with_timeout(url, replica, Duration::from_secs(1)).await
}

/// The same plane with a timeout of 5 s: for a test of what the database does, not of how
/// soon an answer that does not come is given up on (on a loaded machine, asking for an
/// approval has taken longer than 1 s).
pub(crate) async fn patient_plane(url: &str, replica: &str) -> ControlPlane {
    plane_with_timeout(url, replica, Duration::from_secs(5)).await
}

async fn plane_with_timeout(url: &str, replica: &str, timeout: Duration) -> ControlPlane {
    let url = with_connect_timeout(url);
    ControlPlane::builder(&url)
        .replica(replica)
        .heartbeat(Duration::from_millis(50))
        .lease(Duration::from_millis(500))
        .timeout(timeout)
        .no_retention()
        .connect()
        .await
        .expect("the plane connects")
}

/// `url` with `connect_timeout=10` (seconds) added to its query.
pub(crate) fn with_connect_timeout(url: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}connect_timeout=10")
}

/// A direct connection to the database, for checking the tables.
pub(crate) async fn sql(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("a direct connection");
    tokio::spawn(connection);
    client
}

/// Runs a test body under a deadline: a hung test fails instead of hanging.
pub(crate) async fn bounded<T>(limit: Duration, body: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, body)
        .await
        .unwrap_or_else(|_| panic!("the test did not finish within {limit:?}"))
}

/// Waits until `condition` holds, polling every 2 ms, for `limit` at most; panics with
/// `what` otherwise. Returns how long it took.
pub(crate) async fn wait_until(
    limit: Duration,
    what: &str,
    mut condition: impl FnMut() -> bool,
) -> Duration {
    let started = Instant::now();
    loop {
        if condition() {
            return started.elapsed();
        }
        assert!(started.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// [`wait_until`] with an asynchronous condition, polled every 20 ms.
pub(crate) async fn wait_until_async<F, Fut>(
    limit: Duration,
    what: &str,
    mut condition: F,
) -> Duration
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        if condition().await {
            return started.elapsed();
        }
        assert!(started.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Counts a tool's executions.
#[derive(Clone, Default)]
pub(crate) struct Counter(pub(crate) Arc<AtomicUsize>);

impl Counter {
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

pub(crate) fn project_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"project": {"type": "string"}},
        "required": ["project"],
        "additionalProperties": false
    })
}

/// `deploy`: needs approval, counted.
pub(crate) fn deploy(counter: &Counter) -> DynamicTool {
    let counter = counter.clone();
    DynamicTool::new("deploy", "Deploy a project.")
        .public()
        .parameters(project_schema())
        .needs_approval()
        .handler(move |_: &ToolContext, args: Value| {
            counter.0.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!(format!("deployed {}", args["project"])))
        })
}

/// `status`: free, counted, described as `description` (another description is another
/// definition).
pub(crate) fn status_described(counter: &Counter, description: &str) -> DynamicTool {
    let counter = counter.clone();
    DynamicTool::new("status", description)
        .public()
        .parameters(project_schema())
        .read_only()
        .handler(move |_: &ToolContext, args: Value| {
            counter.0.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!(format!("{} is green", args["project"])))
        })
}

pub(crate) fn status(counter: &Counter) -> DynamicTool {
    status_described(counter, "Read the build status of a project.")
}

/// `echo`: free, counted, with a `text` argument.
pub(crate) fn echo(counter: &Counter) -> DynamicTool {
    let counter = counter.clone();
    DynamicTool::new("echo", "Say the text back.")
        .public()
        .parameters(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": false
        }))
        .read_only()
        .handler(move |_: &ToolContext, args: Value| {
            counter.0.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!(args["text"].as_str().map(str::len)))
        })
}

/// A builder with `deploy`, `status` and `echo`, all counted by `counter`.
pub(crate) fn builder(counter: &Counter) -> RegistryBuilder {
    Registry::builder()
        .tool(deploy(counter))
        .tool(status(counter))
        .tool(echo(counter))
}

pub(crate) fn subject() -> Subject {
    Subject::new("acme").with_agent("release-bot")
}

pub(crate) fn call(id: &str, tool: &str) -> ToolCall {
    ToolCall::new(id, tool, json!({"project": "web"}))
}

/// An `echo` call saying `text`.
pub(crate) fn echo_call(id: &str, text: &str) -> ToolCall {
    ToolCall::new(id, "echo", json!({ "text": text }))
}
