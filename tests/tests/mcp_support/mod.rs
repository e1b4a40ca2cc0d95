//! Shared by the MCP tests: building and starting the example server
//! (`examples/src/bin/mcp_server.rs`) as a child process, and small helpers.
//!
//! The server binary belongs to another package, so `CARGO_BIN_EXE_*` does not name it: the
//! tests build it (once per test binary, into the same target directory and profile as the
//! tests themselves) and run it from there; see [`package_binary`].

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ElicitRequestParams, ErrorCode,
    ProtocolVersion, SubscriptionFilter, Tool,
};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError, Subscription};
use rmcp::transport::IntoTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Map, Value};

/// How long any one step of a test may take before it fails.
pub const STEP: Duration = Duration::from_secs(30);

/// The bundled development tokens.
pub const SUPPORT_TOKEN: &str = "support-bot-dev-token-0001";
pub const RELEASE_TOKEN: &str = "release-bot-dev-token-0002";
pub const AUDITOR_TOKEN: &str = "auditor-dev-token-0003-globex";

/// What the read-only support bot (tenant acme, `build:read`) sees.
pub const READER_TOOLS: [&str; 4] = ["changelog", "get_status", "list_builds", "search_docs"];
/// What the release bot (tenant acme, every scope) sees.
pub const WRITER_TOOLS: [&str; 8] = [
    "changelog",
    "deploy",
    "drop_preview",
    "get_status",
    "list_builds",
    "retry_build",
    "rollback",
    "search_docs",
];

/// The workspace's root directory.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the workspace")
        .to_path_buf()
}

/// The tokens file bundled with the examples.
pub fn tokens_file() -> PathBuf {
    workspace().join("examples/mcp-tokens.json")
}

/// The example server's binary, built once per test binary.
pub fn server_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| example_binary("mcp_server"))
}

/// Builds the example program `name` (a binary of `registry-examples`) and gives its path.
pub fn example_binary(name: &str) -> PathBuf {
    package_binary("registry-examples", name)
}

/// Builds binary `name` of the workspace's package `package` and gives its path.
///
/// It builds every binary of the workspace with the features that `cargo test --workspace`
/// resolves (`--workspace --bins --examples`: the workspace has no examples, but asking for
/// them resolves features with the dev-dependencies, as a test build does). So after
/// `cargo test --workspace` built the tests, the libraries are already compiled with those
/// features: only the binaries are built, all at once by the first test binary that needs
/// one, and every later call is a no-op. `cargo build -p registry-examples --bin NAME` would
/// resolve other features (no dev-dependencies, only that package's), and so compile tokio
/// and everything above it a second time.
///
/// The nested cargo runs without the variables that cargo sets for this test (its package's
/// `CARGO_PKG_*`, `CARGO_MANIFEST_DIR`...): build scripts that read those through
/// `rerun-if-env-changed` (ring's does) would otherwise see them changed, and cargo would
/// compile ring and everything above it again (21 s of a 25 s test, seen in CI).
pub fn package_binary(package: &str, name: &str) -> PathBuf {
    // This test runs from <target>/<profile>/deps/<name>-<hash>: build into the same target
    // directory and profile, so that a second build finds everything compiled.
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("deps directory");
    let profile_dir = deps.parent().expect("profile directory");
    let target_dir = profile_dir.parent().expect("target directory");
    let profile = profile_dir
        .file_name()
        .and_then(|name| name.to_str())
        .expect("a profile directory name");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(set_by_cargo_for_a_test) {
            command.env_remove(key);
        }
    }
    command
        .current_dir(workspace())
        .args(["build", "--workspace", "--bins", "--examples"])
        .arg("--target-dir")
        .arg(target_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    match profile {
        "debug" => {}
        "release" => {
            command.arg("--release");
        }
        other => {
            command.args(["--profile", other]);
        }
    }
    let status = command.status().expect("cargo runs");
    assert!(
        status.success(),
        "building the workspace's programs (for {package}'s {name}) failed"
    );
    let binary = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} ({package}'s) was not built",
        binary.display()
    );
    binary
}

