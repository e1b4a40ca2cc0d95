//! Attacks on the HTTP edge of `registry-mcp`, on real loopback sockets, each bounded in
//! count and time, and what the server does about them: idle and slowloris connections,
//! connections over the limit, oversize headers, slow bodies, sessions over their caps,
//! expired sessions, another principal's session, streams over their cap, bursts over the
//! rate, foreign origins, malformed calls, forged log lines and a flood of refusals.
//!
//! Most tests serve the example registry in this process with tight [`EdgeLimits`]; the two
//! about the log start the example server binary and read its stderr.

use crate::mcp_support;

use std::net::SocketAddr;

use std::time::{Duration, Instant};

use mcp_support::*;
use registry_mcp::{CancellationToken, EdgeLimits, HttpConfig, HttpServer, Tokens};
use reqwest::StatusCode;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientServiceExt, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A server in this process, stopped when dropped.
struct Edge {
    url: String,
    addr: SocketAddr,
    shutdown: CancellationToken,
}

impl Drop for Edge {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn serve(limits: EdgeLimits) -> Edge {
    let registry = registry_examples::registry().build().unwrap();
    let tokens = Tokens::load(tokens_file()).unwrap();
    let shutdown = CancellationToken::new();
    let config = HttpConfig::new(tokens)
        .with_addr("127.0.0.1:0".parse().unwrap())
        .with_limits(limits)
        .with_shutdown(shutdown.clone());
    let server = HttpServer::bind(registry, config).await.unwrap();
    let (url, addr) = (server.url(), server.local_addr());
    tokio::spawn(server.serve());
    Edge {
        url,
        addr,
        shutdown,
    }
}

const INITIALIZE: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}"#;

/// A raw request to the endpoint.
async fn send(
    url: &str,
    method: reqwest::Method,
    token: &str,
    session: Option<&str>,
    extra: &[(&str, &str)],
    body: Option<&str>,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .request(method, url)
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_owned());
    }
    within("a raw request", request.send())
        .await
        .expect("the server answers")
}

/// Opens a GET (SSE) stream on `session`.
async fn get_stream(url: &str, token: &str, session: &str) -> reqwest::Response {
    send(url, reqwest::Method::GET, token, Some(session), &[], None).await
}

async fn post(url: &str, token: &str, session: Option<&str>, body: &str) -> reqwest::Response {
    send(url, reqwest::Method::POST, token, session, &[], Some(body)).await
}

/// Opens a session for `token`: its id, or the refusal.
async fn open_session(url: &str, token: &str) -> Result<String, reqwest::Response> {
    let response = post(url, token, None, INITIALIZE).await;
    let Some(id) = response.headers().get("mcp-session-id") else {
        return Err(response);
    };
    let id = id.to_str().unwrap().to_owned();
    assert_eq!(response.status(), StatusCode::OK);
    let _ = within("the initialize answer", response.text()).await;
    let initialized = post(url, token, Some(&id), INITIALIZED).await;
    assert_eq!(initialized.status(), StatusCode::ACCEPTED);
    Ok(id)
}

/// The JSON-RPC message of an answer, whether sent as JSON or as one SSE event.
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

