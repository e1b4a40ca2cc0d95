//! Plain `tools/call` requests of a session, answered by the HTTP edge itself (`direct.rs` in
//! registry-mcp): the example server, raw requests where the point is the raw request, rmcp's
//! client where a person approves. The answers must be rmcp's, the calls that need the
//! session must still reach rmcp, a session in use must not expire, and a call held for an
//! approval must be decided once.

use crate::mcp_support;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use mcp_support::*;
use registry_core::{Registry, Subject};
use registry_mcp::{HttpConfig, HttpServer, McpServer, Principal, ServerOptions, Tokens};
use reqwest::StatusCode;
use rmcp::ServerHandler;
use rmcp::ServiceExt;
use rmcp::handler::client::ClientHandler;
use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData,
    ListResourcesResult, PaginatedRequestParams, Resource, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

/// The example server with the bundled tokens, logging the audit events.
async fn start(args: &[&str]) -> ExampleServer {
    let tokens = tokens_file();
    let mut all: Vec<&std::ffi::OsStr> = vec!["--tokens".as_ref(), tokens.as_os_str()];
    all.extend(["--log", "info,rmcp=warn"].map(std::ffi::OsStr::new));
    all.extend(args.iter().map(std::ffi::OsStr::new));
    start_example(all).await
}

/// A raw session: its id, opened by `token` with `initialize` and `notifications/initialized`.
struct Session<'a> {
    url: &'a str,
    token: &'static str,
    id: String,
}

/// How a request was answered.
#[derive(Debug, PartialEq)]
enum Form {
    /// One JSON object: by the edge.
    Json,
    /// Server-sent events: by rmcp.
    Events,
}

impl<'a> Session<'a> {
    async fn open(url: &'a str, token: &'static str) -> Session<'a> {
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}});
        let response = request(url, token, None, &initialize.to_string(), &[]).await;
        assert_eq!(response.status(), StatusCode::OK);
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        within("initialize's answer", response.text())
            .await
            .unwrap();
        let session = Session { url, token, id };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = session.post(&initialized.to_string(), &[]).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        session
    }

    async fn post(&self, body: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        request(self.url, self.token, Some(&self.id), body, headers).await
    }

    /// Calls `name` with the params `extra` adds to its name and arguments: the status, the
    /// form of the answer and the JSON-RPC message.
    async fn call(
        &self,
        id: u64,
        name: &str,
        arguments: Option<Value>,
        extra: &[(&str, Value)],
        headers: &[(&str, &str)],
    ) -> (StatusCode, Form, Value) {
        let mut params = json!({"name": name});
        if let Some(arguments) = arguments {
            params["arguments"] = arguments;
        }
        for (key, value) in extra {
            params[*key] = value.clone();
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        answer(self.post(&body.to_string(), headers).await).await
    }
}

async fn request(
    url: &str,
    token: &str,
    session: Option<&str>,
    body: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(body.to_owned());
    if !headers.iter().any(|(name, _)| *name == "accept") {
        request = request.header("accept", "application/json, text/event-stream");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    within("a raw request", request.send())
        .await
        .expect("the server answers")
}

/// The status, form and JSON-RPC message of an answer (an SSE stream's last message).
async fn answer(response: reqwest::Response) -> (StatusCode, Form, Value) {
    let status = response.status();
    let kind = response
        .headers()
        .get("content-type")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = within("an answer", response.text()).await.unwrap();
    if kind.starts_with("application/json") {
        return (status, Form::Json, serde_json::from_str(&text).unwrap());
    }
    assert!(
        kind.starts_with("text/event-stream"),
        "{status} {kind}: {text}"
    );
    let message = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|data| !data.is_empty())
        .unwrap_or_else(|| panic!("no message in {text:?}"));
    (status, Form::Events, serde_json::from_str(message).unwrap())
}

/// A tool name with a NUL, a newline and a right-to-left override in it.
const HOSTILE_NAME: &str = "hostile\0name\ntool\u{202e}gnp.exe";

/// The body of a plain `tools/call` request.
fn call_body(id: u64, name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
    .to_string()
}

/// The message without its id.
fn without_id(mut message: Value) -> Value {
    message.as_object_mut().unwrap().remove("id");
    message
}

