//! Several replicas of the example MCP server, each its own process, sharing one control plane
//! on a real PostgreSQL cluster (throwaway, started by the test with the machine's `initdb` and
//! `pg_ctl`); rmcp's clients talk to them over HTTP on loopback, and the operators' command
//! `registry-admin` runs as its own process too.
//!
//! - a revocation by `registry-admin` reaches every replica: their clients get
//!   `notifications/tools/list_changed`, and calls are refused as revoked;
//! - an approval asked on one replica is answered on another and runs once; two replicas
//!   answering at the same moment run it once; an operator's `registry-admin approve`, twice
//!   at once, runs the waiting call once;
//! - a rate limit is one bucket for the whole fleet;
//! - `kill -9` of a replica in the middle of calls: committed approvals stay, nothing runs
//!   twice, and the audit of calls completed before the last flush is in the table; a clean
//!   shutdown (SIGTERM) writes every event;
//! - the database restarted under running replicas: calls are refused while it is down (never
//!   fail open), and once it is back the replicas reconnect and catch up on a change made
//!   while they were not listening.

mod mcp_support;

use std::ffi::OsString;
use std::process::Output;
use std::time::{Duration, Instant};

use mcp_support::*;
use registry_postgres::throwaway::Cluster;
use registry_postgres::{AuditFilter, AuditRecord, ControlPlane};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientConfig, ElicitRequestParams,
    ElicitResult, InputResponses, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, ServiceExt};
use serde_json::json;
use tokio::sync::mpsc;

/// The token of `release-bot` (tenant acme, deploy:write) in the bundled tokens file.
const TOKEN: &str = RELEASE_TOKEN;

/// A database of its own, and replicas of the example server on it.
struct Fleet {
    /// A cluster of the fleet's own, for the test that stops the server; the others share
    /// this test binary's cluster ([`Cluster::shared`]).
    cluster: Option<Cluster>,
    url: String,
    plane: ControlPlane,
    replicas: Vec<ExampleServer>,
}

/// A fleet on a database of its own in this test binary's shared cluster.
async fn fleet(names: &[&str], extra: &[&str]) -> Fleet {
    fleet_on(false, names, extra).await
}

/// A fleet on a cluster of its own (`own`) or a database in the shared one.
async fn fleet_on(own: bool, names: &[&str], extra: &[&str]) -> Fleet {
    // Built first (once per test binary), so that no timing below includes a build.
    tokio::task::spawn_blocking(admin_binary).await.unwrap();
    let (cluster, url) = tokio::task::spawn_blocking(move || {
        if own {
            let cluster = Cluster::start()?;
            let url = cluster.create_database("fleet")?;
            Ok((Some(cluster), url))
        } else {
            Cluster::shared()?
                .fresh_database("fleet")
                .map(|url| (None, url))
        }
    })
    .await
    .unwrap()
    .expect("a throwaway PostgreSQL cluster (initdb, pg_ctl)");
    // The schema first, so that the replicas start together without racing for it (they
    // would not mind: the migration takes an advisory lock).
    let plane = within("connect", ControlPlane::connect(&url))
        .await
        .unwrap();
    let mut replicas = Vec::new();
    for name in names {
        replicas.push(replica(&url, name, extra).await);
    }
    Fleet {
        cluster,
        url,
        plane,
        replicas,
    }
}

/// The key the replicas seal approval questions' `requestState` with: one for the fleet, so
/// that a question asked on one replica is answered on another.
fn request_state_key_file() -> &'static std::path::Path {
    static FILE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::temp_dir().join(format!(
            "registry-replicas-request-state-{}.key",
            std::process::id()
        ));
        std::fs::write(&path, "5f".repeat(32)).expect("the key file is written");
        path
    })
}

async fn replica(url: &str, name: &str, extra: &[&str]) -> ExampleServer {
    let mut args: Vec<OsString> = vec![
        "--tokens".into(),
        tokens_file().into(),
        "--request-state-key-file".into(),
        request_state_key_file().into(),
    ];
    for arg in [
        "--postgres",
        url,
        "--replica",
        name,
        "--poll-ms",
        "50",
        "--log",
        "warn",
    ] {
        args.push(arg.into());
    }
    args.extend(extra.iter().map(OsString::from));
    start_example(args).await
}

/// Runs `registry-admin --database URL args...` to completion.
async fn admin(url: &str, args: &[&str]) -> Output {
    let binary = admin_binary();
    let mut command = tokio::process::Command::new(binary);
    command.arg("--database").arg(url).args(args);
    within("registry-admin", command.output())
        .await
        .expect("registry-admin runs")
}

