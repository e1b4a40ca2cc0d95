//! The `policy_server` example end to end: a real MCP client (rmcp's) over HTTP on loopback,
//! the policies of a directory, and SIGHUP reloading them while the session stays open.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The example's binary, built by `cargo test` beside this test (target/debug/examples).
/// `cargo test --test server` alone does not build examples: run `cargo build --examples`
/// first, or the whole `cargo test`.
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let debug = exe.parent().and_then(Path::parent).unwrap();
    let binary = debug.join("examples").join("policy_server");
    assert!(
        binary.exists(),
        "{} was not built: run `cargo test` (which builds the examples) or `cargo build --examples`",
        binary.display()
    );
    binary
}

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within 20 s"))
}

struct Server {
    child: Child,
    url: String,
    pid: u32,
    /// Every line the server wrote on stderr.
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    async fn start(policies: &Path) -> Server {
        let mut child = Command::new(example())
            .args(["--http", "127.0.0.1:0", "--policies"])
            .arg(policies)
            .env("RUST_LOG", "info,rmcp=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (url, pid) = within("the server's address", async {
            loop {
                let Some(line) = lines.next_line().await.unwrap() else {
                    panic!("the server exited: {:?}", log.lock().unwrap());
                };
                log.lock().unwrap().push(line.clone());
                if let Some(rest) = line.strip_prefix("policy_server: listening on ") {
                    let (url, pid) = rest.split_once(" (pid ").unwrap();
                    break (url.to_owned(), pid.trim_end_matches(')').parse().unwrap());
                }
            }
        })
        .await;
        let kept = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                kept.lock().unwrap().push(line);
            }
        });
        Server {
            child,
            url,
            pid,
            log,
        }
    }

    async fn connect(&self, token: &str) -> RunningService<RoleClient, ()> {
        let transport = StreamableHttpClientTransport::<reqwest::Client>::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url.as_str()).auth_header(token),
        );
        within("initialize", ().serve(transport)).await.unwrap()
    }

    /// Sends SIGHUP and waits for the log line of the reload's outcome (the `count`th).
    async fn hang_up(&self, outcome: &str, count: usize) {
        let status = std::process::Command::new("kill")
            .args(["-HUP", &self.pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        within(outcome, async {
            loop {
                let seen = self
                    .log
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|line| line.contains(outcome))
                    .count();
                if seen >= count {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
    }
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    within(
        "tools/call",
        client.call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)),
    )
    .await
    .unwrap()
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_string(&result.content).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policies_of_a_directory_decide_and_sighup_reloads_them() {
    let dir = std::env::temp_dir().join(format!("registry-cedar-server-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/policies");
    for file in ["finance.cedar", "ops.cedar"] {
        std::fs::copy(examples.join(file), dir.join(file)).unwrap();
    }
    let mut server = Server::start(&dir).await;
    let finance = server.connect("finance-dev-token-0001").await;

    // The finance team sees its two tools; Cedar hides the deploy.
    let tools = within("tools/list", finance.list_all_tools())
        .await
        .unwrap();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["ledger_balance", "refund"]);

    let refund = |cents: i64| json!({"order": "o-1", "cents": cents});
    assert_ne!(
        call(&finance, "refund", refund(50_000)).await.is_error,
        Some(true)
    );
    let large = call(&finance, "refund", refund(200_000)).await;
    assert_eq!(large.is_error, Some(true));
    assert!(text(&large).contains("finance desk"), "{large:?}");

    // A stricter rule, then SIGHUP: the same session's next call is decided by it.
    let stricter = std::fs::read_to_string(dir.join("finance.cedar"))
        .unwrap()
        .replace("cents > 100000", "cents > 10000");
    std::fs::write(dir.join("finance.cedar"), stricter).unwrap();
    server.hang_up("policies_reloaded", 1).await;
    let refused = call(&finance, "refund", refund(50_000)).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(text(&refused).contains("finance desk"), "{refused:?}");

    // A file that does not parse: refused and logged; the set in force stays.
    std::fs::write(
        dir.join("broken.cedar"),
        "permit(principal, action, resource) when {",
    )
    .unwrap();
    server.hang_up("policies_refused", 1).await;
    assert_ne!(
        call(&finance, "refund", refund(500)).await.is_error,
        Some(true)
    );
    assert_eq!(
        call(&finance, "refund", refund(50_000)).await.is_error,
        Some(true)
    );

    // The ops team: a staging deploy runs; no finance tool is shown.
    let ops = server.connect("ops-dev-token-0002").await;
    let tools = within("tools/list", ops.list_all_tools()).await.unwrap();
    assert_eq!(
        tools
            .iter()
            .map(|tool| tool.name.as_ref())
            .collect::<Vec<&str>>(),
        ["deploy"]
    );
    let deploy = call(&ops, "deploy", json!({"service": "web", "env": "staging"})).await;
    assert_ne!(deploy.is_error, Some(true), "{deploy:?}");

    let _ = finance.cancel().await;
    let _ = ops.cancel().await;
    server.child.kill().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
