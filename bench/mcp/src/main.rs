//! `tools/call` of a trivial tool (`add(a, b)`) over MCP streamable HTTP on loopback: the
//! registry's server against a bare rmcp server, and against calling the tool in-process.
//!
//! The servers are this program started again as child processes, each on 127.0.0.1 and a
//! free port, logging nothing:
//!
//! - `bench-mcp serve MODE ARGS…`: the registry as `registry_mcp::HttpServer` serves it, the
//!   whole edge included (its accept loop with timeouts and a connection limit, `Origin`,
//!   authentication, the rate per principal with its limit lifted out of the way, body
//!   checks, session ownership and caps, rmcp's streamable HTTP service in session mode,
//!   `TCP_NODELAY`), with the clients authenticated as [`AuthMode`] `MODE` says (`static`: a
//!   bearer-token file; `jwt`: JWT access tokens checked against a JWKS file; `jwt-step-up`:
//!   the same with step-up on; one token per client, so each client is its own subject with
//!   its own run); on a second port a plain axum route that answers a fixed result, to show
//!   what HTTP alone costs;
//! - `bench-mcp serve-bare`: the baseline, rmcp's own `StreamableHttpService` with
//!   `LocalSessionManager` and the same tool written with rmcp's macros, nothing in front
//!   (no authentication): see [`bare`].
//!
//! What is measured:
//!
//! - `in-process`: `run.call(ToolCall)` in a Tokio runtime (median of 31 batches of 2,000);
//! - `sequential`: one client, one call at a time, against the registry: latency percentiles,
//!   with rmcp's client, with a minimal client, and the minimal client on the plain route;
//! - `comparison`: `--clients` clients calling in a loop, against each registry auth mode and
//!   the bare server, interleaved (round 1: registry, bare; round 2: bare, registry; …), each
//!   a warm-up then `--seconds` measured: calls per second and latency p50/p99 per
//!   round, and the server process's CPU time per call (`/proc/PID/stat`); the median over
//!   rounds per server, the range, and the ratio to the bare server (of the medians, and the
//!   median of the ratios round by round). Once with the minimal client, once with rmcp's
//!   (`--client`);
//! - `sessions`: fresh servers, `--sessions` sessions opened and abandoned (`initialize`
//!   without a session id, `notifications/initialized` in the session, nothing more), 4 at a
//!   time, for at most 60 s: the server's RSS (`VmRSS`) before and after, how many were
//!   opened, how many refused (any non-2xx answer) or failed (no answer).
//!
//! Client and servers share the machine's cores.
//!
//! Run: `cargo run --release --manifest-path bench/mcp/Cargo.toml -- [options]`:
//! `--clients N` (16), `--seconds N` per round (3), `--warmup N` seconds per round (1),
//! `--rounds N` (7), `--calls N` sequential (5000), `--sessions N` (10000, 0 to skip),
//! `--client raw|rmcp|both` (both), `--auth static,jwt,jwt-step-up` (all three), `--only-compare` (skip
//! the in-process and sequential rows), `--tool add|add_on_pool` (`add`, declared
//! `non_blocking`; `add_on_pool` is the same function without it, run on the registry's
//! pool of threads), `--composed` (the registry server composed with an application's
//! handler by `HttpServer::bind_with_handler`, as a server with resources and prompts is).

mod bare;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::serve::ListenerExt;
use registry_core::{Registry, Subject, ToolCall, tool};
use registry_mcp::{EdgeLimits, HttpConfig, HttpServer, Jwks, OAuth, ServerOptions, Tokens};
use rmcp::model::CallToolRequestParams;
use rmcp::model::ProtocolVersion;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

/// Add two numbers.
// `non_blocking`: run on the connection's task, as rmcp runs its synchronous tools, rather
// than on the registry's pool of threads (a hop there and back: two thread wake-ups a call).
#[tool(public, read_only, non_blocking)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Add two numbers (on the registry's pool of threads).
// A synchronous tool as most are written, without `non_blocking`: its first call runs on the
// registry's pool, and once shown quick there it runs on the connection's task too, as long as
// it stays quick (registry-core's execute/inline.rs; before that, every call hopped to the pool
// and back). `--tool add_on_pool` has the clients call it.
#[tool(public, read_only)]
fn add_on_pool(a: i64, b: i64) -> i64 {
    a + b
}

/// The tool the clients call on the registry's server (`--tool`; `add` unless given). The
/// bare server's `add` answers whatever the name.
static TOOL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn tool_name() -> &'static str {
    TOOL.get().map_or("add", String::as_str)
}

/// Set in the registry server's environment by `--composed`: it serves the registry's tools
/// composed with an application's handler ([`Docs`]), by `HttpServer::bind_with_handler`.
const COMPOSED: &str = "BENCH_MCP_COMPOSED";

/// `--composed`'s application: one resource.
#[derive(Clone)]
struct Docs;

impl rmcp::ServerHandler for Docs {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        let capabilities = rmcp::model::ServerCapabilities::builder()
            .enable_resources()
            .build();
        rmcp::model::ServerConfig::new(capabilities)
    }

    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, rmcp::ErrorData> {
        let guide = rmcp::model::Resource::new("docs://guide", "guide");
        Ok(rmcp::model::ListResourcesResult::with_all_items(vec![
            guide,
        ]))
    }
}