fn admin_binary() -> &'static std::path::Path {
    static BINARY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| package_binary("registry-postgres", "registry-admin"))
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A client that counts `notifications/tools/list_changed`, and sees approval questions
/// (form elicitation) but never answers them.
#[derive(Clone)]
struct Watcher {
    changed: mpsc::UnboundedSender<()>,
    asked: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Watcher {
    fn get_info(&self) -> ClientConfig {
        eliciting()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (message, _) = form_question(request);
        let _ = self.asked.send(message);
        // No one answers: an operator decides, elsewhere.
        std::future::pending().await
    }
}

struct Watched {
    client: RunningService<RoleClient, Watcher>,
    changed: mpsc::UnboundedReceiver<()>,
    asked: mpsc::UnboundedReceiver<String>,
}

fn transport(server: &ExampleServer) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).auth_header(TOKEN),
    )
}

async fn watched(server: &ExampleServer) -> Watched {
    let (changed_tx, changed) = mpsc::unbounded_channel();
    let (asked_tx, asked) = mpsc::unbounded_channel();
    let watcher = Watcher {
        changed: changed_tx,
        asked: asked_tx,
    };
    let client = within("initialize", watcher.serve(transport(server)))
        .await
        .expect("the client connects");
    Watched {
        client,
        changed,
        asked,
    }
}