#[tokio::test]
async fn plain_calls_are_answered_by_the_edge_exactly_as_rmcp_answers_them() {
    let server = start(&[]).await;
    let writer = Session::open(&server.url, RELEASE_TOKEN).await;
    let reader = Session::open(&server.url, SUPPORT_TOKEN).await;
    // Each call plainly, then with a trace's context in `_meta` (which only rmcp serves): the
    // same answer.
    let calls: [(&Session<'_>, &str, Option<Value>, &str); 10] = [
        (
            &writer,
            "search_docs",
            Some(json!({"query": "deploy"})),
            "a result",
        ),
        (
            &writer,
            "search_docs",
            Some(json!({"query": 5})),
            "invalid arguments",
        ),
        (&writer, "search_docs", None, "no arguments"),
        (&writer, "search_docs", Some(Value::Null), "null arguments"),
        (
            &writer,
            "changelog",
            Some(json!({"version": "x"})),
            "a panic",
        ),
        (
            &writer,
            "rollback",
            Some(json!({"env": "staging"})),
            "a result",
        ),
        (
            &reader,
            "rollback",
            Some(json!({"env": "staging"})),
            "a hidden tool",
        ),
        // Async, so rmcp would serve it were it visible: hidden, it is refused here as an
        // unknown tool is, and the form of the answer does not tell them apart.
        (
            &reader,
            "deploy",
            Some(json!({"project": "web", "env": "staging"})),
            "a hidden async tool",
        ),
        (&writer, "no_such_tool", Some(json!({})), "an unknown tool"),
        // Hostile bytes in the name: answered as rmcp answers them, and logged escaped (below).
        (
            &writer,
            HOSTILE_NAME,
            Some(json!({})),
            "an unknown tool with a NUL, a newline and a bidi override",
        ),
    ];
    let mut kinds = Vec::new();
    for (n, (session, name, arguments, what)) in calls.into_iter().enumerate() {
        let id = 10 + 2 * n as u64;
        let (status, form, direct) = session.call(id, name, arguments.clone(), &[], &[]).await;
        assert_eq!(
            (status, form),
            (StatusCode::OK, Form::Json),
            "{what}: {direct}"
        );
        assert_eq!(direct["id"], json!(id), "{what}");
        let meta = [(
            "_meta",
            json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}),
        )];
        let (status, form, by_rmcp) = session.call(id + 1, name, arguments, &meta, &[]).await;
        assert_eq!((status, form), (StatusCode::OK, Form::Events), "{what}");
        assert_eq!(without_id(direct.clone()), without_id(by_rmcp), "{what}");
        kinds.push(
            match (&direct["result"]["isError"], &direct["error"]["code"]) {
                (Value::Bool(false), _) => "ok",
                (Value::Bool(true), _) => "isError",
                (_, code) if *code == json!(-32602) => "-32602",
                _ => panic!("{what}: {direct}"),
            },
        );
    }
    assert_eq!(
        kinds,
        [
            "ok", "isError", "isError", "isError", "isError", "ok", "-32602", "-32602", "-32602",
            "-32602"
        ]
    );
    // The hostile name reached the server's log (its audit of the refusals) only escaped:
    // no line holds its raw bytes (a line split at its newline would begin with the bidi
    // override).
    let lines = server.lines.lock().unwrap().clone();
    assert!(
        lines
            .iter()
            .any(|line| line.contains("hostile") && line.contains("\\n")),
        "the hostile call is logged: {lines:#?}"
    );
    for line in &lines {
        assert!(!line.contains(['\0', '\u{202e}']), "{line:?}");
    }
    // A string id is echoed as it came.
    let body = r#"{"jsonrpc":"2.0","id":"call-\u00e9","method":"tools/call","params":{"name":"rollback","arguments":{"env":"staging"}}}"#;
    let (_, form, direct) = answer(writer.post(body, &[]).await).await;
    assert_eq!(form, Form::Json);
    assert_eq!(direct["id"], json!("call-é"));
    assert_eq!(
        direct["result"]["content"][0]["text"],
        json!("Staging rolled back")
    );
}