/// How the registry server authenticates its clients. Everything that depends on the mode
/// is in this type's `impl`: the credentials the clients get and the arguments the server is
/// started with ([`AuthMode::credentials`]), and the server's configuration from those
/// arguments ([`AuthMode::http_config`]). The comparison runs every mode of `--auth`, each
/// against the same bare server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AuthMode {
    /// One static bearer token per client, from a tokens file (`Tokens::load`).
    Static,
    /// Each client a JWT access token (RS256, its own `sub`) as its bearer token; the server
    /// an OAuth resource server (`HttpConfig::with_oauth`) given the issuer's key as a JWKS
    /// file. (New modes go here, then in `ALL`, `name`, `credentials` and `http_config`
    /// below, and nowhere else.)
    Jwt,
    /// The same, with step-up on (`ServerOptions::with_step_up_scopes`): every `tools/call`
    /// body is read again to see whether it needs more scopes.
    JwtStepUp,
}

const ISSUER: &str = "https://idp.bench/";
const RESOURCE: &str = "http://mcp.bench/mcp";

impl AuthMode {
    const ALL: [AuthMode; 3] = [AuthMode::Static, AuthMode::Jwt, AuthMode::JwtStepUp];

    fn name(self) -> &'static str {
        match self {
            AuthMode::Static => "static",
            AuthMode::Jwt => "jwt",
            AuthMode::JwtStepUp => "jwt-step-up",
        }
    }

    fn parse(name: &str) -> AuthMode {
        AuthMode::ALL
            .into_iter()
            .find(|mode| mode.name() == name)
            .unwrap_or_else(|| panic!("unknown auth mode {name}"))
    }

    /// Client side, before the server starts: the credentials of `clients` clients, and the
    /// arguments that make the server (`bench-mcp serve MODE ARGS…`) accept them.
    fn credentials(self, clients: usize) -> Credentials {
        match self {
            AuthMode::Static => {
                let file = std::env::temp_dir().join(format!(
                    "bench-mcp-tokens-{}-{}.json",
                    std::process::id(),
                    NEXT_FILE.fetch_add(1, Ordering::Relaxed)
                ));
                let tokens: Vec<String> = (0..clients.max(1))
                    .map(|i| format!("bench-client-token-{i:04}"))
                    .collect();
                let entries: Vec<Value> = tokens
                    .iter()
                    .enumerate()
                    .map(|(i, token)| json!({"id": format!("client-{i}"), "token": token, "tenant": "bench"}))
                    .collect();
                std::fs::write(&file, json!({"tokens": entries}).to_string()).unwrap();
                Credentials {
                    server_args: vec![file.display().to_string()],
                    bearer: tokens,
                    files: vec![file],
                }
            }
            AuthMode::Jwt | AuthMode::JwtStepUp => {
                use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk};
                let pem = std::fs::read(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../tests/tests/oauth/rsa-a.pem"
                ))
                .unwrap();
                let key = EncodingKey::from_rsa_pem(&pem).unwrap();
                let mut public = jwk::Jwk::from_encoding_key(&key, Algorithm::RS256).unwrap();
                public.common.key_id = Some("bench".into());
                let file = std::env::temp_dir().join(format!(
                    "bench-mcp-jwks-{}-{}.json",
                    std::process::id(),
                    NEXT_FILE.fetch_add(1, Ordering::Relaxed)
                ));
                let set = jwk::JwkSet { keys: vec![public] };
                std::fs::write(&file, serde_json::to_string(&set).unwrap()).unwrap();
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs();
                let mut header = Header::new(Algorithm::RS256);
                header.kid = Some("bench".into());
                let tokens = (0..clients.max(1))
                    .map(|i| {
                        let claims = json!({
                            "iss": ISSUER, "aud": RESOURCE, "sub": format!("client-{i}"),
                            "tenant": "bench", "scope": "", "azp": "bench",
                            "iat": now, "exp": now + 3600,
                        });
                        jsonwebtoken::encode(&header, &claims, &key).unwrap()
                    })
                    .collect();
                Credentials {
                    server_args: vec![file.display().to_string()],
                    bearer: tokens,
                    files: vec![file],
                }
            }
        }
    }

    /// Server side: the configuration of the registry's HTTP server, from the arguments
    /// [`credentials`](Self::credentials) gave.
    fn http_config(self, args: &[String]) -> HttpConfig {
        match self {
            AuthMode::Static => HttpConfig::new(Tokens::load(&args[0]).unwrap()),
            AuthMode::Jwt | AuthMode::JwtStepUp => HttpConfig::new(Tokens::new())
                .with_oauth(OAuth::new(RESOURCE, ISSUER).with_jwks(Jwks::file(&args[0])))
                .with_options(
                    ServerOptions::default().with_step_up_scopes(self == AuthMode::JwtStepUp),
                ),
        }
    }
}

static NEXT_FILE: AtomicUsize = AtomicUsize::new(0);

/// What the clients of one server send, and what its child process is started with.
#[derive(Default)]
struct Credentials {
    server_args: Vec<String>,
    /// Client `i` sends `Authorization: Bearer {bearer[i % len]}`; none if empty.
    bearer: Vec<String>,
    /// Removed when the server is dropped.
    files: Vec<PathBuf>,
}

/// A server under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Registry(AuthMode),
    Bare,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Registry(mode) => write!(f, "registry ({})", mode.name()),
            Target::Bare => write!(f, "bare rmcp"),
        }
    }
}

/// A server under test, running as a child process of this one (killed when dropped).
struct Server {
    target: Target,
    child: tokio::process::Child,
    url: String,
    /// The plain route's URL (the registry's server only).
    baseline: Option<String>,
    credentials: Credentials,
}

