//! Durable tasks across replicas: two example MCP servers (`mcp_server --postgres`), each its
//! own process, sharing their tasks through one control plane on a real PostgreSQL cluster
//! (throwaway); rmcp's clients talk to them over HTTP on loopback.
//!
//! - a task started on replica A is read with `tasks/get` and cancelled with `tasks/cancel`
//!   on replica B, and the cancel reaches the tool on A within one second;
//! - a task's tool on replica A asks its client: replica B shows the question on `tasks/get`
//!   and takes the answer with `tasks/update`, and the tool on A goes on with it;
//! - a replica killed with `kill -9` in the middle of a task leaves it `failed`, with the
//!   reason, once its lease has run out, never `working` forever, and the replica that
//!   failed it writes one audit event of it (`lease_expired`).

use crate::mcp_support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp_support::*;
use registry_postgres::ControlPlane;
use registry_postgres::throwaway::Cluster;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, GetTaskResult, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

/// The task lease the replicas are started with.
const LEASE: Duration = Duration::from_millis(1_000);

/// A fresh database in this binary's shared cluster, its schema applied.
async fn database(name: &str) -> String {
    let name = name.to_owned();
    let url = tokio::task::spawn_blocking(move || Cluster::shared()?.fresh_database(&name))
        .await
        .unwrap()
        .expect("a throwaway PostgreSQL cluster (initdb, pg_ctl)");
    within("connect", ControlPlane::connect(&url))
        .await
        .unwrap();
    url
}

/// A directory of the test's own, where a replica's task tool notes what it saw.
fn notes(test: &str, replica: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "registry-durable-tasks-{}-{test}-{replica}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn replica(url: &str, name: &str, notes: &Path) -> ExampleServer {
    let lease = LEASE.as_millis().to_string();
    let mut args: Vec<OsString> = vec!["--tokens".into(), tokens_file().into()];
    for arg in [
        "--postgres",
        url,
        "--replica",
        name,
        "--task-lease-ms",
        &lease,
        "--log",
        "warn",
    ] {
        args.push(arg.into());
    }
    args.push("--test-task-tool".into());
    args.push(notes.into());
    start_example(args).await
}

/// A session of `release-bot` on `server`, declaring the tasks extension.
async fn connect(server: &ExampleServer) -> RunningService<RoleClient, ClientConfig> {
    let mut config = ClientConfig::default();
    config.capabilities = ClientCapabilities::builder().enable_tasks().build();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
            .auth_header(RELEASE_TOKEN),
    );
    within("initialize", config.serve(transport))
        .await
        .expect("the client connects")
}