/// T5-5: the `Host` allowlist (against DNS rebinding) comes first, for a plain call the
/// edge answers itself as for the rest, before the token is looked at: a destructive tool
/// called under a foreign `Host` does not run, whatever the token.
#[tokio::test]
async fn a_plain_call_under_a_foreign_host_is_refused_before_the_token_and_does_not_run() {
    let server = start(&[]).await;
    let writer = Session::open(&server.url, RELEASE_TOKEN).await;
    let port = server
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let foreign = format!("evil.example:{port}");
    let host = [("host", foreign.as_str())];
    let rollback = call_body(20, "rollback", json!({"env": "staging"}));
    let forbidden = |what: &str, status: StatusCode, body: &str| {
        assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {body}");
        assert!(body.contains("HttpConfig::allowed_hosts"), "{what}: {body}");
    };
    // In the session, with the token that opened it: refused, plainly and through rmcp.
    let response = writer.post(&rollback, &host).await;
    let status = response.status();
    forbidden("a plain call", status, &response.text().await.unwrap());
    let traced = json!({"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": {
        "name": "rollback", "arguments": {"env": "staging"},
        "_meta": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}});
    let response = writer.post(&traced.to_string(), &host).await;
    let status = response.status();
    forbidden("a traced call", status, &response.text().await.unwrap());
    let list = r#"{"jsonrpc": "2.0", "id": 22, "method": "tools/list"}"#;
    let response = writer.post(list, &host).await;
    let status = response.status();
    forbidden("tools/list", status, &response.text().await.unwrap());
    // Without a token, or with one that is not valid: the same refusal, not a 401.
    for token in [None, Some("not-a-token")] {
        let mut request = reqwest::Client::new()
            .post(&server.url)
            .header("host", &foreign)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &writer.id)
            .body(rollback.clone());
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let response = within("a raw request", request.send()).await.unwrap();
        let status = response.status();
        forbidden(
            &format!("token {token:?}"),
            status,
            &response.text().await.unwrap(),
        );
    }
    // The tool never ran: its call was never audited (the log is read in order, so once a
    // later call's line is in, an earlier one would be). Under the server's own name it
    // runs, and is.
    let later = writer
        .call(
            23,
            "search_docs",
            Some(json!({"query": "deploy"})),
            &[],
            &[],
        )
        .await;
    assert_eq!(later.0, StatusCode::OK, "{}", later.2);
    until_audited(&server, "search_docs").await;
    assert_eq!(audited(&server, "rollback"), 0);
    let (status, form, answer) = writer
        .call(24, "rollback", Some(json!({"env": "staging"})), &[], &[])
        .await;
    assert_eq!((status, form), (StatusCode::OK, Form::Json), "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        json!("Staging rolled back")
    );
    until_audited(&server, "rollback").await;
}