impl Server {
    async fn start(target: Target, clients: usize) -> Server {
        Server::start_in(target, clients, None).await
    }

    /// [`start`](Self::start), the server's process run by valgrind's callgrind, writing its
    /// counts to `counts` (`--callgrind-out-file`), when given.
    async fn start_in(target: Target, clients: usize, counts: Option<&str>) -> Server {
        let exe = std::env::current_exe().unwrap();
        let mut command = match counts {
            None => tokio::process::Command::new(exe),
            Some(counts) => {
                let mut command = tokio::process::Command::new("valgrind");
                command
                    .arg("--tool=callgrind")
                    .arg(format!("--callgrind-out-file={counts}"))
                    .arg("--quiet")
                    .arg(exe);
                command
            }
        };
        let credentials = match target {
            Target::Registry(mode) => {
                let credentials = mode.credentials(clients);
                command
                    .arg("serve")
                    .arg(mode.name())
                    .args(&credentials.server_args);
                credentials
            }
            Target::Bare => {
                command.arg("serve-bare");
                Credentials::default()
            }
        };
        let mut child = command
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let url = lines.next_line().await.unwrap().expect("the server's URL");
        let baseline = match target {
            Target::Registry(_) => lines.next_line().await.unwrap(),
            Target::Bare => None,
        };
        Server {
            target,
            child,
            url,
            baseline,
            credentials,
        }
    }

    /// The bearer token of client `i`, if the server asks for one.
    fn bearer(&self, i: usize) -> Option<String> {
        let tokens = &self.credentials.bearer;
        (!tokens.is_empty()).then(|| tokens[i % tokens.len()].clone())
    }

    /// The CPU time (user and system) the server's process has used so far.
    fn cpu_time(&self) -> Duration {
        let pid = self.child.id().expect("the server is running");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        // After the command's name in parentheses: state is field 3, utime 14, stime 15.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        // The kernel's clock ticks: 100 per second on Linux (USER_HZ).
        Duration::from_millis(ticks * 10)
    }

    /// The resident set size of the server's process, in KiB.
    fn rss_kib(&self) -> u64 {
        let pid = self.child.id().expect("the server is running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        for file in &self.credentials.files {
            let _ = std::fs::remove_file(file);
        }
    }
}

struct Options {
    clients: usize,
    seconds: u64,
    warmup: u64,
    rounds: usize,
    calls: usize,
    sessions: usize,
    kinds: Vec<Kind>,
    modes: Vec<AuthMode>,
    only_compare: bool,
    protocols_only: bool,
    /// `--instructions N`: count each server's instructions per call instead (callgrind).
    instructions: Option<usize>,
}

impl Options {
    fn parse(args: &[String]) -> Options {
        let mut options = Options {
            clients: 16,
            seconds: 3,
            warmup: 1,
            rounds: 7,
            calls: 5_000,
            sessions: 10_000,
            kinds: vec![Kind::Raw, Kind::Rmcp],
            modes: AuthMode::ALL.to_vec(),
            only_compare: false,
            protocols_only: false,
            instructions: None,
        };
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            if arg == "--only-compare" {
                options.only_compare = true;
                continue;
            }
            if arg == "--protocols-only" {
                options.protocols_only = true;
                continue;
            }
            if arg == "--composed" {
                // The registry server's processes inherit it (Server::start_in).
                // SAFETY: set before the runtime and any other thread of this process start.
                unsafe { std::env::set_var(COMPOSED, "1") };
                continue;
            }
            let value = rest.next().unwrap_or_else(|| panic!("a value after {arg}"));
            let number = || -> usize {
                value
                    .parse()
                    .unwrap_or_else(|_| panic!("a number after {arg}"))
            };
            match arg.as_str() {
                "--clients" => options.clients = number(),
                "--seconds" => options.seconds = number() as u64,
                "--warmup" => options.warmup = number() as u64,
                "--rounds" => options.rounds = number().max(1),
                "--calls" => options.calls = number(),
                "--sessions" => options.sessions = number(),
                "--instructions" => options.instructions = Some(number().max(1)),
                "--client" => {
                    options.kinds = match value.as_str() {
                        "raw" => vec![Kind::Raw],
                        "rmcp" => vec![Kind::Rmcp],
                        "both" => vec![Kind::Raw, Kind::Rmcp],
                        other => panic!("--client raw|rmcp|both, not {other}"),
                    }
                }
                "--auth" => options.modes = value.split(',').map(AuthMode::parse).collect(),
                "--tool" => {
                    assert!(
                        ["add", "add_on_pool"].contains(&value.as_str()),
                        "--tool add|add_on_pool, not {value}"
                    );
                    let _ = TOOL.set(value.clone());
                }
                other => panic!("unknown option {other}"),
            }
        }
        options
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") => serve(AuthMode::parse(&args[2]), &args[3..]),
        Some("serve-bare") => bare::serve(),
        _ => {
            let options = Options::parse(&args[1..]);
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(bench(options));
        }
    }
}