/// Starts `spin_task` as a task; its id.
async fn start_spin(client: &RunningService<RoleClient, ClientConfig>) -> String {
    let started = within(
        "tools/call",
        client.call_tool_once(CallToolRequestParams::new("spin_task")),
    )
    .await
    .unwrap();
    match started {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working);
            created.task.task_id
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn get(client: &RunningService<RoleClient, ClientConfig>, id: &str) -> GetTaskResult {
    within("tasks/get", client.get_task(GetTaskParams::new(id)))
        .await
        .unwrap()
}

/// Waits until `file` exists, for `limit` at most; how long it took.
async fn appears(file: &Path, limit: Duration) -> Duration {
    let started = Instant::now();
    while !file.exists() {
        assert!(
            started.elapsed() < limit,
            "{} did not appear within {limit:?}",
            file.display()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_started_on_one_replica_is_read_and_cancelled_on_another() {
    let url = database("durable_cancel").await;
    let (notes_a, notes_b) = (notes("cancel", "a"), notes("cancel", "b"));
    let a = replica(&url, "a", &notes_a).await;
    let b = replica(&url, "b", &notes_b).await;
    let on_a = connect(&a).await;
    let on_b = connect(&b).await;

    let id = start_spin(&on_a).await;
    appears(&notes_a.join("started"), Duration::from_secs(10)).await;
    let read = get(&on_b, &id).await;
    assert_eq!(read.task.task.status, TaskStatus::Working, "{read:?}");
    assert_eq!(read.task.task.task_id, id);

    let asked = Instant::now();
    within("tasks/cancel", on_b.cancel_task(CancelTaskParams::new(&id)))
        .await
        .unwrap();
    appears(&notes_a.join("cancelled"), Duration::from_secs(1)).await;
    let latency = asked.elapsed();
    eprintln!("tasks/cancel on b reached the tool on a in {latency:?} (tasks/cancel included)");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
    assert!(
        !notes_b.join("started").exists(),
        "the tool ran on a, not on b"
    );

    for client in [&on_a, &on_b] {
        let ended = get(client, &id).await;
        assert_eq!(ended.task.task.status, TaskStatus::Cancelled, "{ended:?}");
        assert!(matches!(ended.task.payload, TaskPayload::Cancelled));
    }
    // Cancelling again is acknowledged on either replica (idempotent).
    within("tasks/cancel", on_a.cancel_task(CancelTaskParams::new(&id)))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_on_one_replica_is_answered_on_another() {
    let url = database("durable_question").await;
    let (notes_a, notes_b) = (notes("question", "a"), notes("question", "b"));
    let a = replica(&url, "a", &notes_a).await;
    let b = replica(&url, "b", &notes_b).await;
    let on_a = connect(&a).await;
    let on_b = connect(&b).await;

    let started = within(
        "tools/call",
        on_a.call_tool_once(CallToolRequestParams::new("ask_task")),
    )
    .await
    .unwrap();
    let CallToolResponse::Task(created) = started else {
        panic!("expected a task, got {started:?}");
    };
    let id = created.task.task_id;
    appears(&notes_a.join("asked"), Duration::from_secs(10)).await;
    // Replica b reads the question from the shared store.
    let deadline = Instant::now() + Duration::from_secs(10);
    let key = loop {
        let read = get(&on_b, &id).await;
        if let TaskPayload::InputRequired { input_requests } = &read.task.payload {
            assert_eq!(read.task.task.status, TaskStatus::InputRequired);
            assert_eq!(input_requests.len(), 1, "{read:?}");
            break input_requests.keys().next().unwrap().clone();
        }
        assert!(
            Instant::now() < deadline,
            "b never saw the question: {read:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let answer =
        serde_json::json!({ &key: { "action": "accept", "content": { "word": "lighthouse" } } });
    let answered = Instant::now();
    within(
        "tasks/update",
        on_b.update_task(UpdateTaskParams::new(
            &id,
            serde_json::from_value(answer).unwrap(),
        )),
    )
    .await
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let done = loop {
        let read = get(&on_b, &id).await;
        if read.task.task.status.is_terminal() {
            break read;
        }
        assert!(Instant::now() < deadline, "the task never ended: {read:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    eprintln!(
        "an answer given on b reached the tool on a, which ended, in {:?} (polling included)",
        answered.elapsed()
    );
    match done.task.payload {
        TaskPayload::Completed { result } => {
            assert_eq!(
                result["content"][0]["text"], "the word was lighthouse",
                "{result:?}"
            );
        }
        other => panic!("expected completed, got {other:?}"),
    }
    assert!(
        !notes_b.join("asked").exists(),
        "the tool ran on a, not on b"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replicas_task_becomes_failed_within_the_lease() {
    let url = database("durable_kill").await;
    let (notes_a, notes_b) = (notes("kill", "a"), notes("kill", "b"));
    let mut a = replica(&url, "doomed", &notes_a).await;
    let b = replica(&url, "b", &notes_b).await;
    let on_a = connect(&a).await;
    let on_b = connect(&b).await;

    let id = start_spin(&on_a).await;
    appears(&notes_a.join("started"), Duration::from_secs(10)).await;
    // Alive, a renews the lease: the task runs well past one lease.
    tokio::time::sleep(LEASE * 2).await;
    assert_eq!(get(&on_b, &id).await.task.task.status, TaskStatus::Working);

    a.kill_9().await;
    let killed = Instant::now();
    let failed = loop {
        let read = get(&on_b, &id).await;
        if read.task.task.status != TaskStatus::Working {
            break read;
        }
        assert!(
            killed.elapsed() < LEASE * 3,
            "the dead replica's task is still working {:?} after the kill",
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = killed.elapsed();
    eprintln!("a killed replica's task read failed {took:?} after the kill (lease {LEASE:?})");
    assert!(took <= LEASE + Duration::from_millis(500), "{took:?}");
    assert_eq!(failed.task.task.status, TaskStatus::Failed, "{failed:?}");
    let reason = failed.task.task.status_message.clone().unwrap_or_default();
    assert!(
        reason.contains("doomed") && reason.contains("lease"),
        "{reason}"
    );
    match &failed.task.payload {
        TaskPayload::Failed { error } => {
            let message = error["message"].as_str().unwrap_or_default();
            assert_eq!(message, reason, "{error:?}");
        }
        other => panic!("expected failed, got {other:?}"),
    }
    // The replica that failed it audited it, once, with the reason.
    let plane = within("connect", ControlPlane::connect(&url))
        .await
        .unwrap();
    let mut filter = registry_postgres::AuditFilter::default();
    filter.kind = Some("task".into());
    let events = within("audit", plane.audit_events(&filter)).await.unwrap();
    let expired: Vec<_> = events
        .iter()
        .filter(|event| event.outcome.as_deref() == Some("lease_expired"))
        .collect();
    assert_eq!(expired.len(), 1, "{events:?}");
    let event = &expired[0];
    assert_eq!(
        event.replica, "b",
        "the living replica failed it: {event:?}"
    );
    assert_eq!(event.tool.as_deref(), Some("spin_task"));
    assert_eq!(event.event["id"], serde_json::json!(id), "{event:?}");
    assert_eq!(event.event["status"], serde_json::json!("failed"));
    assert_eq!(event.event["detail"], serde_json::json!(reason));
    drop(on_a);
}
