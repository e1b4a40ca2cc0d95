//! The example MCP server over streamable HTTP, started as a child process on a free loopback
//! port and driven with rmcp's client (and raw requests where the point is the raw
//! request): bearer tokens, two clients with different subjects at once, pagination, calls,
//! a revocation announced to old-protocol and 2026-07-28 clients alike, and garbage.

use crate::mcp_support;

use std::time::Duration;

use mcp_support::*;
use reqwest::StatusCode;
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The example server with the bundled tokens, quiet, polling the registry every 50 ms.
async fn start(args: &[&str]) -> ExampleServer {
    let tokens = tokens_file();
    let mut all: Vec<&std::ffi::OsStr> = vec!["--tokens".as_ref(), tokens.as_os_str()];
    all.extend(["--log", "error", "--poll-ms", "50"].map(std::ffi::OsStr::new));
    all.extend(args.iter().map(std::ffi::OsStr::new));
    start_example(all).await
}

/// Counts `notifications/tools/list_changed` that arrive outside a subscription.
#[derive(Clone)]
struct Notified(mpsc::UnboundedSender<()>);

impl ClientHandler for Notified {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

fn transport(
    server: &ExampleServer,
    token: &str,
) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).auth_header(token),
    )
}

async fn connect<H: ClientHandler>(
    server: &ExampleServer,
    token: &str,
    handler: H,
) -> RunningService<RoleClient, H> {
    within("initialize", handler.serve(transport(server, token)))
        .await
        .expect("the client connects")
}

const INITIALIZE: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}"#;

/// A raw POST to the endpoint.
async fn post(
    server: &ExampleServer,
    token: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    within("a raw request", request.send())
        .await
        .expect("the server answers")
}

async fn body(response: reqwest::Response) -> String {
    within("a raw body", response.text()).await.unwrap()
}