/// The registry's server: the registry of this program (one tool, `add`) over HTTP as
/// `HttpServer` serves it (the whole edge: its accept loop with timeouts and connection limit,
/// Origin, authentication as `mode` says with `args` from [`AuthMode::credentials`], the rate
/// per principal, body checks, session ownership), on a free port; and, on a second port, a
/// plain route answering a fixed JSON-RPC result: the cost of HTTP alone, for comparison. It
/// prints the MCP URL, then the plain route's.
///
/// The edge's limits are lifted far above what the benchmark sends (its checks still run on
/// every request): the default rate of 50 requests per second per principal would refuse
/// most of a benchmark's calls. The session caps stay at their defaults, which the memory
/// test meets.
fn serve(mode: AuthMode, args: &[String]) {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let registry = Registry::from_inventory().unwrap();
        let limits = EdgeLimits::default()
            .with_requests_per_second(10_000_000)
            .with_burst(10_000_000)
            // Many clients of one token on one address: the caps per IP, on unauthenticated
            // connections and on one principal's streams are lifted too.
            .with_max_connections_per_ip(1_000_000)
            .with_max_unauthenticated_connections(1_000_000)
            .with_max_streams_per_principal(1_000_000);
        let config = mode
            .http_config(args)
            .with_addr(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .with_limits(limits);
        let server = if std::env::var_os(COMPOSED).is_some() {
            HttpServer::bind_with_handler(registry, config, Docs).await
        } else {
            HttpServer::bind(registry, config).await
        }
        .unwrap();
        let baseline = axum::Router::new().route(
            "/baseline",
            axum::routing::post(|body: axum::body::Bytes| async move {
                let _: Value = serde_json::from_slice(&body).unwrap();
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"3"}],"isError":false}}"#
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", server.url());
        println!("http://{}/baseline", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        let listener = listener.tap_io(|tcp| tcp.set_nodelay(true).unwrap());
        tokio::spawn(async move { axum::serve(listener, baseline).await.unwrap() });
        server.serve().await.unwrap();
    });
}