/// Waits until the server closes `socket` (EOF or reset); how long it took, or `None`.
async fn closed_within(socket: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buffer = [0u8; 1024];
    loop {
        match tokio::time::timeout(
            limit.saturating_sub(started.elapsed()),
            socket.read(&mut buffer),
        )
        .await
        {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

async fn still_served(edge: &Edge) {
    let response = post(&edge.url, RELEASE_TOKEN, None, INITIALIZE).await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "a valid client is served"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_slowloris_connections_are_closed_while_a_client_is_served() {
    // Every socket comes from 127.0.0.1: the unauthenticated share of one address is lifted,
    // so that the timeouts alone are tested.
    let edge = serve(
        EdgeLimits::default()
            .with_header_read_timeout(Duration::from_secs(1))
            .with_idle_timeout(Duration::from_secs(1))
            .with_max_unauthenticated_connections_per_ip(256),
    )
    .await;
    // 40 sockets that send nothing, 40 that send half a request and stop.
    let mut idle = Vec::new();
    let mut partial = Vec::new();
    for _ in 0..40 {
        idle.push(TcpStream::connect(edge.addr).await.unwrap());
        let mut socket = TcpStream::connect(edge.addr).await.unwrap();
        socket
            .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .await
            .unwrap();
        partial.push(socket);
    }
    // 20 that send one header byte every 200 ms, for at most 5 s.
    let mut dribblers = Vec::new();
    for _ in 0..20 {
        let mut socket = TcpStream::connect(edge.addr).await.unwrap();
        dribblers.push(tokio::spawn(async move {
            let started = Instant::now();
            socket.write_all(b"GET /mcp HTTP/1.1\r\n").await.unwrap();
            let mut buffer = [0u8; 256];
            for _ in 0..25 {
                tokio::select! {
                    read = socket.read(&mut buffer) => match read {
                        Ok(0) | Err(_) => return Some(started.elapsed()),
                        Ok(_) => {}
                    },
                    () = tokio::time::sleep(Duration::from_millis(200)) => {
                        if socket.write_all(b"a").await.is_err() {
                            return Some(started.elapsed());
                        }
                    }
                }
            }
            None
        }));
    }
    // Meanwhile a valid client is served.
    still_served(&edge).await;
    for socket in idle.iter_mut().chain(partial.iter_mut()) {
        let closed = closed_within(socket, Duration::from_secs(5)).await;
        assert!(
            closed.is_some(),
            "an idle or half-sent connection stays open"
        );
    }
    for dribbler in dribblers {
        let closed = within("a slowloris client", dribbler).await.unwrap();
        let closed = closed.expect("a slowloris connection stays open 5 s");
        assert!(closed < Duration::from_secs(4), "{closed:?}");
    }
    still_served(&edge).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_limit_are_closed_at_once_and_clients_under_it_served() {
    let edge = serve(
        EdgeLimits::default()
            .with_max_connections(20)
            .with_max_unauthenticated_connections_per_ip(256)
            .with_idle_timeout(Duration::from_secs(30))
            .with_header_read_timeout(Duration::from_secs(30)),
    )
    .await;
    let mut holders = Vec::new();
    for _ in 0..15 {
        holders.push(TcpStream::connect(edge.addr).await.unwrap());
    }
    still_served(&edge).await;
    // 30 more: at most 5 (less the client's) fit.
    let mut flood = Vec::new();
    for _ in 0..30 {
        let mut socket = TcpStream::connect(edge.addr).await.unwrap();
        flood.push(tokio::spawn(async move {
            let closed = closed_within(&mut socket, Duration::from_secs(2)).await;
            (closed, socket)
        }));
    }
    let mut closed = 0;
    let mut held = Vec::new();
    for task in flood {
        let (was_closed, socket) = within("a connection over the limit", task).await.unwrap();
        if was_closed.is_some() {
            closed += 1;
        }
        held.push(socket);
    }
    assert!(
        closed >= 25,
        "only {closed} of 30 connections over the limit were closed"
    );
    // The held connections give their places back when they close.
    drop(holders);
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let response = reqwest::Client::new()
            .post(&edge.url)
            .header("authorization", format!("Bearer {RELEASE_TOKEN}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INITIALIZE)
            .timeout(Duration::from_secs(2))
            .send()
            .await;
        if response.is_ok_and(|response| response.status() == StatusCode::OK) {
            break;
        }
        assert!(Instant::now() < deadline, "places were not given back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_headers_are_refused() {
    let edge = serve(EdgeLimits::default().with_max_header_bytes(4096)).await;
    let mut socket = TcpStream::connect(edge.addr).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {RELEASE_TOKEN}\r\nX-Big: {}\r\n\r\n",
        "a".repeat(8192)
    );
    // The server may close before it read everything: a failed write is a refusal too.
    let _ = socket.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = within("the refusal", socket.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{answer}"
    );
    still_served(&edge).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_arrive_gets_408() {
    let edge = serve(EdgeLimits::default().with_body_read_timeout(Duration::from_secs(1))).await;
    let mut socket = TcpStream::connect(edge.addr).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {RELEASE_TOKEN}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 1000\r\n\r\n{{\"jsonrpc\""
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut answer = vec![0u8; 4096];
    let read = within("the 408", socket.read(&mut answer)).await.unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body_read_timeout"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_over_the_caps_are_refused_and_no_one_is_evicted() {
    let edge = serve(
        EdgeLimits::default()
            .with_max_sessions(5)
            .with_max_sessions_per_principal(3),
    )
    .await;
    let mut support = Vec::new();
    for _ in 0..3 {
        support.push(open_session(&edge.url, SUPPORT_TOKEN).await.unwrap());
    }
    // A fourth of the same token: 429, naming the limit.
    let refused = open_session(&edge.url, SUPPORT_TOKEN).await.unwrap_err();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let error = message(refused).await;
    assert_eq!(error["error"]["code"], -32000);
    assert_eq!(error["id"], 1);
    let text = error["error"]["message"].as_str().unwrap();
    assert!(text.contains("max_sessions_per_principal"), "{text}");
    // Another principal still opens sessions, with rmcp's client too, up to the total.
    open_session(&edge.url, RELEASE_TOKEN).await.unwrap();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(edge.url.as_str()).auth_header(RELEASE_TOKEN),
    );
    let client = within("rmcp's client", ().serve(transport)).await.unwrap();
    let tools = within("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), WRITER_TOOLS.len());
    // The sixth session, of any principal: 503, naming the limit.
    let refused = open_session(&edge.url, RELEASE_TOKEN).await.unwrap_err();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    let text = message(refused).await["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("max_sessions"), "{text}");
    // Nobody's session was evicted to make room.
    for session in &support {
        let listed = post(&edge.url, SUPPORT_TOKEN, Some(session), LIST).await;
        assert_eq!(listed.status(), StatusCode::OK);
    }
    // A session closed gives its place back.
    let closed = send(
        &edge.url,
        reqwest::Method::DELETE,
        SUPPORT_TOKEN,
        Some(&support[0]),
        &[],
        None,
    )
    .await;
    assert!(closed.status().is_success(), "{}", closed.status());
    open_session(&edge.url, SUPPORT_TOKEN).await.unwrap();
    drop(client);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_idle_past_its_expiry_is_gone_and_its_place_given_back() {
    let edge = serve(
        EdgeLimits::default()
            .with_session_idle_timeout(Duration::from_millis(800))
            .with_max_sessions_per_principal(1),
    )
    .await;
    let session = open_session(&edge.url, SUPPORT_TOKEN).await.unwrap();
    assert_eq!(
        post(&edge.url, SUPPORT_TOKEN, Some(&session), LIST)
            .await
            .status(),
        StatusCode::OK
    );
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let expired = post(&edge.url, SUPPORT_TOKEN, Some(&session), LIST).await;
    assert_eq!(expired.status(), StatusCode::NOT_FOUND);
    open_session(&edge.url, SUPPORT_TOKEN)
        .await
        .expect("the expired session's place is free");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principal_gets_404_on_every_method_and_the_session_still_works() {
    let edge = serve(EdgeLimits::default()).await;
    let session = open_session(&edge.url, SUPPORT_TOKEN).await.unwrap();
    let unknown = "0123456789abcdef0123456789abcdef";
    for (method, body) in [
        (reqwest::Method::DELETE, None),
        (reqwest::Method::GET, None),
        (reqwest::Method::POST, Some(LIST)),
    ] {
        let stolen = send(
            &edge.url,
            method.clone(),
            RELEASE_TOKEN,
            Some(&session),
            &[],
            body,
        )
        .await;
        let never_was = send(
            &edge.url,
            method.clone(),
            RELEASE_TOKEN,
            Some(unknown),
            &[],
            body,
        )
        .await;
        assert_eq!(stolen.status(), StatusCode::NOT_FOUND, "{method}");
        assert_eq!(never_was.status(), StatusCode::NOT_FOUND, "{method}");
        assert_eq!(
            stolen.text().await.unwrap(),
            never_was.text().await.unwrap(),
            "another's session looks like an unknown one"
        );
    }
    let listed = post(&edge.url, SUPPORT_TOKEN, Some(&session), LIST).await;
    assert_eq!(listed.status(), StatusCode::OK);
    let tools = message(listed).await;
    assert_eq!(
        tools["result"]["tools"].as_array().unwrap().len(),
        READER_TOOLS.len()
    );
    let closed = send(
        &edge.url,
        reqwest::Method::DELETE,
        SUPPORT_TOKEN,
        Some(&session),
        &[],
        None,
    )
    .await;
    assert!(closed.status().is_success());
    let gone = post(&edge.url, SUPPORT_TOKEN, Some(&session), LIST).await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_streams_over_the_cap_are_refused() {
    let edge = serve(EdgeLimits::default().with_max_streams_per_principal(1)).await;
    let first = open_session(&edge.url, SUPPORT_TOKEN).await.unwrap();
    let second = open_session(&edge.url, SUPPORT_TOKEN).await.unwrap();
    let stream = get_stream(&edge.url, SUPPORT_TOKEN, &first).await;
    assert_eq!(stream.status(), StatusCode::OK);
    let refused = get_stream(&edge.url, SUPPORT_TOKEN, &second).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let text = message(refused).await["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("max_streams_per_principal"), "{text}");
    // Another principal's streams are its own.
    let other = open_session(&edge.url, RELEASE_TOKEN).await.unwrap();
    let own = get_stream(&edge.url, RELEASE_TOKEN, &other).await;
    assert_eq!(own.status(), StatusCode::OK);
    // Closing the stream gives its place back.
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let again = get_stream(&edge.url, SUPPORT_TOKEN, &second).await;
        if again.status() == StatusCode::OK {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the closed stream's place was not given back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_over_the_rate_gets_429_with_retry_after_and_service_after() {
    let edge = serve(
        EdgeLimits::default()
            .with_requests_per_second(1)
            .with_burst(5),
    )
    .await;
    let ping = r#"{"jsonrpc": "2.0", "id": 7, "method": "ping"}"#;
    let mut statuses = Vec::new();
    let mut limited = None;
    for _ in 0..30 {
        let response = post(&edge.url, SUPPORT_TOKEN, None, ping).await;
        statuses.push(response.status());
        if response.status() == StatusCode::TOO_MANY_REQUESTS && limited.is_none() {
            limited = Some(response);
        }
    }
    assert!(
        statuses[..5]
            .iter()
            .all(|status| *status != StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    let refused = statuses
        .iter()
        .filter(|status| **status == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert!(refused >= 15, "{statuses:?}");
    let limited = limited.unwrap();
    let retry: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    let error = message(limited).await;
    assert_eq!(error["error"]["code"], -32000);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requests_per_second")
    );
    // Another principal is not slowed down.
    assert_ne!(
        post(&edge.url, RELEASE_TOKEN, None, ping).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    // After Retry-After, service again.
    tokio::time::sleep(Duration::from_secs(retry)).await;
    assert_ne!(
        post(&edge.url, SUPPORT_TOKEN, None, ping).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_origin_is_refused_and_a_loopback_origin_accepted() {
    async fn initialize_from(url: &str, origin: &str) -> reqwest::Response {
        let headers = [("origin", origin)];
        send(
            url,
            reqwest::Method::POST,
            RELEASE_TOKEN,
            None,
            &headers,
            Some(INITIALIZE),
        )
        .await
    }
    let edge = serve(EdgeLimits::default()).await;
    for origin in [
        "http://evil.example",
        "null",
        "http://localhost.evil.example:80",
        "https://127.0.0.1.nip.io",
    ] {
        let response = initialize_from(&edge.url, origin).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{origin}");
        assert!(response.headers().get("mcp-session-id").is_none());
    }
    for origin in [
        "http://localhost:5173",
        "http://127.0.0.1:8750",
        "https://[::1]:3000",
    ] {
        let response = initialize_from(&edge.url, origin).await;
        assert_eq!(response.status(), StatusCode::OK, "{origin}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_tools_call_gets_invalid_params_with_its_id() {
    let edge = serve(EdgeLimits::default()).await;
    let session = open_session(&edge.url, RELEASE_TOKEN).await.unwrap();
    for (id, params) in [
        (json!(11), None),
        (json!(12), Some(json!({}))),
        (json!("thirteen"), Some(json!({"name": 5}))),
        (
            json!(14),
            Some(json!({"name": "get_status", "arguments": [1]})),
        ),
        (json!(15), Some(json!("get_status"))),
    ] {
        let mut call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"});
        if let Some(params) = params {
            call["params"] = params;
        }
        let response = post(&edge.url, RELEASE_TOKEN, Some(&session), &call.to_string()).await;
        let answer = message(response).await;
        assert_eq!(answer["error"]["code"], -32602, "{call}: {answer}");
        assert_eq!(answer["id"], id, "{call}");
    }
    // A well-formed call still runs.
    let call = json!({"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": {"name": "get_status", "arguments": {"project": "web"}}});
    let answer =
        message(post(&edge.url, RELEASE_TOKEN, Some(&session), &call.to_string()).await).await;
    assert!(answer.get("result").is_some(), "{answer}");
}

/// The example server with the bundled tokens, its stderr lines collected.
async fn start_logged(args: &[&str]) -> ExampleServer {
    let tokens = tokens_file();
    let mut all: Vec<&std::ffi::OsStr> = vec!["--tokens".as_ref(), tokens.as_os_str()];
    all.extend(args.iter().map(std::ffi::OsStr::new));
    start_example(all).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newline_or_nul_in_an_id_or_a_tool_name_cannot_forge_a_log_line() {
    let server = start_logged(&["--log", "info"]).await;
    let session = open_session(&server.url, RELEASE_TOKEN).await.unwrap();
    let forged = " outcome=ok tool=deploy FORGED";
    let calls = [
        json!({"jsonrpc": "2.0", "id": format!("a\n2026-01-01T00:00:00Z  INFO registry_core::audit: event=\"call\"{forged}"), "method": "tools/call",
               "params": {"name": "get_status", "arguments": {"project": "web"}}}),
        json!({"jsonrpc": "2.0", "id": 21, "method": "tools/call",
               "params": {"name": format!("nope\n{forged}"), "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 22, "method": "tools/call",
               "params": {"name": format!("nul\u{0}{forged}"), "arguments": {}}}),
    ];
    for call in &calls {
        let response = post(
            &server.url,
            RELEASE_TOKEN,
            Some(&session),
            &call.to_string(),
        )
        .await;
        let _ = message(response).await;
    }
    // Wait for the three audited calls to reach the log.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let audited = server
            .lines
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line.contains("FORGED"))
            .count();
        if audited >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the calls were not audited: {:?}",
            server.lines.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lines = server.lines.lock().unwrap().clone();
    for line in &lines {
        // Every line is an event of the server: a timestamp first, never the attacker's text.
        assert!(
            line.starts_with(|c: char| c.is_ascii_digit()),
            "a line not written by the logger: {line:?}"
        );
        assert!(!line.contains('\0'), "{line:?}");
        assert!(
            !line.starts_with("2026-01-01T00:00:00Z"),
            "a forged line: {line:?}"
        );
    }
    for line in lines.iter().filter(|line| line.contains("FORGED")) {
        // The forged text stays inside one quoted, escaped value.
        assert!(line.contains("\\n") || line.contains("\\0"), "{line:?}");
        assert!(
            !unquoted(line).contains("FORGED"),
            "the forged text is outside a quoted value: {line:?}"
        );
    }
}

/// `line` without its quoted values (`"..."`, with `\"` and `\\` escapes).
fn unquoted(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            out.push(c);
            continue;
        }
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => break,
                _ => {}
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_refused_requests_writes_a_bounded_log() {
    let server = start_logged(&["--log", "info"]).await;
    let long_path = format!("{}/{}", server.url, "x".repeat(4000));
    let client = reqwest::Client::new();
    let count = 2000;
    let started = Instant::now();
    for i in 0..count {
        let url = if i % 2 == 0 { &server.url } else { &long_path };
        let response = within(
            "a refused request",
            client
                .post(url)
                .header("authorization", "Bearer not-a-known-token-at-all")
                .header("content-type", "application/json")
                .body(INITIALIZE)
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    let elapsed = started.elapsed();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let lines = server.lines.lock().unwrap().clone();
    let refusals: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("refused"))
        .collect();
    let bytes: usize = lines.iter().map(|line| line.len() + 1).sum();
    // One warning per 10 s at most, and never the path.
    let allowed = 1 + usize::try_from(elapsed.as_secs() / 10).unwrap();
    assert!(
        refusals.len() <= allowed,
        "{} warnings in {elapsed:?}: {refusals:?}",
        refusals.len()
    );
    assert!(
        !lines.iter().any(|line| line.contains("xxxxxxxx")),
        "the path was logged"
    );
    assert!(
        bytes < 4096,
        "{bytes} bytes of log for {count} refusals: {lines:?}"
    );
}

/// A TCP connection to `addr` from the loopback address `from` (any of 127.0.0.0/8).
async fn connect_from(from: [u8; 4], addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::from((from, 0)))
        .expect("a loopback address of 127.0.0.0/8 can be bound");
    within("a connection", socket.connect(addr)).await.unwrap()
}

/// Sends one raw HTTP/1.1 POST with `token` on `socket` (kept alive) and gives the status.
async fn raw_request(socket: &mut TcpStream, token: &str, body: &str) -> u16 {
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    // The answer's head and its whole body (a JSON error: Content-Length).
    loop {
        let read = within("an answer", socket.read(&mut buffer)).await.unwrap();
        assert!(read > 0, "closed: {}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&buffer[..read]);
        let text = String::from_utf8_lossy(&answer);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|line| {
                    line.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_owned)
                })
                .map_or(0, |value| value.trim().parse().unwrap());
            if body.len() >= length {
                return head[9..12].parse().unwrap();
            }
        }
    }
}

/// Whether the server closes `socket` at once (as it does with a connection over a limit).
async fn closed_at_once(socket: &mut TcpStream) -> bool {
    closed_within(socket, Duration::from_secs(2))
        .await
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_capped_per_ip_and_another_ip_is_still_served() {
    let edge = serve(
        EdgeLimits::default()
            .with_max_connections_per_ip(3)
            .with_header_read_timeout(Duration::from_secs(20))
            .with_idle_timeout(Duration::from_secs(20)),
    )
    .await;
    // 127.0.0.2 holds its three places with idle connections.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect_from([127, 0, 0, 2], edge.addr).await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    for _ in 0..3 {
        let mut over = connect_from([127, 0, 0, 2], edge.addr).await;
        assert!(
            closed_at_once(&mut over).await,
            "a fourth connection from 127.0.0.2 stayed open"
        );
    }
    // 127.0.0.3 is another source: served.
    let mut other = connect_from([127, 0, 0, 3], edge.addr).await;
    assert_eq!(
        raw_request(&mut other, SUPPORT_TOKEN, "not json").await,
        400
    );
    // A place given back is taken again.
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = connect_from([127, 0, 0, 2], edge.addr).await;
        if !closed_at_once_quick(&mut again).await {
            assert_eq!(
                raw_request(&mut again, SUPPORT_TOKEN, "not json").await,
                400
            );
            break;
        }
        assert!(Instant::now() < deadline, "the place was not given back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether the server closes `socket` within 300 ms.
async fn closed_at_once_quick(socket: &mut TcpStream) -> bool {
    closed_within(socket, Duration::from_millis(300))
        .await
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_connections_are_capped_apart_from_authenticated_ones() {
    let edge = serve(
        EdgeLimits::default()
            .with_max_unauthenticated_connections(2)
            .with_header_read_timeout(Duration::from_secs(20))
            .with_idle_timeout(Duration::from_secs(20)),
    )
    .await;
    // Authenticated: a request on it presented a valid token (its body is not JSON: 400).
    let mut authenticated = Vec::new();
    for _ in 0..3 {
        let mut socket = TcpStream::connect(edge.addr).await.unwrap();
        assert_eq!(
            raw_request(&mut socket, SUPPORT_TOKEN, "not json").await,
            400
        );
        authenticated.push(socket);
    }
    // Two unauthenticated, idle (one refused for a bad token would be closed: see
    // `one_ip_cannot_hold_every_unauthenticated_place`).
    let _idle = TcpStream::connect(edge.addr).await.unwrap();
    let bad = TcpStream::connect(edge.addr).await.unwrap();
    for _ in 0..3 {
        let mut over = TcpStream::connect(edge.addr).await.unwrap();
        assert!(
            closed_at_once(&mut over).await,
            "a third unauthenticated connection stayed open"
        );
    }
    // The authenticated connections are not counted, and still served.
    for socket in &mut authenticated {
        assert_eq!(raw_request(socket, RELEASE_TOKEN, "not json").await, 400);
    }
    // Once one goes, a new connection gets its place and can authenticate.
    drop(bad);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = TcpStream::connect(edge.addr).await.unwrap();
        if !closed_at_once_quick(&mut again).await {
            assert_eq!(
                raw_request(&mut again, SUPPORT_TOKEN, "not json").await,
                400
            );
            break;
        }
        assert!(Instant::now() < deadline, "the place was not given back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Issue 45, N9/M4: one address holds at most half the unauthenticated places, and then no
/// more than `max_unauthenticated_connections_per_ip`, so another address still connects and
/// is served; a connection refused for its token is closed after the 401, giving its place
/// back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_ip_cannot_hold_every_unauthenticated_place() {
    let edge = serve(
        EdgeLimits::default()
            .with_max_unauthenticated_connections(16)
            .with_max_unauthenticated_connections_per_ip(4)
            .with_header_read_timeout(Duration::from_secs(20))
            .with_idle_timeout(Duration::from_secs(20)),
    )
    .await;
    // 127.0.0.2 tries to take every unauthenticated place: it gets half of them (a burst of
    // parallel connections is let in until then), and then no more.
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(connect_from([127, 0, 0, 2], edge.addr).await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    for _ in 0..16 {
        let mut over = connect_from([127, 0, 0, 2], edge.addr).await;
        assert!(
            closed_at_once(&mut over).await,
            "a ninth unauthenticated connection from 127.0.0.2 stayed open"
        );
    }
    // Another source connects and is served.
    let mut other = connect_from([127, 0, 0, 3], edge.addr).await;
    assert!(!closed_at_once_quick(&mut other).await);
    assert_eq!(
        raw_request(&mut other, SUPPORT_TOKEN, "not json").await,
        400
    );
    // A connection refused for its token is answered 401 with `Connection: close`, and
    // closed: its place goes back to its source, which can then authenticate.
    let mut bad = held.pop().unwrap();
    let request = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer not-a-token\r\n\
                   Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    bad.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    within("the 401 and the close", bad.read_to_end(&mut answer))
        .await
        .unwrap();
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 401"), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = connect_from([127, 0, 0, 2], edge.addr).await;
        if !closed_at_once_quick(&mut again).await {
            assert_eq!(
                raw_request(&mut again, RELEASE_TOKEN, "not json").await,
                400
            );
            break;
        }
        assert!(Instant::now() < deadline, "the place was not given back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_streams_count_against_the_principals_stream_cap() {
    let edge = serve(EdgeLimits::default().with_max_streams_per_principal(1)).await;
    // A client that can answer questions: a call needing approval waits on its POST stream.
    let initialize = INITIALIZE.replace(
        r#""capabilities": {}"#,
        r#""capabilities": {"elicitation": {}}"#,
    );
    let response = post(&edge.url, RELEASE_TOKEN, None, &initialize).await;
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = within("the initialize answer", response.text()).await;
    let initialized = post(&edge.url, RELEASE_TOKEN, Some(&session), INITIALIZED).await;
    assert_eq!(initialized.status(), StatusCode::ACCEPTED);
    let call = json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call",
                      "params": {"name": "drop_preview", "arguments": {"name": "pr-1"}}});
    let mut waiting = post(&edge.url, RELEASE_TOKEN, Some(&session), &call.to_string()).await;
    assert_eq!(waiting.status(), StatusCode::OK);
    // The server asks for approval on the call's stream, and waits.
    let mut seen = String::new();
    while !seen.contains("elicitation/create") {
        let chunk = within("the approval question", waiting.chunk())
            .await
            .unwrap()
            .expect("the stream stays open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    // The stream holds the principal's one place: another request is refused, with its id.
    let refused = post(&edge.url, RELEASE_TOKEN, Some(&session), LIST).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let answer = message(refused).await;
    assert_eq!(answer["id"], 2);
    let text = answer["error"]["message"].as_str().unwrap();
    assert!(text.contains("max_streams_per_principal"), "{text}");
    // So is a GET stream.
    let stream = get_stream(&edge.url, RELEASE_TOKEN, &session).await;
    assert_eq!(stream.status(), StatusCode::TOO_MANY_REQUESTS);
    // Another principal's streams are its own.
    let other = open_session(&edge.url, SUPPORT_TOKEN).await.unwrap();
    let listed = message(post(&edge.url, SUPPORT_TOKEN, Some(&other), LIST).await).await;
    assert!(listed.get("result").is_some(), "{listed}");
    // The waiting call's stream closed: its place is given back.
    drop(waiting);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let response = post(&edge.url, RELEASE_TOKEN, Some(&session), LIST).await;
        if response.status() == StatusCode::OK {
            let listed = message(response).await;
            assert!(listed.get("result").is_some(), "{listed}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stream's place was not given back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Answers sent whole give their places back: many requests one after another.
    for _ in 0..5 {
        let listed = message(post(&edge.url, RELEASE_TOKEN, Some(&session), LIST).await).await;
        assert!(listed.get("result").is_some(), "{listed}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loopback_principal_is_refused_to_forwarded_requests() {
    let registry = registry_examples::registry().build().unwrap();
    let shutdown = CancellationToken::new();
    let config = HttpConfig::new(Tokens::new())
        .with_addr("127.0.0.1:0".parse().unwrap())
        .with_loopback_principal(registry_mcp::Principal::new(
            "local",
            registry_core::Subject::new("acme").with_scopes(["build:read"]),
        ))
        .with_shutdown(shutdown.clone());
    let server = HttpServer::bind(registry, config).await.unwrap();
    let url = server.url();
    tokio::spawn(server.serve());
    let initialize = |headers: &'static [(&'static str, &'static str)]| {
        let url = url.clone();
        async move {
            let mut request = reqwest::Client::new()
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(INITIALIZE);
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            within("a request", request.send()).await.unwrap().status()
        }
    };
    assert_eq!(initialize(&[]).await, StatusCode::OK);
    // A proxy or tunnel on this host passes on someone else's request: no loopback principal.
    for headers in [
        &[("x-forwarded-for", "203.0.113.7")][..],
        &[("forwarded", "for=203.0.113.7;proto=https")][..],
        &[("x-real-ip", "203.0.113.7")][..],
        &[("X-Forwarded-For", "127.0.0.1")][..],
    ] {
        assert_eq!(
            initialize(headers).await,
            StatusCode::UNAUTHORIZED,
            "{headers:?}"
        );
    }
    shutdown.cancel();
}

/// A TCP forwarder on loopback in front of `target`, as `socat` or `ssh -L` are: it copies
/// bytes both ways and adds nothing. Its address; it stops with `stop`.
async fn tcp_forwarder(target: SocketAddr, stop: CancellationToken) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                () = stop.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((mut inbound, _)) = accepted else {
                continue;
            };
            let stop = stop.clone();
            tokio::spawn(async move {
                let Ok(mut outbound) = TcpStream::connect(target).await else {
                    return;
                };
                tokio::select! {
                    () = stop.cancelled() => {}
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                }
            });
        }
    });
    addr
}

/// Issue 45, M9: a raw TCP forwarder on the same host is not detectable. Through one, a
/// request without a token acts as the loopback principal (the known behaviour
/// `HttpConfig::require_token_on_loopback` exists for); with that option it is refused 401,
/// through the forwarder and directly, while a token is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_tcp_forwarder_require_token_on_loopback_refuses_requests_without_a_token() {
    async fn start(require_token: bool) -> (SocketAddr, CancellationToken) {
        let registry = registry_examples::registry().build().unwrap();
        let shutdown = CancellationToken::new();
        let mut config = HttpConfig::new(Tokens::load(tokens_file()).unwrap())
            .with_addr("127.0.0.1:0".parse().unwrap())
            .with_loopback_principal(registry_mcp::Principal::new(
                "local",
                registry_core::Subject::new("acme").with_scopes(["build:read"]),
            ))
            .with_shutdown(shutdown.clone());
        if require_token {
            config = config.require_token_on_loopback();
        }
        let server = HttpServer::bind(registry, config).await.unwrap();
        let addr = server.local_addr();
        tokio::spawn(server.serve());
        (addr, shutdown)
    }
    async fn initialize(addr: SocketAddr, token: Option<&str>) -> StatusCode {
        let mut request = reqwest::Client::new()
            .post(format!("http://{addr}/mcp"))
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INITIALIZE);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        within("a request", request.send()).await.unwrap().status()
    }
    // Without the option: the forwarder's tokenless client acts as the loopback principal.
    let (server, shutdown) = start(false).await;
    let forwarder = tcp_forwarder(server, shutdown.clone()).await;
    assert_eq!(initialize(forwarder, None).await, StatusCode::OK);
    shutdown.cancel();
    // With it: refused, through the forwarder and directly; a token is still served.
    let (server, shutdown) = start(true).await;
    let forwarder = tcp_forwarder(server, shutdown.clone()).await;
    for addr in [forwarder, server] {
        assert_eq!(initialize(addr, None).await, StatusCode::UNAUTHORIZED);
        assert_eq!(initialize(addr, Some(SUPPORT_TOKEN)).await, StatusCode::OK);
    }
    shutdown.cancel();
}

/// A 2026-07-28 client of `token` (no session: each request stands alone).
async fn discover(
    edge: &Edge,
    token: &str,
) -> Result<rmcp::service::RunningService<rmcp::RoleClient, rmcp::model::ClientConfig>, String> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(edge.url.as_str()).auth_header(token),
    );
    within(
        "discover",
        rmcp::model::ClientConfig::default().serve_with_lifecycle(
            transport,
            rmcp::ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .map_err(|error| error.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_listen_streams_count_against_the_principals_stream_cap() {
    let edge = serve(EdgeLimits::default().with_max_streams_per_principal(2)).await;
    // Two 2026-07-28 clients of one token, each holding a subscriptions/listen stream: the
    // token's two places.
    let filter = || {
        rmcp::model::SubscriptionFilter::builder()
            .tools_list_changed()
            .build()
    };
    let first = discover(&edge, RELEASE_TOKEN).await.unwrap();
    let first_listen = within("listen", first.listen(filter())).await.unwrap();
    let second = discover(&edge, RELEASE_TOKEN).await.unwrap();
    let _second_listen = within("listen", second.listen(filter())).await.unwrap();
    // A third request of the token, even a short one, is refused with 429.
    let error = discover(&edge, RELEASE_TOKEN).await.unwrap_err();
    assert!(
        error.contains("429") || error.contains("too many streams"),
        "{error}"
    );
    // Another token has its own places.
    let other = discover(&edge, SUPPORT_TOKEN).await.unwrap();
    let _other_listen = within("listen", other.listen(filter())).await.unwrap();
    // The first subscription ends: its place is given back.
    drop(first_listen);
    within("close", first.cancel()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let third = loop {
        match discover(&edge, RELEASE_TOKEN).await {
            Ok(client) => break client,
            Err(error) => assert!(
                Instant::now() < deadline,
                "the stream's place was not given back: {error}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let (tools, _) = list_all(third.peer()).await;
    assert_eq!(names(&tools), WRITER_TOOLS);
}

/// The peak memory (`VmHWM`) of process `pid`, in bytes.
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/PID/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse().ok())
        .expect("VmHWM in kB");
    kib * 1024
}

/// `head`, then `unit` (given its index) as many times as fits in `size` bytes with `tail`.
fn filled(head: &str, unit: impl Fn(usize) -> String, tail: &str, size: usize) -> String {
    let mut body = head.to_owned();
    let mut index = 0;
    loop {
        let next = unit(index);
        if body.len() + next.len() + tail.len() > size {
            break;
        }
        body.push_str(&next);
        index += 1;
    }
    body.push_str(tail);
    body
}

/// Issue 45, L11: every message is bounded before it is built. Eight shapes of hostile body,
/// each about 8 MiB (the default `max_message_bytes`), sent four at a time with a valid token
/// in a session of the example server (a child process, no rate limit): each is refused with
/// a 4xx naming what was wrong, and the server's peak memory stays under 200 MB. Before the
/// edge read `id` without building it, counted values and refused batches, the first shape
/// alone took about 108 MB per request (rmcp's parser, and the registry's for a plain call's
/// arguments, build a `Value` and more per element).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_bodies_of_any_shape_are_refused_within_bounded_memory() {
    const SIZE: usize = 8 * 1024 * 1024 - 1024;
    let server = start_logged(&["--rate", "0"]).await;
    let session = open_session(&server.url, RELEASE_TOKEN).await.unwrap();
    let before = peak_memory(server.pid());
    let zeros = |_| "0,".to_owned();
    let list_tail = r#"0],"method":"tools/list"}"#;
    let level = format!("[{}", "0,".repeat(SIZE / 200 - 1));
    let nested = format!(
        r#"{{"jsonrpc":"2.0","id":{}0{},"method":"tools/list"}}"#,
        level.repeat(100),
        "]".repeat(100)
    );
    let shapes: Vec<(&str, String, &str)> = vec![
        (
            "an id of zeros",
            filled(r#"{"jsonrpc":"2.0","id":["#, zeros, list_tail, SIZE),
            "`id` is an array",
        ),
        (
            "an object id",
            filled(
                r#"{"jsonrpc":"2.0","id":{"#,
                |index| format!(r#""{index}":0,"#),
                r#""end":0},"method":"tools/list"}"#,
                SIZE,
            ),
            "`id` is an object",
        ),
        (
            "arrays nested 100 deep in the id",
            nested,
            "`id` is an array",
        ),
        (
            "a long string id",
            filled(
                r#"{"jsonrpc":"2.0","id":""#,
                |_| "a".to_owned(),
                r#"","method":"tools/list"}"#,
                SIZE,
            ),
            "longer than 1024 bytes",
        ),
        (
            "tools/list with huge params",
            filled(
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"x":["#,
                zeros,
                "0]}}",
                SIZE,
            ),
            "max_message_values",
        ),
        (
            "a plain call with 4 MiB of arguments",
            filled(
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_status","arguments":{"project":"web","x":["#,
                zeros,
                "0]}}}",
                4 * 1024 * 1024 - 1024,
            ),
            "max_message_values",
        ),
        (
            "a call with a huge _meta",
            filled(
                r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get_status","arguments":{"project":"web"},"_meta":{"x":["#,
                zeros,
                "0]}}}",
                SIZE,
            ),
            "max_message_values",
        ),
        (
            "a batch",
            filled(
                "[",
                |index| format!(r#"{{"jsonrpc":"2.0","id":{index},"method":"tools/list"}},"#),
                r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}]"#,
                SIZE,
            ),
            "batches are not accepted",
        ),
    ];
    for (shape, body, problem) in shapes {
        assert!(body.len() <= SIZE, "{shape}");
        let body = std::sync::Arc::new(body);
        let sent: Vec<_> = (0..4)
            .map(|_| {
                let (url, session, body) = (server.url.clone(), session.clone(), body.clone());
                tokio::spawn(async move {
                    let response = post(&url, RELEASE_TOKEN, Some(&session), &body).await;
                    let status = response.status();
                    (status, within("an answer", response.text()).await.unwrap())
                })
            })
            .collect();
        for answer in sent {
            let (status, text) = answer.await.unwrap();
            assert!(
                status.is_client_error(),
                "{shape}: {status} {}",
                &text[..text.len().min(300)]
            );
            assert!(
                text.len() < 1024 && text.contains(problem),
                "{shape}: {}",
                &text[..text.len().min(300)]
            );
        }
    }
    let peak = peak_memory(server.pid());
    eprintln!("peak memory: {before} bytes before, {peak} bytes after");
    assert!(
        peak < 200_000_000,
        "the server's peak memory reached {peak} bytes (from {before})"
    );
    // The server still serves the session.
    let listed = message(post(&server.url, RELEASE_TOKEN, Some(&session), LIST).await).await;
    assert!(listed.get("result").is_some(), "{listed}");
}