#[tokio::test]
async fn a_missing_or_unknown_token_gets_401_and_nothing_else() {
    let server = start(&[]).await;
    for token in [
        None,
        Some("not-a-known-token-at-all"),
        Some(&SUPPORT_TOKEN[1..]),
    ] {
        let response = post(&server, token, INITIALIZE).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{token:?}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        assert_eq!(body(response).await, "", "{token:?}");
    }
    // Another scheme, a GET, and garbage: the token is checked before anything else.
    let basic = reqwest::Client::new()
        .get(&server.url)
        .header("authorization", format!("Basic {SUPPORT_TOKEN}"))
        .send();
    assert_eq!(
        within("GET", basic).await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post(&server, None, "{{{{").await.status(),
        StatusCode::UNAUTHORIZED
    );

    // rmcp's client cannot connect with an unknown token.
    let refused = within(
        "initialize",
        ().serve(transport(&server, "not-a-known-token-at-all")),
    )
    .await;
    assert!(refused.is_err());
    // With a known one it can.
    let client = connect(&server, SUPPORT_TOKEN, ()).await;
    assert_eq!(names(&list_all(&client).await.0), READER_TOOLS);
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn clients_with_different_tokens_see_different_tools_at_the_same_time() {
    let server = start(&["--page-size", "2"]).await;
    let (reader, writer, auditor) = tokio::join!(
        connect(&server, SUPPORT_TOKEN, ()),
        connect(&server, RELEASE_TOKEN, ()),
        connect(&server, AUDITOR_TOKEN, ()),
    );
    // Concurrently, in pages of two.
    let ((reader_tools, reader_pages), (writer_tools, writer_pages), (auditor_tools, _)) =
        tokio::join!(list_all(&reader), list_all(&writer), list_all(&auditor));
    assert_eq!(names(&reader_tools), READER_TOOLS);
    assert_eq!(reader_pages, 2);
    assert_eq!(names(&writer_tools), WRITER_TOOLS);
    assert_eq!(writer_pages, 4);
    // Tenant globex, read-only, no scopes: only the open read-only tools.
    assert_eq!(names(&auditor_tools), ["changelog", "search_docs"]);

    // The same call, at once: allowed for one, the invalid-params error for the other.
    let deploy = json!({"project": "web", "env": "staging"});
    let (by_writer, by_reader) = tokio::join!(
        call(&writer, "deploy", deploy.clone()),
        call(&reader, "deploy", deploy)
    );
    let by_writer = by_writer.unwrap();
    assert_eq!(by_writer.is_error, Some(false));
    assert!(text(&by_writer).starts_with("dep-"), "{}", text(&by_writer));
    let hidden = invalid_params(by_reader.unwrap_err());
    let unknown = invalid_params(call(&reader, "launch", json!({})).await.unwrap_err());
    assert_eq!(
        hidden.replace("deploy", "X"),
        unknown.replace("launch", "X")
    );

    // Many calls in parallel from both.
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..20 {
        let peer = if i % 2 == 0 {
            reader.peer().clone()
        } else {
            writer.peer().clone()
        };
        calls.spawn(async move { call(&peer, "get_status", json!({"project": "web"})).await });
    }
    while let Some(result) = calls.join_next().await {
        assert_eq!(result.unwrap().unwrap().is_error, Some(false));
    }
    for client in [reader, writer, auditor] {
        within("shutdown", client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn calls_over_http_answer_like_over_stdio() {
    let server = start(&[]).await;
    let client = connect(&server, RELEASE_TOKEN, ()).await;
    let ok = call(
        &client,
        "list_builds",
        json!({"project": "web", "limit": 2}),
    )
    .await
    .unwrap();
    assert_eq!(ok.is_error, Some(false));
    assert_eq!(
        serde_json::from_str::<Value>(&text(&ok)).unwrap(),
        json!(["web#2 any", "web#1 any"])
    );

    let invalid = call(
        &client,
        "list_builds",
        json!({"project": "web", "limit": 1000}),
    )
    .await
    .unwrap();
    assert_eq!(invalid.is_error, Some(true));
    assert!(text(&invalid).contains("/limit"), "{}", text(&invalid));

    let failed = call(
        &client,
        "deploy",
        json!({"project": "api", "env": "staging"}),
    )
    .await
    .unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert!(
        text(&failed).contains("has no passing build"),
        "{}",
        text(&failed)
    );

    let panicked = call(&client, "changelog", json!({"version": "x"}))
        .await
        .unwrap();
    assert_eq!(panicked.is_error, Some(true));
    assert!(text(&panicked).contains("internal error"));

    let unknown = invalid_params(call(&client, "deploy ", json!({})).await.unwrap_err());
    assert!(
        unknown.starts_with(r#"unknown tool "deploy ""#),
        "{unknown}"
    );
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_revocation_is_announced_to_those_who_could_see_the_tool() {
    let trigger = std::env::temp_dir().join(format!("mcp-http-revoke-{}", std::process::id()));
    let _ = std::fs::remove_file(&trigger);
    let server = start(&["--admin-revoke-on", trigger.to_str().unwrap(), "deploy"]).await;

    // An old-protocol client (initialize; notifications arrive unscoped)...
    let (sender, mut legacy_notified) = mpsc::unbounded_channel();
    let legacy = connect(&server, RELEASE_TOKEN, Notified(sender)).await;
    // ...a 2026-07-28 client (no initialize; notifications on a subscriptions/listen stream)...
    let (modern, mut subscription) = modern_client(transport(&server, RELEASE_TOKEN)).await;
    // ...and a client that cannot see the tool.
    let (sender, mut reader_notified) = mpsc::unbounded_channel();
    let reader = connect(&server, SUPPORT_TOKEN, Notified(sender)).await;

    assert!(names(&list_all(&legacy).await.0).contains(&"deploy".to_owned()));
    assert!(names(&list_all(&modern).await.0).contains(&"deploy".to_owned()));
    assert_eq!(names(&list_all(&reader).await.0), READER_TOOLS);

    std::fs::write(&trigger, b"").unwrap();
    within("list_changed (initialize)", legacy_notified.recv())
        .await
        .unwrap();
    tool_list_changed(&mut subscription).await;
    let _ = std::fs::remove_file(&trigger);

    // The release bot's clients list again and no longer see it.
    let expected: Vec<&str> = WRITER_TOOLS
        .iter()
        .copied()
        .filter(|name| *name != "deploy")
        .collect();
    assert_eq!(names(&list_all(&legacy).await.0), expected);
    assert_eq!(names(&list_all(&modern).await.0), expected);
    let gone = invalid_params(
        call(
            &modern,
            "deploy",
            json!({"project": "web", "env": "staging"}),
        )
        .await
        .unwrap_err(),
    );
    assert!(gone.starts_with(r#"unknown tool "deploy""#));

    // The support bot, which never saw it, was told nothing (given time to arrive, if it would).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(reader_notified.try_recv().is_err());
    assert_eq!(names(&list_all(&reader).await.0), READER_TOOLS);

    drop(subscription);
    for client in [legacy, reader] {
        within("shutdown", client.cancel()).await.unwrap();
    }
    within("shutdown", modern.cancel()).await.unwrap();
}

#[tokio::test]
async fn garbage_gets_a_protocol_error_and_the_server_keeps_serving() {
    let server = start(&["--max-message-bytes", "65536"]).await;
    let client = connect(&server, SUPPORT_TOKEN, ()).await;

    let response = post(
        &server,
        Some(SUPPORT_TOKEN),
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"meth",
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let answer: Value = serde_json::from_str(&body(response).await).unwrap();
    assert_eq!(answer["error"]["code"], json!(-32700));
    assert!(answer["id"].is_null());

    let response = post(
        &server,
        Some(SUPPORT_TOKEN),
        b"\x00\xff\xfe binary".to_vec(),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    let response = post(&server, Some(SUPPORT_TOKEN), r#"{"hello": "world"}"#).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let answer: Value = serde_json::from_str(&body(response).await).unwrap();
    assert_eq!(answer["error"]["code"], json!(-32600));

    let huge = format!(
        r#"{{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {{"x": "{}"}}}}"#,
        "x".repeat(200_000)
    );
    let response = post(&server, Some(SUPPORT_TOKEN), huge).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

    // An unknown method in the session: -32601.
    let unknown = within(
        "an unknown method",
        client.send_request(rmcp::model::ClientRequest::CustomRequest(
            rmcp::model::CustomRequest::new("tools/destroy", None),
        )),
    )
    .await;
    match unknown {
        Err(rmcp::ServiceError::McpError(error)) => {
            assert_eq!(error.code, rmcp::model::ErrorCode::METHOD_NOT_FOUND)
        }
        other => panic!("expected -32601, got {other:?}"),
    }

    // The server still serves, the same client and a new one.
    assert_eq!(names(&list_all(&client).await.0), READER_TOOLS);
    let ok = call(&client, "get_status", json!({"project": "web"}))
        .await
        .unwrap();
    assert_eq!(ok.is_error, Some(false));
    let again = connect(&server, SUPPORT_TOKEN, ()).await;
    assert_eq!(names(&list_all(&again).await.0), READER_TOOLS);
    for client in [client, again] {
        within("shutdown", client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn a_session_belongs_to_the_token_that_opened_it() {
    let server = start(&[]).await;
    let response = post(&server, Some(SUPPORT_TOKEN), INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = body(response).await;

    let list = r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}"#;
    let in_session = |token: &'static str| {
        reqwest::Client::new()
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .header("authorization", format!("Bearer {token}"))
            .body(list)
            .send()
    };
    // Another token's request on the session is answered as if the session did not exist.
    let other = within("tools/list", in_session(RELEASE_TOKEN))
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
    let other = body(other).await;
    assert_eq!(other, "Not Found: Session not found");
    let own = body(
        within("tools/list", in_session(SUPPORT_TOKEN))
            .await
            .unwrap(),
    )
    .await;
    assert!(
        own.contains("get_status") && !own.contains("\"deploy\""),
        "{own}"
    );
}