/// The sizes of the futures of a `tools/call` in the two servers: the handler's `call_tool`,
/// and rmcp's `handle_request` around it, which rmcp's service spawns as a task per request
/// (moved into the task, so its size is copied on every call).
fn future_sizes() -> String {
    use rmcp::model::ClientRequest;
    use rmcp::service::{RequestContext, RoleServer};
    use rmcp::{ServerHandler, Service};

    fn size<S: 'static, A, B, F, Fut>(_make: &F) -> usize
    where
        F: Fn(&'static S, A, B) -> Fut,
    {
        std::mem::size_of::<Fut>()
    }
    type Context = RequestContext<RoleServer>;
    let registry_call = |s: &'static registry_mcp::RegistryServer,
                         r: CallToolRequestParams,
                         c: Context| s.call_tool(r, c);
    let registry_request = |s: &'static registry_mcp::RegistryServer,
                            r: ClientRequest,
                            c: Context| s.handle_request(r, c);
    let bare_call =
        |s: &'static bare::Bare, r: CallToolRequestParams, c: Context| s.call_tool(r, c);
    let bare_request =
        |s: &'static bare::Bare, r: ClientRequest, c: Context| s.handle_request(r, c);
    format!(
        "futures of a tools/call: registry call_tool {} bytes, handle_request {} bytes; bare rmcp call_tool {} bytes, handle_request {} bytes",
        size(&registry_call),
        size(&registry_request),
        size(&bare_call),
        size(&bare_request),
    )
}

async fn bench(options: Options) {
    if let Some(calls) = options.instructions {
        return instructions(&options, calls).await;
    }
    println!(
        "machine: {} cores; {} clients; {} rounds of {} s warm-up + {} s; {} sessions",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        options.clients,
        options.rounds,
        options.warmup,
        options.seconds,
        options.sessions,
    );
    println!("{}", future_sizes());
    let mut targets: Vec<Target> = options.modes.iter().map(|&m| Target::Registry(m)).collect();
    targets.push(Target::Bare);

    let mut servers = Vec::new();
    for &target in &targets {
        servers.push(Server::start(target, options.clients).await);
    }
    for server in &servers {
        check_answers(server).await;
    }
    if options.protocols_only {
        compare_protocols(&servers[0], &options).await;
        return;
    }
    if !options.only_compare {
        sequential(&servers[0], options.calls).await;
    }
    for &kind in &options.kinds {
        compare(&servers, kind, &options).await;
    }
    compare_protocols(&servers[0], &options).await;
    drop(servers);

    if options.sessions > 0 {
        println!();
        println!(
            "sessions: {} opened and abandoned, 4 at a time, for at most 60 s, on a fresh server",
            options.sessions
        );
        println!(
            "| server | RSS before | RSS after | per session | opened | refused | failed | time |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
        for &target in &targets {
            let server = Server::start(target, 1).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            let before = server.rss_kib();
            let sessions = open_sessions(&server, options.sessions, Duration::from_secs(60)).await;
            let after = server.rss_kib();
            let per_session =
                (after.saturating_sub(before) as f64 * 1024.0) / sessions.opened.max(1) as f64;
            println!(
                "| {target} | {:.1} MiB | {:.1} MiB | {:.1} KiB | {} | {} | {} | {:.1} s |",
                before as f64 / 1024.0,
                after as f64 / 1024.0,
                per_session / 1024.0,
                sessions.opened,
                sessions.refused,
                sessions.failed,
                sessions.elapsed.as_secs_f64(),
            );
            if let Some(status) = sessions.first_refusal {
                println!("  (first refusal: {status})");
            }
        }
    }
}

/// `--instructions N`: each server's process run by valgrind's callgrind, and one minimal
/// client calling it, one call at a time: 200 calls to warm up, a dump of the counts
/// (`callgrind_control --dump`, which starts them again from zero), `N` calls, a dump. The
/// second dump is what `N` calls cost the server, every thread of it: no noise, no start-up,
/// and, unlike CPU time, no other process in it. Counts are not time (a cache miss, a system
/// call's time in the kernel, count as one instruction, or none), but they show where two
/// servers' work differs, function by function (`callgrind_annotate` of the dump).
async fn instructions(options: &Options, calls: usize) {
    for tool in ["valgrind", "callgrind_control"] {
        let found = std::process::Command::new(tool).arg("--version").output();
        if found.is_err() {
            eprintln!(
                "--instructions needs {tool}, which is not installed (Debian: apt-get install valgrind)"
            );
            std::process::exit(2);
        }
    }
    let directory = std::env::temp_dir().join(format!("bench-mcp-counts-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let mut targets: Vec<Target> = options.modes.iter().map(|&m| Target::Registry(m)).collect();
    targets.push(Target::Bare);
    println!(
        "instructions per tools/call, server side, {calls} calls by one raw client (callgrind)"
    );
    println!("| server | instructions per call | ratio to bare | dump |");
    println!("| --- | ---: | ---: | --- |");
    let mut counted = Vec::new();
    for target in targets {
        let name = target.to_string().replace([' ', '(', ')'], "");
        let counts = directory.join(format!("{name}.out"));
        let server = Server::start_in(target, 1, Some(counts.to_str().unwrap())).await;
        let pid = server.child.id().expect("the server is running");
        let raw = Raw::connect(&server.url, server.bearer(0)).await;
        for id in 0..200 {
            raw.call(id).await;
        }
        dump(pid, &counts);
        for id in 0..calls {
            raw.call(1_000 + id as u64).await;
        }
        let measured = dump(pid, &counts);
        raw.close().await;
        let total = totals(&measured);
        counted.push((target, total as f64 / calls as f64, measured));
    }
    let bare = counted.last().map_or(1.0, |(_, per_call, _)| *per_call);
    for (target, per_call, measured) in counted {
        println!(
            "| {target} | {per_call:.0} | {:.2}x | {} |",
            per_call / bare,
            measured.display()
        );
    }
}

/// Asks callgrind in process `pid` to write its counts so far (and start again from zero);
/// the file it wrote (the newest `COUNTS.N` beside `counts`).
fn dump(pid: u32, counts: &std::path::Path) -> std::path::PathBuf {
    let done = std::process::Command::new("callgrind_control")
        .arg("--dump")
        .arg(pid.to_string())
        .output()
        .expect("callgrind_control (valgrind) is installed");
    assert!(done.status.success(), "callgrind_control: {done:?}");
    let ours = format!("{}.", counts.file_name().unwrap().to_string_lossy());
    std::fs::read_dir(counts.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&ours))
        .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
        .max()
        .expect("callgrind wrote a dump")
        .1
}

/// The instructions a callgrind dump counts (its `totals:` or `summary:` line).
fn totals(dump: &std::path::Path) -> u64 {
    let text = std::fs::read_to_string(dump).unwrap();
    text.lines()
        .find_map(|line| {
            (line
                .strip_prefix("totals:")
                .or_else(|| line.strip_prefix("summary:")))
            .and_then(|count| count.trim().parse().ok())
        })
        .unwrap_or_else(|| panic!("no totals in {}", dump.display()))
}

/// Checks that `server` answers `add` with the result the others give.
async fn check_answers(server: &Server) {
    let raw = Raw::connect(&server.url, server.bearer(0)).await;
    let text = raw.call_text(7).await;
    let expected = r#"{"content":[{"type":"text","text":"3"}],"isError":false}"#;
    assert!(text.contains(expected), "{}: {text}", server.target);
    raw.close().await;
    let client = connect(&server.url, server.bearer(0)).await;
    let version = client
        .peer_info()
        .map(|info| info.protocol_version.to_string())
        .unwrap_or_default();
    call(&client).await;
    client.cancel().await.unwrap();
    println!(
        "{}: {}; rmcp's client negotiates protocol {version}",
        server.target, server.url
    );
}

/// One client at a time against `server`: in-process, rmcp's client, the minimal client, and
/// the minimal client on the plain route.
async fn sequential(server: &Server, calls: usize) {
    let in_process = in_process().await;
    println!("in-process   run.call: median {}", micros(in_process));

    let client = connect(&server.url, server.bearer(0)).await;
    for _ in 0..500 {
        call(&client).await;
    }
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        call(&client).await;
        latencies.push(started.elapsed());
    }
    client.cancel().await.unwrap();
    let sequential = Stats::of(latencies);
    println!("sequential   HTTP, 1 rmcp client: {sequential}");
    println!(
        "added latency (HTTP median - in-process median): {}",
        micros(sequential.p50.saturating_sub(in_process))
    );
    let raw = Raw::connect(&server.url, server.bearer(0)).await;
    for id in 0..500 {
        raw.call(id).await;
    }
    let mut latencies = Vec::with_capacity(calls);
    for id in 0..calls {
        let started = Instant::now();
        raw.call(1_000 + id as u64).await;
        latencies.push(started.elapsed());
    }
    let sequential_raw = Stats::of(latencies);
    println!("sequential   HTTP, 1 raw client:  {sequential_raw}");
    let baseline = server
        .baseline
        .clone()
        .expect("the registry's server has a plain route");
    let mut latencies = Vec::with_capacity(calls);
    for i in 0..calls + 500 {
        let started = Instant::now();
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}});
        Raw::post(
            &raw.http,
            &baseline,
            raw.bearer.as_deref(),
            None,
            body.to_string(),
        )
        .await
        .text()
        .await
        .unwrap();
        if i >= 500 {
            latencies.push(started.elapsed());
        }
    }
    raw.close().await;
    println!(
        "added latency (raw HTTP median - in-process median): {}",
        micros(sequential_raw.p50.saturating_sub(in_process))
    );
    println!(
        "sequential   HTTP, 1 raw client, a plain axum route (no MCP): {}",
        Stats::of(latencies)
    );
}