/// A 2026-07-28 client (stateless: each request may reach any replica).
async fn modern(server: &ExampleServer) -> RunningService<RoleClient, ClientConfig> {
    within(
        "discover",
        eliciting().serve_with_lifecycle(
            transport(server),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("a 2026-07-28 client connects")
}

fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// Polls `check` every 20 ms until it is true, for `limit` at most.
async fn eventually<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The call events of `tool` in the audit table.
async fn audited_calls(plane: &ControlPlane, tool: &str) -> Vec<AuditRecord> {
    let mut filter = AuditFilter::default();
    filter.tool = Some(tool.to_owned());
    filter.kind = Some("call".to_owned());
    filter.limit = Some(100_000);
    plane.audit_events(&filter).await.unwrap()
}

/// The fleet's approval requests, newest first: every one, or the pending ones.
async fn approvals(fleet: &Fleet, pending: bool) -> Vec<registry_postgres::ApprovalRecord> {
    let mut filter = registry_postgres::ApprovalFilter::default();
    filter.pending = pending;
    fleet.plane.approvals(&filter).await.unwrap()
}

async fn successful_deploys(plane: &ControlPlane) -> usize {
    audited_calls(plane, "deploy")
        .await
        .iter()
        .filter(|record| record.outcome.as_deref() == Some("ok"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_by_registry_admin_reaches_every_replica() {
    let fleet = fleet(&["a", "b", "c"], &[]).await;
    let mut clients = Vec::new();
    for server in &fleet.replicas {
        let mut watched = watched(server).await;
        let ok = call(&watched.client, "rollback", json!({"env": "staging"}))
            .await
            .unwrap();
        assert!(!is_error(&ok), "{ok:?}");
        while watched.changed.try_recv().is_ok() {}
        clients.push(watched);
    }

    let started = Instant::now();
    let revoked = admin(
        &fleet.url,
        &["revoke", "rollback", "--reason", "incident 4711"],
    )
    .await;
    assert!(revoked.status.success(), "{revoked:?}");

    // Every replica's client is told, and its calls are refused as revoked.
    let mut delays = Vec::new();
    for watched in &mut clients {
        within("list_changed", watched.changed.recv())
            .await
            .unwrap();
        let refused = call(&watched.client, "rollback", json!({"env": "staging"}))
            .await
            .unwrap();
        delays.push(started.elapsed());
        assert!(is_error(&refused));
        assert!(
            result_text(&refused).contains("withdrawn"),
            "{}",
            result_text(&refused)
        );
        let (tools, _) = list_all(&watched.client).await;
        assert!(!names(&tools).contains(&"rollback".to_owned()));
    }
    let slowest = delays.iter().max().unwrap();
    eprintln!(
        "revocation seen on all three replicas after {slowest:?} (registry-admin's start included)"
    );
    assert!(
        *slowest < Duration::from_secs(3),
        "the revocation took {slowest:?} to reach every replica"
    );

    // The record says who and why.
    let changes = stdout(&admin(&fleet.url, &["changes"]).await);
    assert!(
        changes.contains("rollback") && changes.contains("incident 4711"),
        "{changes}"
    );

    // Restored: every replica serves it again, to runs opened from now on.
    let restored = admin(&fleet.url, &["restore", "rollback", "--reason", "fixed"]).await;
    assert!(restored.status.success(), "{restored:?}");
    for watched in &mut clients {
        within("list_changed", watched.changed.recv())
            .await
            .unwrap();
        let client = &watched.client;
        eventually("rollback served again", Duration::from_secs(5), || async {
            // A tool comes back to a client once it has listed the tools again: a call
            // never reaches a tool the model was not shown.
            let (tools, _) = list_all(client).await;
            if !names(&tools).contains(&"rollback".to_owned()) {
                return false;
            }
            let result = call(client, "rollback", json!({"env": "staging"})).await;
            result.is_ok_and(|result| !is_error(&result))
        })
        .await;
    }
    for watched in clients {
        watched.client.cancel().await.unwrap();
    }
}

/// Calls `deploy` to production on a 2026-07-28 client: the `input_required` result's
/// request state (the approval request's id).
async fn ask_for_approval(client: &RunningService<RoleClient, ClientConfig>) -> String {
    let params = CallToolRequestParams::new("deploy")
        .with_arguments(object(json!({"project": "web", "env": "production"})));
    let first = within("tools/call", client.call_tool_once(params))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(input) = first else {
        panic!("an input_required result was expected: {first:?}");
    };
    input.request_state.expect("a request state")
}

/// The retried call answering `state` with "approve".
fn approving(state: &str) -> CallToolRequestParams {
    let answer: InputResponses = [(
        "approval".to_owned(),
        json!({"action": "accept", "content": {"approve": true}}),
    )]
    .into();
    CallToolRequestParams::new("deploy")
        .with_arguments(object(json!({"project": "web", "env": "production"})))
        .with_input_responses(answer)
        .with_request_state(state.to_owned())
}

/// What a retried call came to: `Some(true)` it ran, `Some(false)` an error result, `None` a
/// protocol error.
fn ran(response: Result<CallToolResponse, rmcp::service::ServiceError>) -> Option<bool> {
    match response {
        Ok(CallToolResponse::Complete(result)) => Some(!is_error(&result)),
        Ok(other) => panic!("a result was expected: {other:?}"),
        Err(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_asked_on_one_replica_runs_once_when_answered_on_others() {
    let fleet = fleet(&["a", "b", "c"], &[]).await;
    let on_a = modern(&fleet.replicas[0]).await;
    let on_b = modern(&fleet.replicas[1]).await;
    let on_c = modern(&fleet.replicas[2]).await;

    // Asked on A, answered on B: it runs, on B, once.
    let state = ask_for_approval(&on_a).await;
    let pending = approvals(&fleet, false).await;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].origin, "a");
    let answered = within("retry on b", on_b.call_tool_once(approving(&state))).await;
    assert_eq!(ran(answered), Some(true));
    // The same answer again, anywhere, runs nothing.
    let again = within("retry on c", on_c.call_tool_once(approving(&state))).await;
    assert_ne!(ran(again), Some(true));

    // Asked on A, answered on B and C at the same moment: one runs it.
    let state = ask_for_approval(&on_a).await;
    let (b, c) = tokio::join!(
        on_b.call_tool_once(approving(&state)),
        on_c.call_tool_once(approving(&state))
    );
    let outcomes = [ran(b), ran(c)];
    assert_eq!(
        outcomes.iter().filter(|ran| **ran == Some(true)).count(),
        1,
        "{outcomes:?}"
    );

    // Two deploys ran in all, as the audit table of the fleet says.
    eventually("two deploys audited", Duration::from_secs(5), || async {
        successful_deploys(&fleet.plane).await == 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(successful_deploys(&fleet.plane).await, 2);
    for client in [on_a, on_b, on_c] {
        client.cancel().await.unwrap();
    }
}

/// Calls `deploy` to production from `waiting`'s client in a task of its own: the call waits
/// for an approval while the test decides it.
fn deploy_in_background(
    waiting: &Watched,
) -> tokio::task::JoinHandle<Result<CallToolResult, rmcp::service::ServiceError>> {
    let peer = waiting.client.peer().clone();
    tokio::spawn(async move {
        let params = CallToolRequestParams::new("deploy")
            .with_arguments(object(json!({"project": "web", "env": "production"})));
        within("the call waiting for approval", peer.call_tool(params)).await
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operators_approval_runs_the_waiting_call_once_even_given_twice_at_once() {
    let fleet = fleet(&["a", "b"], &[]).await;
    let mut waiting = watched(&fleet.replicas[0]).await;
    let call = deploy_in_background(&waiting);
    let question = within("the question", waiting.asked.recv()).await.unwrap();
    assert!(question.contains("production"), "{question}");

    let listed = admin(&fleet.url, &["approvals", "--pending"]).await;
    assert!(listed.status.success(), "{listed:?}");
    let pending = approvals(&fleet, false).await;
    assert_eq!(pending.len(), 1);
    let id = pending[0].id.clone();
    assert!(stdout(&listed).contains(&id[..12]), "{}", stdout(&listed));

    // Two operators approve at the same moment.
    let alice = ["approve", id.as_str(), "--as", "alice"];
    let bob = ["approve", id.as_str(), "--as", "bob"];
    let (first, second) = tokio::join!(admin(&fleet.url, &alice), admin(&fleet.url, &bob));
    let successes = [&first, &second]
        .iter()
        .filter(|output| output.status.success())
        .count();
    assert_eq!(successes, 1, "{first:?}\n{second:?}");

    // The waiting call runs, once, and its client gets the result.
    let result = call.await.unwrap().unwrap();
    assert!(!is_error(&result), "{}", result_text(&result));
    eventually("one deploy audited", Duration::from_secs(5), || async {
        successful_deploys(&fleet.plane).await == 1
    })
    .await;
    let approved = approvals(&fleet, false).await;
    assert_eq!(approved[0].state, "approved");
    assert!(
        matches!(approved[0].decided_by.as_deref(), Some("alice" | "bob")),
        "{approved:?}"
    );

    // A denial from the console ends the next waiting call: nothing runs.
    let call = deploy_in_background(&waiting);
    within("the question", waiting.asked.recv()).await.unwrap();
    let pending = approvals(&fleet, true).await;
    let denied = admin(
        &fleet.url,
        &[
            "deny",
            &pending[0].id,
            "--reason",
            "not today",
            "--as",
            "carol",
        ],
    )
    .await;
    assert!(denied.status.success(), "{denied:?}");
    let result = call.await.unwrap().unwrap();
    assert!(is_error(&result));
    assert!(
        result_text(&result).contains("denied"),
        "{}",
        result_text(&result)
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(successful_deploys(&fleet.plane).await, 1);

    // The operators' verdicts are on the audit trail, beside the replicas' own events.
    let mut approvals = AuditFilter::default();
    approvals.kind = Some("approval".to_owned());
    let trail = fleet.plane.audit_events(&approvals).await.unwrap();
    let by_admin: Vec<_> = trail
        .iter()
        .filter(|record| record.replica == "registry-admin")
        .filter_map(|record| record.outcome.as_deref())
        .collect();
    assert_eq!(by_admin, ["denied", "approve_given"], "{trail:?}");
    assert!(
        trail
            .iter()
            .any(|record| record.replica == "a" && record.outcome.as_deref() == Some("approved")),
        "{trail:?}"
    );
    waiting.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_is_one_bucket_for_the_whole_fleet() {
    let fleet = fleet(&["a", "b"], &["--rate-limit", "4/min"]).await;
    let on_a = watched(&fleet.replicas[0]).await;
    let on_b = watched(&fleet.replicas[1]).await;
    let mut granted = 0;
    let mut refused = 0;
    for round in 0..5 {
        for client in [&on_a.client, &on_b.client] {
            let result = call(client, "get_status", json!({"project": "web"}))
                .await
                .unwrap();
            if is_error(&result) {
                assert!(
                    result_text(&result).contains("too often"),
                    "round {round}: {}",
                    result_text(&result)
                );
                refused += 1;
            } else {
                granted += 1;
            }
        }
    }
    assert_eq!(
        (granted, refused),
        (4, 6),
        "4 calls a minute, for both together"
    );
    on_a.client.cancel().await.unwrap();
    on_b.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_replica_mid_calls_loses_no_committed_approval_and_no_flushed_audit() {
    // No request rate limit at the edge: the calls go on until the kill.
    let mut fleet = fleet(&["a", "b"], &["--rate", "0"]).await;
    let on_a = modern(&fleet.replicas[0]).await;
    let on_b = modern(&fleet.replicas[1]).await;

    // Before the crash: one approval decided and run on A, one still pending.
    let decided = ask_for_approval(&on_a).await;
    let ran_on_a = within("retry on a", on_a.call_tool_once(approving(&decided))).await;
    assert_eq!(ran(ran_on_a), Some(true));
    let pending = ask_for_approval(&on_a).await;

    // Calls on A, completed one after the other, until it is killed in their middle.
    let peer = on_a.peer().clone();
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let caller = tokio::spawn(async move {
        loop {
            let params = CallToolRequestParams::new("get_status")
                .with_arguments(object(json!({"project": "web"})));
            match peer.call_tool(params).await {
                Ok(result) if !is_error(&result) => {
                    let _ = done_tx.send(Instant::now());
                }
                _ => return,
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    fleet.replicas[0].kill_9().await;
    let killed = Instant::now();
    let _ = within("the caller stops", caller).await;
    let mut completed = Vec::new();
    while let Ok(at) = done.try_recv() {
        completed.push(at);
    }
    assert!(
        completed.len() > 10,
        "only {} calls completed",
        completed.len()
    );

    // What A flushed is in the table: at least every call completed a flush interval (200 ms)
    // and a write before the kill; never more than were completed.
    let audited = audited_calls(&fleet.plane, "get_status").await;
    let from_a = audited
        .iter()
        .filter(|record| record.replica == "a" && record.outcome.as_deref() == Some("ok"))
        .count();
    let settled = completed
        .iter()
        .filter(|at| killed.duration_since(**at) > Duration::from_millis(700))
        .count();
    eprintln!(
        "{} calls completed on a before kill -9, {from_a} in the audit table, {settled} completed more than 700 ms before",
        completed.len()
    );
    assert!(from_a >= settled, "{from_a} audited < {settled} settled");
    assert!(from_a <= completed.len());

    // The committed approvals outlive A: the decided one stays decided, the pending one is
    // answered on B and runs once.
    let again = within("retry on b", on_b.call_tool_once(approving(&decided))).await;
    assert_ne!(ran(again), Some(true), "an approved call never runs twice");
    let answered = within("retry on b", on_b.call_tool_once(approving(&pending))).await;
    assert_eq!(ran(answered), Some(true));
    eventually("two deploys audited", Duration::from_secs(5), || async {
        successful_deploys(&fleet.plane).await == 2
    })
    .await;
    on_b.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restart_holds_calls_then_the_replicas_catch_up() {
    // No request rate limit at the edge: the test calls in tight loops.
    // A cluster of its own: the test stops it.
    let mut fleet = fleet_on(true, &["a", "b"], &["--rate", "0"]).await;
    let on_a = watched(&fleet.replicas[0]).await;
    let on_b = watched(&fleet.replicas[1]).await;
    for client in [&on_a.client, &on_b.client] {
        let result = call(client, "rollback", json!({"env": "staging"}))
            .await
            .unwrap();
        assert!(!is_error(&result));
    }

    tokio::task::block_in_place(|| fleet.cluster.as_mut().unwrap().stop().unwrap());

    // While it is down: every call is refused, as unavailable, on both replicas.
    for client in [&on_a.client, &on_b.client] {
        eventually("calls held", Duration::from_secs(4), || async {
            let result = call(client, "get_status", json!({"project": "web"}))
                .await
                .unwrap();
            is_error(&result) && result_text(&result).contains("not available")
        })
        .await;
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        for client in [&on_a.client, &on_b.client] {
            let result = call(client, "rollback", json!({"env": "staging"}))
                .await
                .unwrap();
            assert!(is_error(&result), "a call ran while the database was down");
        }
    }

    // Back: a revocation recorded at once, before the replicas are listening again, is
    // caught up by sequence number; calls run again.
    tokio::task::block_in_place(|| fleet.cluster.as_mut().unwrap().start_again().unwrap());
    let revoked = admin(
        &fleet.url,
        &["revoke", "rollback", "--reason", "during the outage"],
    )
    .await;
    assert!(revoked.status.success(), "{revoked:?}");
    for client in [&on_a.client, &on_b.client] {
        eventually("calls run again", Duration::from_secs(10), || async {
            let result = call(client, "get_status", json!({"project": "web"}))
                .await
                .unwrap();
            !is_error(&result)
        })
        .await;
        let result = call(client, "rollback", json!({"env": "staging"}))
            .await
            .unwrap();
        assert!(
            result_text(&result).contains("withdrawn"),
            "{}",
            result_text(&result)
        );
    }
    on_a.client.cancel().await.unwrap();
    on_b.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_shutdown_writes_every_audit_event() {
    let mut fleet = fleet(&["a"], &["--rate", "0"]).await;
    let client = modern(&fleet.replicas[0]).await;
    let mut completed = 0;
    for _ in 0..200 {
        let result = call(&client, "get_status", json!({"project": "web"}))
            .await
            .unwrap();
        assert!(!is_error(&result));
        completed += 1;
    }
    drop(client);
    // At once, before the writer's next batch: SIGTERM, and the server writes what is queued.
    let status = fleet.replicas[0].terminate().await;
    assert!(status.success(), "{status:?}");
    let audited = audited_calls(&fleet.plane, "get_status").await;
    assert_eq!(audited.len(), completed, "every completed call is audited");
}