/// How many calls of `tool` the server's log audits as run.
fn audited(server: &ExampleServer, tool: &str) -> usize {
    let lines = server.lines.lock().unwrap();
    lines
        .iter()
        .filter(|line| line.contains(tool) && line.contains(r#"outcome="ok""#))
        .count()
}

/// Waits until the server's log audits a call of `tool` as run.
async fn until_audited(server: &ExampleServer, tool: &str) {
    let start = Instant::now();
    while audited(server, tool) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{tool} is audited"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn calls_that_need_the_session_or_that_rmcp_would_refuse_still_reach_rmcp() {
    let server = start(&[]).await;
    let writer = Session::open(&server.url, RELEASE_TOKEN).await;
    let staging = || Some(json!({"env": "staging"}));
    // An async tool.
    let (status, form, _) = writer
        .call(
            1,
            "deploy",
            Some(json!({"project": "web", "env": "staging"})),
            &[],
            &[],
        )
        .await;
    assert_eq!((status, form), (StatusCode::OK, Form::Events));
    // A progress token alone is an offer, which a tool without a context never takes up.
    let progress = [("_meta", json!({"progressToken": 7}))];
    let (status, form, message) = writer.call(2, "rollback", staging(), &progress, &[]).await;
    assert_eq!((status, form), (StatusCode::OK, Form::Json), "{message}");
    // Anything else in `_meta`, or a task: the session's stream carries them.
    for (key, value) in [
        (
            "_meta",
            json!({"progressToken": 7, "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}),
        ),
        ("task", json!({"ttl": 60000})),
    ] {
        let (status, form, message) = writer
            .call(2, "rollback", staging(), &[(key, value)], &[])
            .await;
        assert_eq!(
            (status, form),
            (StatusCode::OK, Form::Events),
            "{key}: {message}"
        );
    }
    // An `Accept` header that rmcp must judge: a quality, or one media type only.
    let (status, form, _) = writer
        .call(
            3,
            "rollback",
            staging(),
            &[],
            &[("accept", "application/json;q=0.9, text/event-stream")],
        )
        .await;
    assert_eq!((status, form), (StatusCode::OK, Form::Events));
    let only_json = writer
        .post(
            &call_body(4, "rollback", json!({"env": "staging"})),
            &[("accept", "application/json")],
        )
        .await;
    assert_eq!(only_json.status(), StatusCode::NOT_ACCEPTABLE);
    // A protocol header: a revision with sessions is served here, an unknown one is refused
    // by rmcp.
    let (status, form, _) = writer
        .call(
            5,
            "rollback",
            staging(),
            &[],
            &[("mcp-protocol-version", "2025-11-25")],
        )
        .await;
    assert_eq!((status, form), (StatusCode::OK, Form::Json));
    let unknown = writer
        .post(
            &call_body(6, "rollback", json!({"env": "staging"})),
            &[("mcp-protocol-version", "1999-01-01")],
        )
        .await;
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST);
    // Not JSON-RPC 2.0, or a key twice: what rmcp cannot parse is refused, not called.
    for body in [
        r#"{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"rollback","arguments":{"env":"staging"}}}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search_docs","name":"rollback","arguments":{"env":"staging"}}}"#,
    ] {
        let (_, _, message) = answer(writer.post(body, &[]).await).await;
        assert!(message.get("result").is_none(), "{body}: {message}");
        assert!(message["error"]["code"].is_i64(), "{body}: {message}");
    }
    // Another principal's session is unknown; a closed one too.
    let reader = Session {
        url: &server.url,
        token: SUPPORT_TOKEN,
        id: writer.id.clone(),
    };
    let response = reader
        .post(&call_body(9, "search_docs", json!({"query": "x"})), &[])
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let closed = reqwest::Client::new()
        .delete(&server.url)
        .header("authorization", format!("Bearer {RELEASE_TOKEN}"))
        .header("mcp-session-id", &writer.id)
        .send();
    assert!(
        within("DELETE", closed)
            .await
            .unwrap()
            .status()
            .is_success()
    );
    let response = writer
        .post(&call_body(10, "search_docs", json!({"query": "x"})), &[])
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_session_in_use_does_not_expire_and_an_idle_one_does() {
    // rmcp ends a session no request reached for 800 ms; the edge answers most calls.
    let server = start(&["--session-idle-ms", "800"]).await;
    let writer = Session::open(&server.url, RELEASE_TOKEN).await;
    let started = Instant::now();
    let (mut forms, mut id) = (Vec::new(), 0);
    while started.elapsed() < Duration::from_millis(2_400) {
        id += 1;
        let (status, form, message) = writer
            .call(id, "rollback", Some(json!({"env": "staging"})), &[], &[])
            .await;
        assert_eq!(
            status,
            StatusCode::OK,
            "after {:?}: {message}",
            started.elapsed()
        );
        assert_eq!(message["result"]["isError"], json!(false), "{message}");
        forms.push(form);
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    // Every quarter of the idle time, one went to rmcp; the others were answered here.
    let by_rmcp = forms.iter().filter(|form| **form == Form::Events).count();
    assert!(
        (2..=forms.len() / 3).contains(&by_rmcp),
        "{by_rmcp} of {} calls went to rmcp",
        forms.len()
    );
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    let response = writer
        .post(&call_body(0, "rollback", json!({"env": "staging"})), &[])
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

/// A person who approves every question, counting them.
#[derive(Clone, Default)]
struct Approver(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl ClientHandler for Approver {
    fn get_info(&self) -> ClientConfig {
        eliciting()
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})))
    }
}

#[tokio::test]
async fn a_plain_call_held_for_approval_is_decided_once_and_asked_on_the_session() {
    let server = start(&[]).await;
    let approver = Approver::default();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
            .auth_header(RELEASE_TOKEN),
    );
    let client = within("initialize", approver.clone().serve(transport))
        .await
        .expect("the client connects");
    let result = call(&client, "drop_preview", json!({"name": "pr-7"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "preview pr-7 deleted");
    assert_eq!(approver.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    within("shutdown", client.cancel()).await.unwrap();
    // One approval requested (the call was decided once, at the edge), and one run.
    let lines = server.lines.lock().unwrap().clone();
    let audited = |what: &str| {
        lines
            .iter()
            .filter(|line| line.contains("drop_preview") && line.contains(what))
            .count()
    };
    assert_eq!(audited(r#"outcome="approval_required""#), 1, "{lines:#?}");
    assert_eq!(audited(r#"outcome="ok""#), 1, "{lines:#?}");
}

/// An application's own part of a composed server: one resource.
#[derive(Clone)]
struct Docs;

impl ServerHandler for Docs {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let guide = Resource::new("docs://guide", "guide");
        Ok(ListResourcesResult::with_all_items(vec![guide]))
    }
}

const COMPOSED_TOKEN: &str = "composed-app-token-0001";

/// How a composed server is made.
#[derive(Clone, Copy)]
enum Made {
    /// `HttpServer::bind_with_handler`.
    Bound,
    /// `McpServer::http_router_with_handler`, served by `axum::serve`.
    Routed,
    /// `HttpServer::bind_with`, wrapping the registry's handler in the same composition.
    Wrapped,
}

/// The example's tools composed with [`Docs`], on loopback and serving: its URL.
async fn composed(made: Made) -> String {
    // The example's tools (as the example server's): no `#[tool]` here, which every registry
    // made from this binary's inventory would get.
    let registry = Registry::from_inventory().unwrap();
    let mut tokens = Tokens::new();
    tokens
        .insert(COMPOSED_TOKEN, Principal::new("app", Subject::new("acme")))
        .unwrap();
    let config = HttpConfig::new(tokens).with_addr(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
    let server = match made {
        Made::Bound => HttpServer::bind_with_handler(registry, config, Docs).await,
        Made::Wrapped => {
            HttpServer::bind_with(registry, config, |tools| tools.with_handler(Docs)).await
        }
        Made::Routed => {
            let server = McpServer::new(registry, ServerOptions::default()).unwrap();
            let router = server.http_router_with_handler(&config, Docs);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/mcp", listener.local_addr().unwrap());
            tokio::spawn(async move { axum::serve(listener, router).await });
            return url;
        }
    }
    .unwrap();
    let url = server.url();
    tokio::spawn(server.serve());
    url
}

#[tokio::test]
async fn a_composed_server_keeps_the_edges_answers_and_serves_the_apps_resources() {
    let (bound, routed, wrapped) = (
        composed(Made::Bound).await,
        composed(Made::Routed).await,
        composed(Made::Wrapped).await,
    );
    let kept = [
        Session::open(&bound, COMPOSED_TOKEN).await,
        Session::open(&routed, COMPOSED_TOKEN).await,
    ];
    let wrapped = Session::open(&wrapped, COMPOSED_TOKEN).await;
    let meta = [(
        "_meta",
        json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}),
    )];
    let cases = [
        (json!({"query": "deploy"}), "a result"),
        (json!({"query": 5}), "invalid arguments"),
    ];
    for (n, (kept, (arguments, what))) in kept
        .iter()
        .flat_map(|kept| cases.iter().cloned().map(move |case| (kept, case)))
        .enumerate()
    {
        let id = 10 + 3 * n as u64;
        // Composed by `bind_with_handler`: a plain call is answered by the edge...
        let (status, form, direct) = kept
            .call(id, "search_docs", Some(arguments.clone()), &[], &[])
            .await;
        assert_eq!(
            (status, form),
            (StatusCode::OK, Form::Json),
            "{what}: {direct}"
        );
        // ...as the composed handler answers it through rmcp (a trace in `_meta`)...
        let (status, form, by_rmcp) = kept
            .call(id + 1, "search_docs", Some(arguments.clone()), &meta, &[])
            .await;
        assert_eq!((status, form), (StatusCode::OK, Form::Events), "{what}");
        assert_eq!(without_id(direct.clone()), without_id(by_rmcp), "{what}");
        // ...and as a server of the same composition by `bind_with` answers it, whose
        // handler gets every call.
        let (status, form, wrapped_answer) = wrapped
            .call(id + 2, "search_docs", Some(arguments), &[], &[])
            .await;
        assert_eq!((status, form), (StatusCode::OK, Form::Events), "{what}");
        assert_eq!(
            without_id(direct.clone()),
            without_id(wrapped_answer),
            "{what}"
        );
        if n % 2 == 0 {
            assert_eq!(direct["result"]["isError"], json!(false), "{direct}");
        } else {
            assert_eq!(direct["result"]["isError"], json!(true), "{direct}");
        }
    }
    // The application's part is the application's, through rmcp.
    let list = json!({"jsonrpc": "2.0", "id": 30, "method": "resources/list"}).to_string();
    let (status, form, resources) = answer(kept[0].post(&list, &[]).await).await;
    assert_eq!((status, form), (StatusCode::OK, Form::Events));
    assert_eq!(
        resources["result"]["resources"][0]["uri"],
        json!("docs://guide")
    );
}