/// The same load against every server, interleaved by rounds; a table of the medians over
/// rounds, with their range and the ratio to the last server (the bare one).
async fn compare(servers: &[Server], kind: Kind, options: &Options) {
    let duration = Duration::from_secs(options.seconds);
    let warmup = Duration::from_secs(options.warmup);
    println!();
    println!(
        "comparison: {} {kind} clients, {} rounds of {} s warm-up + {} s, servers interleaved",
        options.clients, options.rounds, options.warmup, options.seconds
    );
    let mut rounds: Vec<Vec<Round>> = servers.iter().map(|_| Vec::new()).collect();
    for round in 1..=options.rounds {
        // The servers in turn, in the reverse order every other round (registry, bare; bare,
        // registry; …), so that neither is always the one measured right after the other.
        let mut order: Vec<usize> = (0..servers.len()).collect();
        if round % 2 == 0 {
            order.reverse();
        }
        for index in order {
            let server = &servers[index];
            let result = concurrent(server, options.clients, warmup, duration, kind).await;
            println!(
                "round {round} {:<18} {:>6.0} calls/s; {}",
                server.target.to_string(),
                result.rps,
                result.stats
            );
            rounds[index].push(result);
        }
    }
    let summaries: Vec<Summary> = rounds.iter().map(|r| Summary::of(r)).collect();
    let bare = summaries.last().expect("the bare server");
    println!();
    println!(
        "| server ({kind} clients) | calls/s | p50 ms | p99 ms | ratio to bare: calls/s | p50 | p99 |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (server, summary) in servers.iter().zip(&summaries) {
        let [rps, p50, p99] = [summary.rps, summary.p50.map(ms), summary.p99.map(ms)];
        println!(
            "| {} | {:.0} ({:.0}–{:.0}) | {:.2} ({:.2}–{:.2}) | {:.2} ({:.2}–{:.2}) | {:.2} | {:.2} | {:.2} |",
            server.target,
            rps[1],
            rps[0],
            rps[2],
            p50[1],
            p50[0],
            p50[2],
            p99[1],
            p99[0],
            p99[2],
            rps[1] / bare.rps[1],
            p50[1] / ms(bare.p50[1]),
            p99[1] / ms(bare.p99[1]),
        );
    }
    println!("(medians over rounds, with their range; ratios of the medians)");
    // What each call costs the server, whatever share of the cores it got: the least
    // sensitive figure to a shared machine.
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for (server, summary) in servers.iter().zip(&summaries) {
        println!(
            "{}: server CPU per call {:.1} µs ({:.1}–{:.1}), {:.2} times bare's",
            server.target,
            us(summary.cpu[1]),
            us(summary.cpu[0]),
            us(summary.cpu[2]),
            us(summary.cpu[1]) / us(bare.cpu[1]),
        );
    }
    // The ratio within each round, where both servers ran a few seconds apart under the same
    // load of the machine: less sensitive to the machine's drift than the ratio of medians.
    let bare = rounds.last().expect("the bare server");
    for (server, results) in servers.iter().zip(&rounds).take(servers.len() - 1) {
        let paired = |figure: fn(&Round) -> f64| {
            spread(
                results
                    .iter()
                    .zip(bare)
                    .map(|(r, b)| figure(r) / figure(b))
                    .collect(),
            )
        };
        let [rps, p50, p99] = [
            paired(|r| r.rps),
            paired(|r| r.stats.p50.as_secs_f64()),
            paired(|r| r.stats.p99.as_secs_f64()),
        ];
        println!(
            "{} / bare, round by round: calls/s {:.2} ({:.2}–{:.2}), p50 {:.2} ({:.2}–{:.2}), p99 {:.2} ({:.2}–{:.2})",
            server.target, rps[1], rps[0], rps[2], p50[1], p50[0], p50[2], p99[1], p99[0], p99[2],
        );
    }
}