/// Whether cargo sets variable `key` for the test it runs (the package's facts, not a
/// configuration: `CARGO_HOME`, `CARGO_TARGET_DIR`, `CARGO_PROFILE_*`... are kept).
fn set_by_cargo_for_a_test(key: &str) -> bool {
    key.starts_with("CARGO_PKG_")
        || key.starts_with("CARGO_BIN_")
        || matches!(
            key,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_MANIFEST_LINKS"
                | "CARGO_CRATE_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "CARGO_RUSTC_CURRENT_DIR"
                | "OUT_DIR"
        )
}

/// Serves `server` in this process to one client acting for `subject`, over an in-memory
/// pipe; gives the client's end.
pub fn in_process(
    server: registry_mcp::McpServer,
    subject: registry_core::Subject,
) -> tokio::io::DuplexStream {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    tokio::spawn(async move {
        server
            .serve_io("test", subject, server_read, server_write)
            .await
    });
    client_io
}

/// A client configuration declaring form elicitation: its user can be asked.
pub fn eliciting() -> ClientConfig {
    let mut config = ClientConfig::default();
    let mut capabilities = rmcp::model::ClientCapabilities::default();
    capabilities.elicitation = Some(
        rmcp::model::ElicitationCapability::new()
            .with_form(rmcp::model::FormElicitationCapability::new()),
    );
    config.capabilities = capabilities;
    config
}

/// Fails the test if `future` takes longer than [`STEP`].
pub async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(STEP, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out: {what}"),
    }
}

/// A 2026-07-28 client over `transport` (no `initialize`: it discovers the server), with a
/// `subscriptions/listen` stream of tool list changes that the server accepted.
pub async fn modern_client<T, E, A>(
    transport: T,
) -> (RunningService<RoleClient, ClientConfig>, Subscription)
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client = within(
        "discover",
        ClientConfig::default().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("a 2026-07-28 client connects");
    let subscription = within(
        "subscriptions/listen",
        client.listen(SubscriptionFilter::builder().tools_list_changed().build()),
    )
    .await
    .expect("the server accepts the subscription");
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    (client, subscription)
}

/// Waits for the next notification on `subscription`, asserting it is
/// `notifications/tools/list_changed`.
pub async fn tool_list_changed(subscription: &mut Subscription) {
    let notification = within("list_changed (listen)", subscription.next())
        .await
        .unwrap()
        .expect("a notification");
    assert!(matches!(
        notification,
        rmcp::model::ServerNotification::ToolListChangedNotification(_)
    ));
}

/// Every tool, following the cursor page by page; also returns how many pages there were.
pub async fn list_all(peer: &Peer<RoleClient>) -> (Vec<Tool>, usize) {
    let mut tools = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
        let page = within("tools/list", peer.list_tools(Some(params)))
            .await
            .expect("tools/list succeeds");
        pages += 1;
        tools.extend(page.tools);
        cursor = page.next_cursor;
        if cursor.is_none() {
            return (tools, pages);
        }
        assert!(pages < 100, "the cursor never ends");
    }
}

/// The names of `tools`.
pub fn names(tools: &[Tool]) -> Vec<String> {
    tools.iter().map(|tool| tool.name.to_string()).collect()
}

/// Calls `name` with `arguments` (a JSON object).
pub async fn call(
    peer: &Peer<RoleClient>,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    within("tools/call", peer.call_tool(params)).await
}

/// Calls `name` without arguments at all (no `arguments` key).
pub async fn call_bare(
    peer: &Peer<RoleClient>,
    name: &str,
) -> Result<CallToolResult, ServiceError> {
    within(
        "tools/call",
        peer.call_tool(CallToolRequestParams::new(name.to_owned())),
    )
    .await
}

/// The text of a result's single text block.
pub fn text(result: &CallToolResult) -> String {
    assert_eq!(result.content.len(), 1, "one content block: {result:?}");
    result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone()
}

