//! The example MCP server over stdio, started as a child process and driven with rmcp's
//! client: listing in pages, calls (good, invalid, unknown, hidden, failing, panicking), a
//! revocation announced with `notifications/tools/list_changed`, and malformed input.

mod mcp_support;

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use mcp_support::*;
use registry_core::{Profile, Registry, Subject};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use registry_examples as _;

const WRITER: [&str; 4] = [
    "--scopes",
    "build:read,build:write,deploy:write",
    "--agent",
    "release-bot",
];
const READER: [&str; 3] = ["--scopes", "build:read", "--read-only"];

/// Counts `notifications/tools/list_changed`.
#[derive(Clone)]
struct Notified(mpsc::UnboundedSender<()>);

impl ClientHandler for Notified {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

fn command(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(server_binary());
    command
        .args(["--log", "error", "--poll-ms", "50"])
        .args(args);
    command
}

async fn start<H: ClientHandler>(handler: H, args: &[&str]) -> RunningService<RoleClient, H> {
    let (transport, _) = TokioChildProcess::builder(command(args))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the server starts");
    within("initialize", handler.serve(transport))
        .await
        .expect("the server initializes")
}

#[tokio::test]
async fn lists_every_visible_tool_in_pages_as_the_mcp_export() {
    let client = start((), &[&WRITER[..], &["--page-size", "3"]].concat()).await;
    let (tools, pages) = list_all(&client).await;
    assert_eq!(names(&tools), WRITER_TOOLS);
    assert_eq!(pages, 3, "7 tools in pages of 3");

    // Exactly what the registry exports for MCP, for the same subject, converted losslessly.
    let registry = Registry::from_inventory().unwrap();
    let subject = Subject::new("acme").with_scopes(["build:read", "build:write", "deploy:write"]);
    let export = registry
        .open_run("check", &subject)
        .export(Profile::Mcp)
        .unwrap();
    let listed: Vec<Value> = tools
        .iter()
        .map(|tool| serde_json::to_value(tool).unwrap())
        .collect();
    assert_eq!(Value::Array(listed), export);

    // Hints as annotations, the title too.
    let deploy = &tools[1];
    let annotations = deploy.annotations.as_ref().unwrap();
    assert_eq!(annotations.destructive_hint, Some(true));
    assert_eq!(annotations.read_only_hint, Some(false));
    let search = tools
        .iter()
        .find(|tool| tool.name == "search_docs")
        .unwrap();
    assert_eq!(search.title.as_deref(), Some("Search the docs"));
    assert_eq!(
        search.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );

    // A cursor that was never given out is an invalid-params error, not a crash.
    let bogus = rmcp::model::PaginatedRequestParams::default().with_cursor(Some("nonsense".into()));
    let error = within("tools/list", client.list_tools(Some(bogus)))
        .await
        .unwrap_err();
    assert!(invalid_params(error).contains("cursor"));
    let (again, _) = list_all(&client).await;
    assert_eq!(names(&again), WRITER_TOOLS);
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn calls_succeed_fail_and_carry_the_request_id() {
    let client = start((), &WRITER).await;

    let ok = call(&client, "get_status", json!({"project": "web"}))
        .await
        .unwrap();
    assert_eq!(ok.is_error, Some(false));
    assert_eq!(
        serde_json::from_str::<Value>(&text(&ok)).unwrap(),
        json!({"project": "web", "state": "passed"})
    );

    // The call id the tool sees is the JSON-RPC request id.
    let retry = call(&client, "retry_build", json!({"project": "web"}))
        .await
        .unwrap();
    let said = text(&retry);
    let id = said
        .strip_prefix("web: build queued again by call ")
        .expect(&said);
    assert!(id.parse::<u64>().is_ok(), "{said}");

    // Invalid arguments: a result with isError, listing every problem.
    let invalid = call(&client, "get_status", json!({"projct": "web"}))
        .await
        .unwrap();
    assert_eq!(invalid.is_error, Some(true));
    let said = text(&invalid);
    assert!(
        said.contains(r#"missing required property "project""#),
        "{said}"
    );
    assert!(said.contains(r#"unknown property "projct""#), "{said}");
    let wrong_type = call(
        &client,
        "list_builds",
        json!({"project": "web", "limit": "ten"}),
    )
    .await
    .unwrap();
    assert_eq!(wrong_type.is_error, Some(true));
    assert!(text(&wrong_type).contains("/limit"));

    // No arguments at all are `{}`.
    let bare = call_bare(&client, "get_status").await.unwrap();
    assert_eq!(bare.is_error, Some(true));
    assert!(text(&bare).contains(r#"missing required property "project""#));

    // The tool fails: the model reads its error.
    let failed = call(&client, "get_status", json!({"project": "mobile"}))
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert!(text(&failed).contains(r#"no project named "mobile""#));

    // The tool panics: a generic text, nothing of the panic.
    let panicked = call(&client, "changelog", json!({"version": "2.4"}))
        .await
        .unwrap();
    assert_eq!(panicked.is_error, Some(true));
    let said = text(&panicked);
    assert!(said.contains("internal error"), "{said}");
    assert!(
        !said.contains("unwrap") && !said.contains("index out of bounds"),
        "{said}"
    );

    // And the server still works.
    let ok = call(&client, "changelog", json!({"version": "2.4.0"}))
        .await
        .unwrap();
    assert_eq!(ok.is_error, Some(false));
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn unknown_and_hidden_tools_are_the_same_invalid_params_error() {
    let client = start((), &READER).await;
    let (tools, _) = list_all(&client).await;
    assert_eq!(
        names(&tools),
        READER_TOOLS,
        "a read-only subject sees read-only tools"
    );

    let hidden = invalid_params(
        call(
            &client,
            "deploy",
            json!({"project": "web", "env": "staging"}),
        )
        .await
        .unwrap_err(),
    );
    let unknown = invalid_params(
        call(
            &client,
            "launch",
            json!({"project": "web", "env": "staging"}),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(
        hidden.replace("deploy", "X"),
        unknown.replace("launch", "X")
    );
    assert!(
        hidden.contains("get_status"),
        "it lists what may be called: {hidden}"
    );
    // Names are matched exactly.
    let case = invalid_params(
        call(&client, "Get_Status", json!({"project": "web"}))
            .await
            .unwrap_err(),
    );
    assert!(case.starts_with(r#"unknown tool "Get_Status""#), "{case}");
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_revocation_is_announced_and_takes_effect_when_the_client_lists_again() {
    let trigger = std::env::temp_dir().join(format!("mcp-stdio-revoke-{}", std::process::id()));
    let _ = std::fs::remove_file(&trigger);
    let (sender, mut notified) = mpsc::unbounded_channel();
    let args = [
        &WRITER[..],
        &["--admin-revoke-on", trigger.to_str().unwrap(), "deploy"],
    ]
    .concat();
    let client = start(Notified(sender), &args).await;
    let (tools, _) = list_all(&client).await;
    assert!(names(&tools).contains(&"deploy".to_owned()));

    std::fs::write(&trigger, b"").unwrap();
    within("tools/list_changed", notified.recv())
        .await
        .expect("a notification");
    let _ = std::fs::remove_file(&trigger);

    // Until the client lists again, its calls go to the run it was shown: the revoked tool
    // is a tool error saying so, not an unknown tool.
    let revoked = call(
        &client,
        "deploy",
        json!({"project": "web", "env": "staging"}),
    )
    .await
    .unwrap();
    assert_eq!(revoked.is_error, Some(true));
    assert!(text(&revoked).contains("withdrawn"), "{}", text(&revoked));

    // Listing again opens a fresh run: the tool is gone, and calling it is unknown.
    let (tools, _) = list_all(&client).await;
    let expected: Vec<&str> = WRITER_TOOLS
        .iter()
        .copied()
        .filter(|name| *name != "deploy")
        .collect();
    assert_eq!(names(&tools), expected);
    let gone = invalid_params(
        call(
            &client,
            "deploy",
            json!({"project": "web", "env": "staging"}),
        )
        .await
        .unwrap_err(),
    );
    assert!(gone.starts_with(r#"unknown tool "deploy""#), "{gone}");
    let ok = call(&client, "rollback", json!({"env": "staging"}))
        .await
        .unwrap();
    assert_eq!(ok.is_error, Some(false));
    within("shutdown", client.cancel()).await.unwrap();
}

/// The server's stdin and stdout with the test in the middle: it can write raw lines between
/// the client's messages, and sees every line the server writes.
struct Tapped {
    inject: mpsc::UnboundedSender<Vec<u8>>,
    seen: Arc<Mutex<Vec<String>>>,
}

/// Starts the server with its pipes tapped, and an rmcp client over them.
async fn start_tapped(
    args: &[&str],
) -> (
    RunningService<RoleClient, ()>,
    Tapped,
    tokio::process::Child,
) {
    let mut child = command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let mut server_in = child.stdin.take().unwrap();
    let server_out = child.stdout.take().unwrap();
    let (client_side, forward_side) = tokio::io::duplex(1 << 20);
    let (client_read, client_write) = tokio::io::split(client_side);
    let (forward_read, mut forward_write) = tokio::io::split(forward_side);
    let (inject, mut injected) = mpsc::unbounded_channel::<Vec<u8>>();

    // Client -> server, whole lines, with injected lines in between.
    tokio::spawn(async move {
        let mut from_client = BufReader::new(forward_read);
        let mut line = Vec::new();
        loop {
            line.clear();
            tokio::select! {
                read = from_client.read_until(b'\n', &mut line) => {
                    if read.unwrap_or(0) == 0 { break; }
                    if server_in.write_all(&line).await.is_err() { break; }
                }
                Some(raw) = injected.recv() => {
                    if server_in.write_all(&raw).await.is_err() { break; }
                }
            }
            let _ = server_in.flush().await;
        }
    });

    // Server -> client, recording every line; answers to injected lines stop here.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(server_out).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            record.lock().unwrap().push(line.clone());
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let injected = message["id"].is_null() && message.get("method").is_none()
                || message["id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("raw-"));
            if injected {
                continue;
            }
            if forward_write
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
    });

    let client = within("initialize", ().serve((client_read, client_write)))
        .await
        .expect("the server initializes");
    (client, Tapped { inject, seen }, child)
}

impl Tapped {
    fn send(&self, raw: &[u8]) {
        let mut line = raw.to_vec();
        line.push(b'\n');
        self.inject.send(line).unwrap();
    }

    /// Waits until the server wrote a line for which `matches` holds.
    async fn answer(&self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        within(what, async {
            loop {
                let found = self
                    .seen
                    .lock()
                    .unwrap()
                    .iter()
                    .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                    .find(|message| matches(message));
                if let Some(found) = found {
                    return found;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        })
        .await
    }
}

#[tokio::test]
async fn malformed_input_gets_a_protocol_error_and_the_server_keeps_serving() {
    let (client, tapped, _child) =
        start_tapped(&[&READER[..], &["--max-message-bytes", "65536"]].concat()).await;
    let (tools, _) = list_all(&client).await;
    assert_eq!(names(&tools), READER_TOOLS);

    // Not JSON: dropped (there is no id to answer), the next request works.
    tapped.send(b"{\"jsonrpc\": \"2.0\", \"id\": \"raw-0\", \"method\": \"tools/li");
    tapped.send(b"garbage \x00\xff not json");
    assert_eq!(list_all(&client).await.0.len(), 4);

    // JSON that is not a JSON-RPC message: -32600 Invalid Request.
    tapped.send(br#"{"hello": "world"}"#);
    let error = tapped
        .answer("-32600", |m| m["error"]["code"] == json!(-32600))
        .await;
    assert!(error["id"].is_null());
    assert_eq!(list_all(&client).await.0.len(), 4);

    // An unknown method: -32601 Method not found, with the request's id.
    tapped.send(br#"{"jsonrpc": "2.0", "id": "raw-1", "method": "tools/destroy", "params": {}}"#);
    let error = tapped.answer("-32601", |m| m["id"] == json!("raw-1")).await;
    assert_eq!(error["error"]["code"], json!(-32601));

    // A tools/call with arguments that are not an object: -32602 from the protocol layer.
    tapped.send(br#"{"jsonrpc": "2.0", "id": "raw-2", "method": "tools/call", "params": {"name": "get_status", "arguments": [1, 2]}}"#);
    let error = tapped.answer("raw-2", |m| m["id"] == json!("raw-2")).await;
    assert!(error.get("error").is_some(), "{error}");

    // A message larger than the limit: dropped, and the server keeps serving.
    let mut huge = br#"{"jsonrpc": "2.0", "id": "raw-3", "method": "tools/call", "params": {"name": "search_docs", "arguments": {"query": ""#.to_vec();
    huge.extend(std::iter::repeat_n(b'x', 200_000));
    huge.extend(br#""}}}"#);
    tapped.send(&huge);
    let ok = call(&client, "get_status", json!({"project": "web"}))
        .await
        .unwrap();
    assert_eq!(ok.is_error, Some(false));

    // Nothing but JSON-RPC messages on stdout, and no answer to the oversized message.
    let seen = tapped.seen.lock().unwrap().clone();
    for line in &seen {
        let message: Value =
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"));
        assert_eq!(message["jsonrpc"], json!("2.0"), "{line}");
    }
    assert!(!seen.iter().any(|line| line.contains("raw-3")));
    within("shutdown", client.cancel()).await.unwrap();
}

/// With `--deferred --model-dir DIR`, `search_tools` ranks by meaning as well as by words:
/// a query that shares no word with a tool, and that words alone do not find it by, finds
/// it. The tools were embedded once, at start, into the `--embed-cache` file.
#[tokio::test]
async fn model_dir_finds_by_meaning_what_words_do_not() {
    const QUERY: &str = "nuke ephemeral env";
    const ANSWER: &str = "drop_preview";
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    // No word of the query is in the tool's definition (name, description, parameters), and
    // a search by words alone does not find it.
    let registry = registry_examples::registry().build().unwrap();
    let definition = serde_json::to_string(&*registry.get(ANSWER).unwrap().definition()).unwrap();
    let defined = words(&definition.replace('_', " "));
    for word in words(QUERY) {
        assert!(!defined.contains(&word), "{word:?} is in {definition}");
    }
    let subject = Subject::new("acme").with_scopes(["build:read", "build:write", "deploy:write"]);
    let lexical = registry.open_run("words", &subject).search(QUERY, 10);
    assert!(
        lexical.iter().all(|hit| hit.name() != ANSWER),
        "words alone found it: {:?}",
        lexical.iter().map(|hit| hit.name()).collect::<Vec<_>>()
    );

    let cache =
        std::env::temp_dir().join(format!("mcp-stdio-vectors-{}.cache", std::process::id()));
    let _ = std::fs::remove_file(&cache);
    let mut command = tokio::process::Command::new(server_binary());
    command
        .args(["--log", "info,rmcp=warn", "--deferred", "--model-dir"])
        .arg(model_dir())
        .arg("--embed-cache")
        .arg(&cache)
        .args(WRITER);
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let mut stderr = BufReader::new(stderr.expect("stderr is piped")).lines();
    let client = within("initialize", ().serve(transport))
        .await
        .expect("the server initializes");

    // Every tool of the registry, hidden ones too, was embedded before the server answered.
    let prepared = within("the log of the start", async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("search prepared") {
                return line;
            }
        }
        panic!("the server's log ended before the search was prepared");
    })
    .await;
    assert!(prepared.contains("the tools are embedded"), "{prepared}");
    let count = registry.len();
    assert!(
        prepared.contains(&format!("tools={count} computed={count} from_cache=0")),
        "{prepared}"
    );
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });

    let (before, _) = list_all(&client).await;
    assert!(!names(&before).contains(&ANSWER.to_owned()));
    let found = call(&client, "search_tools", json!({"query": QUERY}))
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&text(&found)).unwrap();
    let hits: Vec<&str> = answer["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|namespace| namespace["tools"].as_array().unwrap())
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(hits.contains(&ANSWER), "{answer}");
    let (after, _) = list_all(&client).await;
    assert!(names(&after).contains(&ANSWER.to_owned()), "loaded");
    within("shutdown", client.cancel()).await.unwrap();

    // The cache holds every tool's vector (384 values each, after its key).
    let bytes = std::fs::metadata(&cache).unwrap().len();
    assert!(bytes >= (count * 384 * 4) as u64, "{bytes} bytes");
    std::fs::remove_file(&cache).unwrap();
}

/// A `--model-dir` that is not a model's directory is a bad flag: status 2, and the
/// loader's reason, before anything is served.
#[tokio::test]
async fn a_bad_model_dir_is_refused_at_start() {
    let missing = workspace().join("target/no-such-model");
    let not_a_model = workspace().join("examples");
    for (dir, why) in [
        (&missing, "no such directory"),
        (&not_a_model, "config.json: no such file"),
    ] {
        let output = within(
            "the server refuses",
            tokio::process::Command::new(server_binary())
                .arg("--model-dir")
                .arg(dir)
                .stdin(Stdio::null())
                .output(),
        )
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("mcp_server: --model-dir {}: ", dir.display())),
            "{stderr}"
        );
        assert!(stderr.contains(why), "{stderr}");
        assert!(output.stdout.is_empty());
    }
    // --embed-cache alone is a bad flag too.
    let output = tokio::process::Command::new(server_binary())
        .args(["--embed-cache", "vectors.cache"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--embed-cache needs --model-dir DIR")
    );
}