/// `tools/call` on one registry server with rmcp's clients over both protocol revisions,
/// interleaved round by round: 2025-11-25 (a session, `initialize` first) against 2026-07-28
/// (stateless: `server/discover`, then every request self-contained, with its `_meta`).
async fn compare_protocols(server: &Server, options: &Options) {
    let duration = Duration::from_secs(options.seconds);
    let warmup = Duration::from_secs(options.warmup);
    let kinds = [Kind::Rmcp, Kind::RmcpStateless];
    println!();
    println!(
        "protocols: {} rmcp clients on {}, {} rounds of {} s warm-up + {} s, revisions interleaved",
        options.clients, server.target, options.rounds, options.warmup, options.seconds
    );
    let mut rounds: Vec<Vec<Round>> = kinds.iter().map(|_| Vec::new()).collect();
    for round in 1..=options.rounds {
        let mut order = [0, 1];
        if round % 2 == 0 {
            order.reverse();
        }
        for index in order {
            let result = concurrent(server, options.clients, warmup, duration, kinds[index]).await;
            println!(
                "round {round} {:<28} {:>6.0} calls/s; {}",
                kinds[index].to_string(),
                result.rps,
                result.stats
            );
            rounds[index].push(result);
        }
    }
    let summaries: Vec<Summary> = rounds.iter().map(|r| Summary::of(r)).collect();
    let sessions = &summaries[0];
    println!();
    println!(
        "| {} | calls/s | p50 ms | p99 ms | server CPU per call | ratio to sessions: calls/s | p50 | p99 | CPU per call |",
        server.target
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for (kind, summary) in kinds.iter().zip(&summaries) {
        println!(
            "| {kind} | {:.0} ({:.0}–{:.0}) | {:.2} | {:.2} | {:.1} µs | {:.2} | {:.2} | {:.2} | {:.2} |",
            summary.rps[1],
            summary.rps[0],
            summary.rps[2],
            ms(summary.p50[1]),
            ms(summary.p99[1]),
            us(summary.cpu[1]),
            summary.rps[1] / sessions.rps[1],
            ms(summary.p50[1]) / ms(sessions.p50[1]),
            ms(summary.p99[1]) / ms(sessions.p99[1]),
            us(summary.cpu[1]) / us(sessions.cpu[1]),
        );
    }
    let paired = spread(
        rounds[1]
            .iter()
            .zip(&rounds[0])
            .map(|(stateless, session)| stateless.rps / session.rps)
            .collect(),
    );
    println!(
        "(medians over rounds, with their range; ratios of the medians) stateless / sessions, round by round: calls/s {:.2} ({:.2}–{:.2})",
        paired[1], paired[0], paired[2]
    );
}

/// The minimum, median and maximum of `values`.
fn spread<T: Copy + PartialOrd>(mut values: Vec<T>) -> [T; 3] {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    [
        values[0],
        values[values.len() / 2],
        values[values.len() - 1],
    ]
}

/// One round against one server.
struct Round {
    rps: f64,
    /// The server process's CPU time (user and system) per call measured.
    cpu_per_call: Duration,
    stats: Stats,
}

/// Each figure over rounds: minimum, median, maximum.
struct Summary {
    rps: [f64; 3],
    cpu: [Duration; 3],
    p50: [Duration; 3],
    p99: [Duration; 3],
}

impl Summary {
    fn of(rounds: &[Round]) -> Summary {
        Summary {
            rps: spread(rounds.iter().map(|r| r.rps).collect()),
            cpu: spread(rounds.iter().map(|r| r.cpu_per_call).collect()),
            p50: spread(rounds.iter().map(|r| r.stats.p50).collect()),
            p99: spread(rounds.iter().map(|r| r.stats.p99).collect()),
        }
    }
}

async fn in_process() -> Duration {
    let registry = Registry::from_inventory().unwrap();
    let run = registry.open_run("bench", &Subject::new("bench"));
    let mut batches = Vec::new();
    for _ in 0..31 {
        let started = Instant::now();
        for i in 0..2_000 {
            let observation = run
                .call(ToolCall::new(
                    format!("{i}"),
                    "add",
                    json!({"a": 1, "b": 2}),
                ))
                .await;
            assert!(!observation.is_error());
        }
        batches.push(started.elapsed() / 2_000);
    }
    batches.sort();
    batches[batches.len() / 2]
}

type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

async fn connect(url: &str, bearer: Option<String>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

/// A 2026-07-28 client: `server/discover`, then stateless requests.
async fn connect_stateless(url: &str, bearer: Option<String>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    ().serve_with_lifecycle(
        StreamableHttpClientTransport::from_config(config),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .unwrap()
}

async fn call(client: &Client) {
    let arguments = json!({"a": 1, "b": 2}).as_object().unwrap().clone();
    let result = client
        .call_tool(CallToolRequestParams::new(tool_name()).with_arguments(arguments))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
}

/// The client of the concurrent load.
#[derive(Clone, Copy)]
enum Kind {
    /// rmcp's client (`call_tool`), in a 2025-11-25 session.
    Rmcp,
    /// rmcp's client over 2026-07-28, stateless.
    RmcpStateless,
    /// The minimal client, [`Raw`].
    Raw,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Rmcp => "rmcp",
            Kind::RmcpStateless => "rmcp (2026-07-28, stateless)",
            Kind::Raw => "raw",
        })
    }
}

/// `clients` clients of `server` calling in a loop for `duration` after `warmup`: calls per
/// second and latencies. The clients connect before, and close their sessions after.
async fn concurrent(
    server: &Server,
    clients: usize,
    warmup: Duration,
    duration: Duration,
    kind: Kind,
) -> Round {
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for i in 0..clients {
        let (url, bearer) = (server.url.clone(), server.bearer(i));
        let (measuring, stop) = (measuring.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            match kind {
                Kind::Rmcp | Kind::RmcpStateless => {
                    let client = match kind {
                        Kind::RmcpStateless => connect_stateless(&url, bearer).await,
                        _ => connect(&url, bearer).await,
                    };
                    while !stop.load(Ordering::Relaxed) {
                        let started = Instant::now();
                        call(&client).await;
                        if measuring.load(Ordering::Relaxed) {
                            latencies.push(started.elapsed());
                        }
                    }
                    client.cancel().await.unwrap();
                }
                Kind::Raw => {
                    let client = Raw::connect(&url, bearer).await;
                    let mut id = 1;
                    while !stop.load(Ordering::Relaxed) {
                        id += 1;
                        let started = Instant::now();
                        client.call(id).await;
                        if measuring.load(Ordering::Relaxed) {
                            latencies.push(started.elapsed());
                        }
                    }
                    client.close().await;
                }
            }
            latencies
        }));
    }
    tokio::time::sleep(warmup).await;
    measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let cpu_before = server.cpu_time();
    tokio::time::sleep(duration).await;
    let cpu = server.cpu_time().saturating_sub(cpu_before);
    measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    Round {
        rps: all.len() as f64 / elapsed.as_secs_f64(),
        // The calls measured were made in `elapsed`, the CPU time read over `duration`: close
        // enough at these rates (thousands of calls a second, a 10 ms clock tick).
        cpu_per_call: cpu / u32::try_from(all.len().max(1)).unwrap_or(u32::MAX),
        stats: Stats::of(all),
    }
}