/// The JSON-RPC error of a failed request, asserting it is -32602 (invalid params).
pub fn invalid_params(error: ServiceError) -> String {
    match error {
        ServiceError::McpError(data) => {
            assert_eq!(data.code, ErrorCode::INVALID_PARAMS, "{data:?}");
            data.message.into_owned()
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// A JSON object from `value`.
pub fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("not an object"),
    }
}

/// The message and the requested schema (as JSON) of a form-mode elicitation request; panics
/// on any other.
pub fn form_question(request: ElicitRequestParams) -> (String, Value) {
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = request
    else {
        panic!("a form was expected: {request:?}");
    };
    (message, serde_json::to_value(&requested_schema).unwrap())
}

/// The example server started over HTTP as a child process (killed when dropped): its
/// endpoint, and the lines it wrote on stderr (each also echoed, prefixed `[server]`).
pub struct ExampleServer {
    pub url: String,
    pub lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    child: tokio::process::Child,
}

impl ExampleServer {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the server runs")
    }

    /// Kills the server with SIGKILL (`kill -9`): no shutdown, nothing flushed.
    pub async fn kill_9(&mut self) {
        self.child.kill().await.expect("the server is killed");
    }

    /// Stops the server with SIGTERM (a clean shutdown), and waits for it to exit.
    pub async fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().expect("the server runs");
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        within("the server's exit", self.child.wait())
            .await
            .expect("the server exits")
    }
}

/// Starts the example server with `--http 127.0.0.1:0` and `args` (nothing else: the caller
/// names its tokens or keys), and waits for the address it prints.
pub async fn start_example<I, S>(args: I) -> ExampleServer
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    start_example_with(args, |_| {}).await
}

/// [`start_example`], with the command first changed by `configure` (its environment, its
/// working directory).
pub async fn start_example_with<I, S>(
    args: I,
    configure: impl FnOnce(&mut tokio::process::Command),
) -> ExampleServer
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut command = tokio::process::Command::new(server_binary());
    configure(&mut command);
    let mut child = command
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let stderr = child.stderr.take().expect("a piped stderr");
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (found, mut url) = tokio::sync::mpsc::unbounded_channel();
    let collected = lines.clone();
    tokio::spawn(async move {
        // Bytes, not UTF-8 lines: a test may make the server log anything.
        let mut reader = BufReader::new(stderr);
        let mut line = Vec::new();
        while let Ok(read) = reader.read_until(b'\n', &mut line).await {
            if read == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&line)
                .trim_end_matches('\n')
                .to_owned();
            match text.strip_prefix("mcp_server: listening on ") {
                Some(url) => {
                    let _ = found.send(url.to_owned());
                }
                None => {
                    eprintln!("[server] {text}");
                    collected.lock().unwrap().push(text);
                }
            }
            line.clear();
        }
    });
    let url = within("the server's address", url.recv())
        .await
        .expect("the server prints its address");
    ExampleServer { url, lines, child }
}

/// The directory of the sentence model all-MiniLM-L6-v2, for the tests of `--model-dir`:
/// `REGISTRY_EMBED_MODEL_DIR` if set (`.ci/run` sets it), else the one the repository's own
/// script fetches (`bash .ci/fetch-model`, which does nothing once the model is there and
/// checked), as registry-embed's own tests find it (`registry-embed/tests/common/mod.rs`).
pub fn model_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("REGISTRY_EMBED_MODEL_DIR") {
            return PathBuf::from(dir);
        }
        let output = Command::new("bash")
            .arg(workspace().join(".ci/fetch-model"))
            .output()
            .expect("bash runs .ci/fetch-model");
        assert!(
            output.status.success(),
            "`bash .ci/fetch-model` failed: the model all-MiniLM-L6-v2 could not be fetched \
             (set REGISTRY_EMBED_MODEL_DIR to an unpacked copy instead):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout).expect("the script prints UTF-8");
        PathBuf::from(
            stdout
                .lines()
                .last()
                .expect("the script prints the directory")
                .trim(),
        )
    })
}
