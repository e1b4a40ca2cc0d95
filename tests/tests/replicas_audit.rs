//! Issue 18: one NUL byte silenced the shared audit trail. A `tools/call` whose tool name or
//! request id carries `\u0000` is refused and audited; PostgreSQL refuses NUL in `text` and
//! `jsonb`, so the batch insert failed and the writer retried that batch forever: the calls
//! made after it were never written to `audit_events`.
//!
//! Here the example server runs with `--postgres` on a throwaway cluster. The NUL in the
//! request id is sent as a raw HTTP POST (rmcp's client numbers its requests itself and
//! cannot send a chosen id); the NUL in the tool name, and the five ordinary calls after
//! it, go through rmcp's real client. All are found in `audit_events`, the NUL escaped
//! visibly as `\u{0}`.

mod mcp_support;

use std::ffi::OsString;
use std::time::{Duration, Instant};

use mcp_support::*;
use registry_postgres::throwaway::Cluster;
use registry_postgres::{AuditFilter, AuditRecord, ControlPlane};
use rmcp::model::{ClientConfig, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{Value, json};

const INITIALIZE: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#;

/// A raw POST of `body` to the endpoint, in `session` if any.
async fn post(url: &str, session: Option<&str>, body: &str) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {RELEASE_TOKEN}"))
        .header("mcp-protocol-version", "2025-11-25")
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    within("a raw request", request.send())
        .await
        .expect("the server answers")
}

/// Opens a session with a raw `initialize`: its id.
async fn open_session(url: &str) -> String {
    let response = post(url, None, INITIALIZE).await;
    let id = response
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_owned();
    let _ = within("the initialize answer", response.text()).await;
    let _ = post(url, Some(&id), INITIALIZED).await;
    id
}

/// The JSON-RPC answer, sent as JSON or as one SSE event.
async fn message(response: reqwest::Response) -> Value {
    let text = within("an answer", response.text()).await.unwrap();
    if let Ok(value) = serde_json::from_str(&text) {
        return value;
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|value| value.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {text:?}"))
}

async fn rmcp_client(server: &ExampleServer) -> RunningService<RoleClient, ClientConfig> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
            .auth_header(RELEASE_TOKEN),
    );
    within(
        "discover",
        ClientConfig::default().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("a client connects")
}

async fn audited_calls(plane: &ControlPlane) -> Vec<AuditRecord> {
    let mut filter = AuditFilter::default();
    filter.kind = Some("call".to_owned());
    filter.limit = Some(1_000);
    plane.audit_events(&filter).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_in_a_tool_name_or_a_request_id_does_not_silence_the_audit_trail() {
    let cluster = tokio::task::spawn_blocking(Cluster::start)
        .await
        .unwrap()
        .expect("a throwaway PostgreSQL cluster (initdb, pg_ctl)");
    let url = cluster.create_database("nul").unwrap();
    let plane = within("connect", ControlPlane::connect(&url))
        .await
        .unwrap();
    let mut args: Vec<OsString> = vec!["--tokens".into(), tokens_file().into()];
    for arg in ["--postgres", &url, "--replica", "a", "--log", "warn"] {
        args.push(arg.into());
    }
    let server = start_example(args).await;

    // The request id carries NUL: a raw POST (rmcp's client picks its own ids).
    let session = open_session(&server.url).await;
    let nul_id = json!({"jsonrpc": "2.0", "id": "id\u{0}x", "method": "tools/call",
                        "params": {"name": "get_status", "arguments": {"project": "web"}}});
    let answer = message(post(&server.url, Some(&session), &nul_id.to_string()).await).await;
    assert!(answer.get("result").is_some(), "{answer}");
    let both = json!({"jsonrpc": "2.0", "id": "both\u{0}", "method": "tools/call",
                      "params": {"name": "de\u{0}ploy", "arguments": {}}});
    let _ = message(post(&server.url, Some(&session), &both.to_string()).await).await;

    // The tool name carries NUL, through rmcp's client; then five ordinary calls.
    let client = rmcp_client(&server).await;
    let refused = call(client.peer(), "get_status\u{0}", json!({"project": "web"})).await;
    assert!(
        refused
            .as_ref()
            .map_or(true, |result| result.is_error == Some(true)),
        "{refused:?}"
    );
    for index in 0..5 {
        let done = call(
            client.peer(),
            "get_status",
            json!({"project": if index % 2 == 0 { "web" } else { "api" }}),
        )
        .await
        .expect("an ordinary call");
        assert_ne!(done.is_error, Some(true), "{done:?}");
    }

    // All of them reach the table (the replica writes every 200 ms).
    let deadline = Instant::now() + Duration::from_secs(20);
    let calls = loop {
        let calls = audited_calls(&plane).await;
        if calls.len() >= 8 || Instant::now() > deadline {
            break calls;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let seen: Vec<(Option<String>, Option<String>, Option<String>)> = calls
        .iter()
        .map(|record| {
            (
                record.tool.clone(),
                record.call_id.clone(),
                record.outcome.clone(),
            )
        })
        .collect();
    assert_eq!(calls.len(), 8, "{seen:#?}");
    let nul_id = calls
        .iter()
        .find(|record| record.call_id.as_deref() == Some(r"id\u{0}x"))
        .unwrap_or_else(|| panic!("the call with a NUL in its id: {seen:#?}"));
    assert_eq!(nul_id.tool.as_deref(), Some("get_status"));
    assert_eq!(nul_id.outcome.as_deref(), Some("ok"));
    assert!(
        nul_id.event.to_string().contains(r#""id\\u{0}x""#),
        "{}",
        nul_id.event
    );
    let both = calls
        .iter()
        .find(|record| record.call_id.as_deref() == Some(r"both\u{0}"))
        .unwrap_or_else(|| panic!("the call with NUL in both: {seen:#?}"));
    assert_eq!(both.tool.as_deref(), Some(r"de\u{0}ploy"));
    assert_ne!(both.outcome.as_deref(), Some("ok"));
    let nul_name = calls
        .iter()
        .find(|record| record.tool.as_deref() == Some(r"get_status\u{0}"))
        .unwrap_or_else(|| panic!("the call with a NUL in its name: {seen:#?}"));
    assert_ne!(nul_name.outcome.as_deref(), Some("ok"));
    let ordinary = calls
        .iter()
        .filter(|record| {
            record.tool.as_deref() == Some("get_status")
                && record.outcome.as_deref() == Some("ok")
                && record.call_id.as_deref() != Some(r"id\u{0}x")
        })
        .count();
    assert_eq!(ordinary, 5, "the five calls after the NUL: {seen:#?}");
    let unwritable: i64 = {
        let mut filter = AuditFilter::default();
        filter.kind = Some("unwritable".to_owned());
        plane.audit_events(&filter).await.unwrap().len() as i64
    };
    assert_eq!(unwritable, 0, "nothing needed the fallback");
    drop(client);
    drop(server);
    drop(cluster);
}