/// How opening sessions went.
struct Sessions {
    opened: usize,
    refused: usize,
    failed: usize,
    first_refusal: Option<reqwest::StatusCode>,
    elapsed: Duration,
}

/// Opens up to `count` sessions on `server` and abandons them, 4 at a time, stopping after
/// `limit`: each an `initialize` without a session id, then `notifications/initialized` in
/// the session the answer names. A non-2xx answer to either counts as refused, no answer
/// (a connection error) as failed.
async fn open_sessions(server: &Server, count: usize, limit: Duration) -> Sessions {
    const CONCURRENCY: usize = 4;
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..CONCURRENCY {
        let (url, bearer, next) = (server.url.clone(), server.bearer(worker), next.clone());
        tasks.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut sessions = Sessions {
                opened: 0,
                refused: 0,
                failed: 0,
                first_refusal: None,
                elapsed: Duration::ZERO,
            };
            while next.fetch_add(1, Ordering::Relaxed) < count && started.elapsed() < limit {
                match Raw::open(&http, &url, bearer.as_deref()).await {
                    Ok(Ok(_session)) => sessions.opened += 1,
                    Ok(Err(status)) => {
                        sessions.refused += 1;
                        sessions.first_refusal.get_or_insert(status);
                    }
                    Err(_) => sessions.failed += 1,
                }
            }
            sessions
        }));
    }
    let mut all = Sessions {
        opened: 0,
        refused: 0,
        failed: 0,
        first_refusal: None,
        elapsed: Duration::ZERO,
    };
    for task in tasks {
        let sessions = task.await.unwrap();
        all.opened += sessions.opened;
        all.refused += sessions.refused;
        all.failed += sessions.failed;
        all.first_refusal = all.first_refusal.or(sessions.first_refusal);
    }
    all.elapsed = started.elapsed();
    all
}

/// A minimal MCP client: initialize, then one POST per call, the answer read whole.
struct Raw {
    http: reqwest::Client,
    url: String,
    bearer: Option<String>,
    session: String,
}

impl Raw {
    async fn connect(url: &str, bearer: Option<String>) -> Raw {
        let http = reqwest::Client::new();
        let session = Raw::open(&http, url, bearer.as_deref())
            .await
            .unwrap()
            .unwrap();
        Raw {
            http,
            url: url.to_owned(),
            bearer,
            session,
        }
    }

    /// Opens a session: `initialize`, then `notifications/initialized`. Its id; or the
    /// status of a non-2xx answer; or the error of a request that got no answer.
    async fn open(
        http: &reqwest::Client,
        url: &str,
        bearer: Option<&str>,
    ) -> Result<Result<String, reqwest::StatusCode>, reqwest::Error> {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
        let response = Raw::request(http, url, bearer, None, initialize.to_string()).await?;
        let status = response.status();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        response.bytes().await?;
        let Some(session) = session.filter(|_| status.is_success()) else {
            return Ok(Err(status));
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response =
            Raw::request(http, url, bearer, Some(&session), initialized.to_string()).await?;
        let status = response.status();
        response.bytes().await?;
        Ok(if status.is_success() {
            Ok(session)
        } else {
            Err(status)
        })
    }

    async fn request(
        http: &reqwest::Client,
        url: &str,
        bearer: Option<&str>,
        session: Option<&str>,
        body: String,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let mut request = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(token) = bearer {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request.send().await
    }

    async fn post(
        http: &reqwest::Client,
        url: &str,
        bearer: Option<&str>,
        session: Option<&str>,
        body: String,
    ) -> reqwest::Response {
        let response = Raw::request(http, url, bearer, session, body)
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        response
    }

    /// The text of the answer to `tools/call` of `add(1, 2)`.
    async fn call_text(&self, id: u64) -> String {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool_name(), "arguments": {"a": 1, "b": 2}}});
        Raw::post(
            &self.http,
            &self.url,
            self.bearer.as_deref(),
            Some(&self.session),
            body.to_string(),
        )
        .await
        .text()
        .await
        .unwrap()
    }

    async fn call(&self, id: u64) {
        let text = self.call_text(id).await;
        assert!(text.contains(r#""isError":false"#), "{text}");
    }

    /// Ends the session (`DELETE`).
    async fn close(self) {
        let mut request = self
            .http
            .delete(&self.url)
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(token) = &self.bearer {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let response = request.send().await.unwrap();
        assert!(response.status().is_success(), "{}", response.status());
    }
}

struct Stats {
    p50: Duration,
    p90: Duration,
    p99: Duration,
    mean: Duration,
}

impl Stats {
    fn of(mut latencies: Vec<Duration>) -> Stats {
        assert!(!latencies.is_empty());
        latencies.sort();
        let at =
            |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
        Stats {
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            mean: latencies.iter().sum::<Duration>() / latencies.len() as u32,
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "latency median {}, p90 {}, p99 {}, mean {}",
            micros(self.p50),
            micros(self.p90),
            micros(self.p99),
            micros(self.mean)
        )
    }
}

fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}
