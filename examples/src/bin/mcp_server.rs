//! An MCP server for the example tools: over stdio by default (one client, the process that
//! started this one), over streamable HTTP with `--http` (many clients, each with a bearer
//! token standing for a subject).
//!
//! ```sh
//! # stdio, acting for one subject (flags, or MCP_TENANT / MCP_SCOPES / MCP_READ_ONLY / MCP_AGENT):
//! cargo run -p registry-examples --bin mcp_server -- --tenant acme --scopes build:read --read-only
//! # HTTP on 127.0.0.1:8750, with the bundled development tokens:
//! cargo run -p registry-examples --bin mcp_server -- --http --tokens examples/mcp-tokens.json
//! # stdio, with deferred loading (`search_tools`) ranked by a sentence model run in-process:
//! cargo run -p registry-examples --bin mcp_server -- --scopes build:read --deferred \
//!     --model-dir target/models/all-MiniLM-L6-v2 --embed-cache target/models/vectors.cache
//! # HTTP as an OAuth 2.1 resource server, accepting an identity provider's JWT access tokens:
//! cargo run -p registry-examples --bin mcp_server -- --http 127.0.0.1:8750 \
//!     --issuer https://idp.example.com/ --audience http://127.0.0.1:8750/mcp \
//!     --jwks-uri http://127.0.0.1:9000/jwks.json --tenant-claim org --step-up
//! ```
//!
//! Logs (the registry's audit events included) go to stderr; in stdio mode stdout carries
//! nothing but protocol messages. Run with `--help` for every flag.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;
use std::time::Duration;

use registry_core::deferred::DeferredOptions;
use registry_core::{Registry, Subject, access::Access};
use registry_embed::LocalEmbedder;
use registry_examples::embed::{self, EmbedFlags};
use registry_mcp::logging::{self, LogFormat};
use registry_mcp::upstream::{
    Federation, FederationError, UpstreamLock, UpstreamsConfig, Withheld,
};
use registry_mcp::{
    CancellationToken, EdgeLimits, HttpConfig, HttpServer, Jwks, McpServer, OAuth, ServerOptions,
    Tokens,
};
use registry_postgres::{
    AuditConfig, AuditWriter, ChangeFeed, ControlPlane, UpstreamOffer, WhenFull,
};

const USAGE: &str = "\
usage: mcp_server [--tenant T] [--scopes A,B] [--read-only] [--agent NAME]   (stdio)
       mcp_server --http [ADDR] [--tokens FILE]                            (HTTP)
       mcp_server --http [ADDR] --issuer URL --audience URI --jwks FILE|--jwks-uri URL
                  [--tenant-claim NAME] [--step-up] [--tokens FILE]         (HTTP, OAuth)

stdio (the default): serves one client on stdin/stdout, acting for the subject given by
  --tenant T        the tenant (env MCP_TENANT; default acme)
  --scopes A,B      granted scopes, comma-separated (env MCP_SCOPES; default none)
  --read-only       only read-only tools (env MCP_READ_ONLY=1)
  --agent NAME      the agent's name, for the audit log (env MCP_AGENT)

HTTP:
  --http [ADDR]     serve streamable HTTP at http://ADDR/mcp (default 127.0.0.1:8750;
                    port 0 picks a free one); the address is printed on stderr
  --tokens FILE     bearer tokens and their subjects (JSON; default: the bundled
                    development tokens, examples/mcp-tokens.json)
  --allow-host H    accept this Host header too (repeatable; default loopback names only)
  --max-sessions N  open sessions at once, all tokens together (default 1000)
  --max-sessions-per-token N   open sessions of one token (default 16)
  --session-idle-ms N   a session no request reached for N ms ends (default 300000)
  --rate N          requests per second per token, 0 for no limit (default 50; burst 2N)
  --request-state-key-file FILE   the key that seals the requestState of approval
                    questions (protocol 2026-07-28): 64 hex digits (`openssl rand -hex 32`);
                    replicas behind one address share one (default: random per process)

HTTP as an OAuth 2.1 resource server (JWT access tokens from an identity provider; with
--jwks or --jwks-uri, the tokens file is used only if --tokens is given):
  --issuer URL      the tokens' issuer (`iss`), also named as the authorization server
  --audience URI    this server's canonical URI, which tokens' `aud` must name
  --jwks FILE       the issuer's keys, a JWKS file (read again for an unknown `kid`)
  --jwks-uri URL    the issuer's jwks_uri, fetched (again for an unknown `kid`, at most
                    every 10 s)
  --tenant-claim NAME   the claim naming the tenant (default tenant)
  --read-only-scope S   a token with scope S acts read-only
  --allow-insecure-http   accept a --jwks-uri that is plain http:// to a host that is
                    not loopback (refused otherwise: keys fetched in the clear can be
                    forged on the way)
  --step-up         answer a call that needs more scopes with 403 insufficient_scope
                    (reveals that the tool exists; off by default)

both:
  --page-size N     tools per tools/list page (default 100)
  --poll-ms N       how often to check the registry for revocations (default 200)
  --call-timeout-ms N   a deadline for every call
  --max-message-bytes N largest message accepted (default 8 MiB)
  --rate-limit SPEC a rate limit for every tool, per subject, e.g. 5/min

Search (the deferred form's `search_tools`):
  --deferred        deferred loading: tools/list holds the loaded tools and
                    search_tools, and calling search_tools loads what it finds (in the
                    client's allowed set only)
  --model-dir DIR   rank search results by meaning as well as by words, with the
                    sentence-transformers model in DIR (config.json, tokenizer.json,
                    model.safetensors) run in this process; `bash .ci/fetch-model DIR`
                    fetches all-MiniLM-L6-v2. The tools are embedded at start (the log
                    says how many and how long). A DIR that is not such a model is
                    refused (status 2). Without it, search ranks by words only
  --embed-cache FILE   keep the tools' vectors the model computes (never the
                    queries') in FILE (made if missing), keyed by the model's digest and
                    each text's SHA-256, never the text: a restart embeds only the tools
                    that changed (needs --model-dir)

Upstream MCP servers, their tools served beside this server's own, through the same gate:
  --upstreams FILE  the upstream servers and their tools' scopes, tenants, approvals,
                    rate limits and timeouts (TOML, `[[upstream]]` tables; see the guide,
                    \"Federating MCP servers\"); a bad file is refused, naming the line
  --upstreams-lock FILE   the upstream definitions pinned: written the first time an
                    upstream is met (trust on first use); a definition that differs from
                    its pin is withheld until accepted (default: pins kept in memory
                    only, for this process)
  --accept-upstream NAME  accept the current definitions of upstream NAME into the lock
                    (repeatable)
  With --postgres, the replica reports the tools it withholds for a change or as new, and
  applies what operators accept with `registry-admin upstream accept NAME --digest D`.
  At run time, SIGHUP reads the --upstreams-lock file again: write the digest the log
  names for a withheld tool into it, then `kill -HUP PID`; what matches its pin is served
  without a restart (an upstream met before is never trusted anew, even with its blocks gone).
  An upstream unreachable at start does not stop the server: its tools are not served
  until it is reached (tried again with a growing pause) and checked against the lock.

Sharing one control plane with other replicas (PostgreSQL):
  --postgres URL    keep revocations, approvals, quotas, tasks and audit in this
                    database (postgres://USER@HOST:PORT/DB?sslmode=verify-full&
                    sslrootcert=CA.pem; without sslmode, refused to a host that is
                    not this machine; the schema is applied if missing); without it (and without DATABASE_URL), everything stays
                    in this process's memory. A URL with a password is refused here:
                    any process of this user, a stdio upstream too, reads the command
                    line; give it in DATABASE_URL or --postgres-url-file
  --postgres-url-file FILE   the database URL, read from the first line of FILE
  DATABASE_URL      (environment) the database URL, when neither flag is given
  --task-lease-ms N how long a running task's lease lasts (default 10000): once a
                    replica that runs a task stops renewing it, another marks it failed
  --replica NAME    this replica's name in the records (default host-pid)
  --no-retention    do not prune: by default the replica deletes records older than
                    30 days (audit, decided approvals, superseded changes, ended tasks,
                    old policy sets, dead replicas' offers and status) every hour, when
                    its role may (a replica's role may not: run `registry-admin prune
                    --older-than 30d` from a scheduler, and pass this to say so)
  --audit-when-full block|drop   when the database is slow: calls wait (default)
                    or audit events are dropped and counted

  --log FILTER      log filter, e.g. debug or info,registry_core::audit=warn
                    (env RUST_LOG; default info,rmcp=warn: rmcp logs session ids
                    and some client text at info)
  --log-format text|json   log lines as text (the default) or one JSON object a
                    line; either way every field is escaped: one event, one line";

/// The bundled development tokens.
const DEV_TOKENS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp-tokens.json");

#[derive(Debug)]
struct Args {
    http: Option<SocketAddr>,
    tokens: Option<PathBuf>,
    allowed_hosts: Vec<String>,
    issuer: Option<String>,
    audience: Option<String>,
    jwks: Option<Jwks>,
    tenant_claim: Option<String>,
    read_only_scope: Option<String>,
    allow_insecure_http: bool,
    limits: EdgeLimits,
    tenant: String,
    scopes: Vec<String>,
    read_only: bool,
    agent: Option<String>,
    options: ServerOptions,
    log: String,
    log_format: LogFormat,
    /// Test support, not in the usage text: when FILE exists, revoke tool NAME.
    revoke_on: Option<(PathBuf, String)>,
    /// Test support, not in the usage text: the task tools `spin_task`, noting in DIR when it
    /// starts and when it sees its cancellation, and `ask_task`, which asks its caller.
    task_tool: Option<PathBuf>,
    task_lease: Option<Duration>,
    /// `--no-retention`: the plane prunes nothing on its own.
    no_retention: bool,
    postgres: Option<String>,
    replica: Option<String>,
    rate_limit: Option<String>,
    audit_when_full: WhenFull,
    upstreams: Option<PathBuf>,
    upstreams_lock: Option<PathBuf>,
    accept_upstreams: Vec<String>,
    /// `--model-dir` and `--embed-cache`.
    embed: EmbedFlags,
    /// The model `--model-dir` names, loaded by `main` before the registry is built.
    embedder: Option<LocalEmbedder>,
}

/// Where `--postgres` or `--postgres-url-file` says the database is.
enum Postgres {
    Url(String),
    File(PathBuf),
}

impl Args {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
        let env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let mut parsed = Args {
            http: None,
            tokens: None,
            allowed_hosts: Vec::new(),
            issuer: None,
            audience: None,
            jwks: None,
            tenant_claim: None,
            read_only_scope: None,
            allow_insecure_http: false,
            limits: EdgeLimits::default(),
            tenant: env("MCP_TENANT").unwrap_or_else(|| "acme".to_owned()),
            scopes: env("MCP_SCOPES").map(|s| split(&s)).unwrap_or_default(),
            read_only: env("MCP_READ_ONLY").is_some_and(|v| v != "0" && v != "false"),
            agent: env("MCP_AGENT"),
            options: ServerOptions::default()
                .with_server_info("registry-examples", env!("CARGO_PKG_VERSION")),
            // rmcp logs each session's id, and a cancelled request's id and reason as the client
            // sent them, at info: keep its own events to warnings and above.
            log: env("RUST_LOG").unwrap_or_else(|| "info,rmcp=warn".to_owned()),
            log_format: LogFormat::Text,
            revoke_on: None,
            task_tool: None,
            task_lease: None,
            no_retention: false,
            postgres: None,
            replica: None,
            rate_limit: None,
            audit_when_full: WhenFull::Block,
            upstreams: None,
            upstreams_lock: None,
            accept_upstreams: Vec::new(),
            embed: EmbedFlags::default(),
            embedder: None,
        };
        let mut postgres_flags = Vec::new();
        let mut pending: Option<String> = None;
        while let Some(arg) = pending.take().or_else(|| args.next()) {
            let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
            match arg.as_str() {
                "--help" | "-h" => return Err(String::new()),
                "--http" => {
                    let addr = match args.next() {
                        Some(next) if !next.starts_with("--") => next,
                        next => {
                            pending = next;
                            "127.0.0.1:8750".to_owned()
                        }
                    };
                    parsed.http = Some(addr.parse().map_err(|_| {
                        format!("--http: {addr:?} is not an address like 127.0.0.1:8750")
                    })?);
                }
                "--tokens" => parsed.tokens = Some(value("--tokens")?.into()),
                "--request-state-key-file" => {
                    let path = value("--request-state-key-file")?;
                    let text = std::fs::read_to_string(&path).map_err(|error| {
                        format!("--request-state-key-file {path:?}: cannot read it: {error}")
                    })?;
                    let key = text
                        .parse::<registry_mcp::RequestStateKey>()
                        .map_err(|error| format!("--request-state-key-file {path:?}: {error}"))?;
                    parsed.options = parsed.options.with_request_state_key(key);
                }
                "--allow-host" => parsed.allowed_hosts.push(value("--allow-host")?),
                "--issuer" => parsed.issuer = Some(value("--issuer")?),
                "--audience" => parsed.audience = Some(value("--audience")?),
                "--jwks" => parsed.jwks = Some(Jwks::file(value("--jwks")?)),
                "--jwks-uri" => parsed.jwks = Some(Jwks::uri(value("--jwks-uri")?)),
                "--tenant-claim" => parsed.tenant_claim = Some(value("--tenant-claim")?),
                "--read-only-scope" => {
                    parsed.read_only_scope = Some(value("--read-only-scope")?);
                }
                "--allow-insecure-http" => parsed.allow_insecure_http = true,
                "--step-up" => parsed.options = parsed.options.with_step_up_scopes(true),
                "--max-sessions" => {
                    let max = number(&value("--max-sessions")?)?;
                    parsed.limits = parsed.limits.clone().with_max_sessions(max);
                }
                "--max-sessions-per-token" => {
                    let max = number(&value("--max-sessions-per-token")?)?;
                    parsed.limits = parsed.limits.clone().with_max_sessions_per_principal(max);
                }
                "--session-idle-ms" => {
                    let ms = number(&value("--session-idle-ms")?)?;
                    parsed.limits = (parsed.limits.clone())
                        .with_session_idle_timeout(Duration::from_millis(ms));
                }
                "--rate" => {
                    let rate: u32 = number(&value("--rate")?)?;
                    parsed.limits = parsed
                        .limits
                        .clone()
                        .with_requests_per_second(rate)
                        .with_burst(rate.saturating_mul(2));
                }
                "--tenant" => parsed.tenant = value("--tenant")?,
                "--scopes" => parsed.scopes = split(&value("--scopes")?),
                "--read-only" => parsed.read_only = true,
                "--agent" => parsed.agent = Some(value("--agent")?),
                "--page-size" => {
                    parsed.options = parsed
                        .options
                        .with_page_size(number(&value("--page-size")?)?);
                }
                "--poll-ms" => {
                    let ms = number(&value("--poll-ms")?)?;
                    parsed.options = parsed.options.with_poll_interval(Duration::from_millis(ms));
                }
                "--call-timeout-ms" => {
                    let ms = number(&value("--call-timeout-ms")?)?;
                    parsed.options = parsed.options.with_call_timeout(Duration::from_millis(ms));
                }
                "--max-message-bytes" => {
                    let bytes = number(&value("--max-message-bytes")?)?;
                    parsed.options = parsed.options.with_max_message_bytes(bytes);
                }
                "--log" => parsed.log = value("--log")?,
                "--log-format" => {
                    parsed.log_format = value("--log-format")?
                        .parse()
                        .map_err(|error| format!("--log-format: {error}"))?;
                }
                "--postgres" => {
                    let url = value("--postgres")?;
                    if ControlPlane::url_has_password(&url) {
                        return Err("--postgres: the URL holds a password (or cannot be read), \
                             and a command line is readable by every process of this user (a \
                             stdio upstream too): give the URL in the DATABASE_URL environment \
                             variable or in a file with --postgres-url-file FILE"
                            .to_owned());
                    }
                    postgres_flags.push(Postgres::Url(url));
                }
                "--postgres-url-file" => {
                    let path = value("--postgres-url-file")?;
                    postgres_flags.push(Postgres::File(path.into()));
                }
                "--replica" => parsed.replica = Some(value("--replica")?),
                "--no-retention" => parsed.no_retention = true,
                "--rate-limit" => parsed.rate_limit = Some(value("--rate-limit")?),
                "--deferred" => {
                    parsed.options = parsed.options.with_deferred_loading(DeferredOptions::new());
                }
                "--model-dir" => parsed.embed.model_dir = Some(value("--model-dir")?.into()),
                "--embed-cache" => parsed.embed.cache = Some(value("--embed-cache")?.into()),
                "--upstreams" => parsed.upstreams = Some(value("--upstreams")?.into()),
                "--upstreams-lock" => {
                    parsed.upstreams_lock = Some(value("--upstreams-lock")?.into());
                }
                "--accept-upstream" => {
                    parsed.accept_upstreams.push(value("--accept-upstream")?);
                }
                "--audit-when-full" => {
                    parsed.audit_when_full = match value("--audit-when-full")?.as_str() {
                        "block" => WhenFull::Block,
                        "drop" => WhenFull::Drop,
                        other => {
                            return Err(format!(
                                "--audit-when-full: {other:?} is neither block nor drop"
                            ));
                        }
                    }
                }
                "--task-lease-ms" => {
                    let ms = number(&value("--task-lease-ms")?)?;
                    parsed.task_lease = Some(Duration::from_millis(ms));
                }
                "--test-task-tool" => parsed.task_tool = Some(value("--test-task-tool")?.into()),
                "--admin-revoke-on" => {
                    let file = value("--admin-revoke-on")?;
                    let name = value("--admin-revoke-on")?;
                    parsed.revoke_on = Some((file.into(), name));
                }
                other => {
                    return Err(format!(
                        "unknown argument {}",
                        logging::escape(&format!("{other:?}"))
                    ));
                }
            }
        }
        parsed.postgres = match postgres_flags.pop() {
            _ if !postgres_flags.is_empty() => {
                return Err(
                    "give the database once: --postgres URL or --postgres-url-file FILE".to_owned(),
                );
            }
            Some(Postgres::Url(url)) => Some(url),
            Some(Postgres::File(path)) => Some(
                ControlPlane::url_from_file(&path)
                    .map_err(|error| format!("--postgres-url-file: {error}"))?,
            ),
            None => env("DATABASE_URL"),
        };
        let oauth_flags = parsed.issuer.is_some()
            || parsed.audience.is_some()
            || parsed.tenant_claim.is_some()
            || parsed.read_only_scope.is_some();
        if parsed.upstreams.is_none()
            && (parsed.upstreams_lock.is_some() || !parsed.accept_upstreams.is_empty())
        {
            return Err("--upstreams-lock and --accept-upstream need --upstreams FILE".to_owned());
        }
        parsed.embed.check()?;
        if parsed.jwks.is_some() && (parsed.issuer.is_none() || parsed.audience.is_none()) {
            return Err("--jwks and --jwks-uri need --issuer and --audience".to_owned());
        }
        if oauth_flags && parsed.jwks.is_none() {
            return Err(
                "--issuer, --audience, --tenant-claim and --read-only-scope need --jwks FILE \
                 or --jwks-uri URL"
                    .to_owned(),
            );
        }
        Ok(parsed)
    }

    /// The OAuth resource server the flags describe, if any.
    fn oauth(&self) -> Option<OAuth> {
        let (Some(jwks), Some(issuer), Some(audience)) = (&self.jwks, &self.issuer, &self.audience)
        else {
            return None;
        };
        let mut oauth = OAuth::new(audience.as_str(), issuer.as_str()).with_jwks(jwks.clone());
        if let Some(claim) = &self.tenant_claim {
            oauth = oauth.with_tenant_claim(claim.as_str());
        }
        if let Some(scope) = &self.read_only_scope {
            oauth = oauth.with_read_only_scope(scope.as_str());
        }
        if self.allow_insecure_http {
            oauth = oauth.allow_insecure_http();
        }
        Some(oauth)
    }

    fn subject(&self) -> Subject {
        let mut subject = Subject::new(self.tenant.as_str()).with_scopes(self.scopes.clone());
        if self.read_only {
            subject = subject.with_access(Access::ReadOnly);
        }
        if let Some(agent) = &self.agent {
            subject = subject.with_agent(agent.as_str());
        }
        subject
    }
}

fn split(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn number<T: FromStr>(text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a number"))
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) if message.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("mcp_server: {}\n\n{USAGE}", logging::escape(&message));
            return ExitCode::from(2);
        }
    };
    // Logs go to stderr, never stdout: in stdio mode stdout is the protocol. Every field of
    // every event is escaped, rmcp's and hyper's too: one event, one line.
    if let Err(error) = logging::init(args.log_format, &args.log) {
        eprintln!("mcp_server: --log: {error}");
        return ExitCode::from(2);
    }
    // A panicking tool is caught by the run and its message goes to the audit log; keep the
    // default hook from printing it (and a backtrace) as well.
    std::panic::set_hook(Box::new(|info| tracing::debug!("{info}")));
    // The model's weights are read and checked off the async workers; a bad --model-dir is
    // a bad flag.
    let flags = args.embed.clone();
    args.embedder = match tokio::task::spawn_blocking(move || flags.load()).await {
        Ok(Ok(embedder)) => embedder,
        Ok(Err(message)) => {
            eprintln!("mcp_server: {}", logging::escape(&message));
            return ExitCode::from(2);
        }
        Err(error) => {
            eprintln!("mcp_server: the model could not be loaded: {error}");
            return ExitCode::FAILURE;
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let error = error.to_string();
            eprintln!("mcp_server: {}", logging::escape(&error));
            ExitCode::FAILURE
        }
    }
}

/// `--test-task-tool DIR`: a task tool that writes `DIR/started` when it starts, runs until
/// cancelled, then writes `DIR/cancelled`.
fn spin_task(dir: PathBuf) -> registry_core::DynamicTool {
    registry_core::DynamicTool::new("spin_task", "Run until cancelled.")
        .public()
        .task()
        .handler(move |ctx: &registry_core::ToolContext, _| {
            std::fs::write(dir.join("started"), b"")
                .map_err(|error| format!("cannot note the start: {error}"))?;
            while !ctx.is_cancelled() {
                std::thread::sleep(Duration::from_millis(2));
            }
            std::fs::write(dir.join("cancelled"), b"")
                .map_err(|error| format!("cannot note the cancellation: {error}"))?;
            Ok::<_, String>(serde_json::json!("stopped"))
        })
}

/// What `ask_task` asks.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Word {
    /// Any word.
    word: String,
}

/// `--test-task-tool DIR`: a task tool that writes `DIR/asked` (the process id) when it
/// asks its caller for a word, and answers with the word.
fn ask_task(dir: PathBuf) -> registry_core::DynamicTool {
    registry_core::DynamicTool::new("ask_task", "Ask for a word, then say it back.")
        .public()
        .task()
        .async_handler(move |ctx: registry_core::ToolContext, _| {
            let dir = dir.clone();
            async move {
                std::fs::write(dir.join("asked"), std::process::id().to_string())
                    .map_err(|error| format!("cannot note the question: {error}"))?;
                match ctx.elicit::<Word>("Which word?").await {
                    Ok(registry_core::host::Elicitation::Accepted(Word { word })) => {
                        Ok(serde_json::json!(format!("the word was {word}")))
                    }
                    Ok(_) => Ok(serde_json::json!("no word")),
                    Err(error) => Err(error.to_string()),
                }
            }
        })
}

/// What `--postgres` adds: the change feed the registry follows, and the audit writer.
struct Replica {
    feed: ChangeFeed,
    audit: AuditWriter,
}

impl Replica {
    /// Stops following and writes the audit events left.
    async fn shutdown(self) {
        self.feed.shutdown().await;
        if let Err(error) = self.audit.shutdown(Duration::from_secs(10)).await {
            tracing::error!(%error, "audit events were lost at shutdown");
        }
    }
}

/// The registry, in memory, or sharing revocations, approvals, quotas and audit with other
/// replicas through the PostgreSQL control plane at `--postgres`.
async fn build(args: &Args) -> Result<(Registry, Option<Replica>), Box<dyn std::error::Error>> {
    let mut builder = registry_examples::registry();
    if let Some(embedder) = &args.embedder {
        builder = builder.embedder(embedder.clone());
    }
    if let Some(limit) = &args.rate_limit {
        builder = builder.rate_limit(limit.as_str());
    }
    if let Some(dir) = &args.task_tool {
        builder = builder
            .tool(spin_task(dir.clone()))
            .tool(ask_task(dir.clone()));
    }
    let federation = federate(args).await?;
    if let Some(federation) = &federation {
        builder = federation.register(builder);
    }
    let attach = |registry: &Registry| {
        if let Some(federation) = &federation {
            federation.attach(registry);
            if let Some(path) = &args.upstreams_lock {
                reload_lock_on_hangup(federation.clone(), path.clone());
            }
        }
    };
    let Some(url) = &args.postgres else {
        let registry = builder.build()?;
        attach(&registry);
        return Ok((registry, None));
    };
    let mut plane = ControlPlane::builder(url);
    if let Some(name) = &args.replica {
        plane = plane.replica(name.as_str());
    }
    if let Some(lease) = args.task_lease {
        plane = plane.task_lease(lease);
    }
    if args.no_retention {
        plane = plane.no_retention();
    }
    let plane = plane.connect().await?;
    let (sink, audit) = plane.audit_sink(AuditConfig::default().when_full(args.audit_when_full));
    let registry = builder
        .approval_store(plane.approval_store())
        .quota_store(plane.quota_store())
        .task_store(plane.task_store())
        .audit_sink(sink)
        .build()?;
    attach(&registry);
    if let Some(federation) = &federation {
        share_upstreams(plane.clone(), federation.clone());
    }
    let feed = plane.follow(&registry).await?;
    tracing::info!(
        replica = plane.replica(),
        applied = feed.applied_seq(),
        "following the control plane"
    );
    Ok((registry, Some(Replica { feed, audit })))
}

/// What `--upstreams` adds: the upstream servers, connected, their tools compared with the
/// lock.
async fn federate(args: &Args) -> Result<Option<Federation>, Box<dyn std::error::Error>> {
    let Some(file) = &args.upstreams else {
        return Ok(None);
    };
    let config = UpstreamsConfig::load(file)?;
    let lock = match &args.upstreams_lock {
        Some(path) => UpstreamLock::load(path)?,
        None => {
            tracing::warn!(
                "no --upstreams-lock: upstream definitions are pinned in memory only, and \
                 trusted anew at every start"
            );
            UpstreamLock::in_memory()
        }
    };
    let federation = Federation::connect(config, lock, &args.accept_upstreams).await?;
    for upstream in federation.upstreams() {
        if let Some(reason) = &upstream.last_error {
            tracing::warn!(upstream = %upstream.name, reason = %reason, "upstream unreachable; its tools are not served until it is reached and checked (tried again with a growing pause)");
        }
    }
    for tool in federation.tools() {
        match &tool.withheld {
            Some(why) => {
                tracing::warn!(tool = %tool.name, upstream = %tool.upstream, reason = %why, "upstream tool withheld")
            }
            None => {
                tracing::info!(tool = %tool.name, upstream = %tool.upstream, "upstream tool served")
            }
        }
    }
    Ok(Some(federation))
}

/// How often a replica reports the upstream tools it withholds and reads the acceptances.
const UPSTREAMS_POLL: Duration = Duration::from_millis(500);

/// How often an unchanged report of the upstream tools withheld is refreshed: well within
/// `registry_postgres::UPSTREAM_OFFER_TTL`, after which an offer is taken for a dead
/// replica's.
const OFFERS_REFRESH: Duration = Duration::from_secs(10);

/// The most acceptances a replica keeps in memory (operators record them one by one).
const MAX_KEPT_ACCEPTANCES: usize = 10_000;

/// One accepted offer: upstream, tool, definition and annotations digests.
type Accepted = (String, String, String, String);

/// `--postgres` with `--upstreams`: reports the upstream tools this replica withholds for a
/// change or as new to the control plane, each with the definition its upstream offers
/// (`registry-admin upstream list`), refreshed while unchanged so that the report stays live
/// (a dead replica's is neither listed nor accepted), and applies the
/// acceptances operators record there (`registry-admin upstream accept`). An acceptance is of
/// exact digests, whenever they are offered: every acceptance is read, from the first, and a
/// withheld tool whose offer has the digests of one is accepted
/// (`Federation::accept_offer`), now or when it is offered later.
fn share_upstreams(plane: ControlPlane, federation: Federation) {
    tokio::spawn(async move {
        let mut reported: Option<Vec<UpstreamOffer>> = None;
        let mut last_report = tokio::time::Instant::now();
        let mut accepted: HashSet<Accepted> = HashSet::new();
        let mut after = 0;
        loop {
            match plane.upstream_acceptances(after, 100).await {
                Ok(read) => {
                    for acceptance in read {
                        after = acceptance.seq;
                        if accepted.len() >= MAX_KEPT_ACCEPTANCES {
                            tracing::warn!(
                                seq = acceptance.seq,
                                "too many upstream acceptances kept; this one is not applied"
                            );
                            continue;
                        }
                        accepted.insert((
                            acceptance.upstream,
                            acceptance.tool,
                            acceptance.definition,
                            acceptance.annotations,
                        ));
                    }
                }
                Err(error) => tracing::warn!(%error, "cannot read the upstream acceptances"),
            }
            let mut offers = Vec::new();
            for tool in federation.tools() {
                let (Some(why), Some(definition), Some(annotations)) =
                    (&tool.withheld, tool.definition, tool.annotations)
                else {
                    continue;
                };
                if !matches!(why, Withheld::New { .. } | Withheld::Changed { .. }) {
                    continue;
                }
                let key = (tool.upstream, tool.name, definition, annotations);
                if accepted.contains(&key) {
                    let (upstream, name, definition, annotations) = &key;
                    match federation
                        .accept_offer(upstream, name, definition, annotations)
                        .await
                    {
                        Ok(true) => {
                            tracing::info!(tool = %name, "upstream tool accepted through the control plane");
                            continue;
                        }
                        Ok(false) | Err(FederationError::UnknownUpstream(_)) => {}
                        Err(error) => {
                            tracing::error!(%error, "cannot apply an upstream acceptance")
                        }
                    }
                }
                let (upstream, name, definition, annotations) = key;
                let mut offer = UpstreamOffer::new(
                    upstream,
                    name,
                    tool.upstream_tool,
                    definition,
                    annotations,
                    why.to_string(),
                );
                if let Some(offered) = tool.offered {
                    offer = offer.with_offered(offered);
                }
                offers.push(offer);
            }
            if reported.as_ref() != Some(&offers) {
                match plane.report_upstream_offers(&offers).await {
                    Ok(()) => {
                        reported = Some(offers);
                        last_report = tokio::time::Instant::now();
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot report the upstream tools withheld")
                    }
                }
            } else if last_report.elapsed() >= OFFERS_REFRESH {
                // An offer not refreshed within UPSTREAM_OFFER_TTL is a dead replica's: it
                // is neither listed nor accepted.
                match plane.refresh_upstream_offers().await {
                    Ok(()) => last_report = tokio::time::Instant::now(),
                    Err(error) => {
                        tracing::warn!(%error, "cannot refresh the upstream tools withheld")
                    }
                }
            }
            tokio::time::sleep(UPSTREAMS_POLL).await;
        }
    });
}

/// `--upstreams-lock FILE`: on `SIGHUP`, reads the lock file again and compares every
/// upstream tool with it (`Federation::reload_lock`): an operator accepts a change at run
/// time by writing the digest the log names into the file, then `kill -HUP PID`.
fn reload_lock_on_hangup(federation: Federation, path: PathBuf) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangup = match signal(SignalKind::hangup()) {
        Ok(hangup) => hangup,
        Err(error) => {
            tracing::error!(%error, "cannot listen for SIGHUP: the upstreams lock is read at start only");
            return;
        }
    };
    tracing::info!(
        pid = std::process::id(),
        lock = %path.display(),
        "on SIGHUP, the upstreams lock file is read again"
    );
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            let lock = match UpstreamLock::load(&path) {
                Ok(lock) => lock,
                Err(error) => {
                    tracing::error!(%error, "SIGHUP: the upstreams lock file is refused; the pins stay as they were");
                    continue;
                }
            };
            match federation.reload_lock(lock).await {
                Ok(()) => {
                    for tool in federation.tools() {
                        match &tool.withheld {
                            Some(why) => {
                                tracing::warn!(tool = %tool.name, reason = %why, "SIGHUP: upstream tool withheld")
                            }
                            None if tool.registered => {
                                tracing::info!(tool = %tool.name, "SIGHUP: upstream tool served")
                            }
                            None => {
                                tracing::info!(tool = %tool.name, "SIGHUP: upstream tool pinned; served from the next start")
                            }
                        }
                    }
                }
                Err(error) => tracing::error!(%error, "SIGHUP: cannot apply the upstreams lock"),
            }
        }
    });
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let (registry, replica) = build(&args).await?;
    if let Some(embedder) = args.embedder.clone() {
        // The tools are embedded now, on a blocking thread, rather than by the first search.
        let registry = registry.clone();
        tokio::task::spawn_blocking(move || embed::prepare(&registry, &embedder)).await?;
    }
    let result = serve(args, registry).await;
    if let Some(replica) = replica {
        replica.shutdown().await;
    }
    result
}

async fn serve(args: Args, registry: Registry) -> Result<(), Box<dyn std::error::Error>> {
    registry.check_readiness().await;
    if let Some((file, name)) = args.revoke_on.clone() {
        revoke_when_present(registry.clone(), file, name);
    }
    let Some(addr) = args.http else {
        let subject = args.subject();
        tracing::info!(?subject, "serving MCP on stdio");
        let server = McpServer::new(registry, args.options)?;
        return Ok(server.serve_stdio(subject).await?);
    };
    let oauth = args.oauth();
    let tokens_file = match (&args.tokens, &oauth) {
        (Some(file), _) => Some(file.clone()),
        (None, Some(_)) => None,
        (None, None) => {
            tracing::warn!("no --tokens: using the bundled development tokens ({DEV_TOKENS})");
            Some(DEV_TOKENS.into())
        }
    };
    let tokens = match &tokens_file {
        Some(file) => {
            let tokens = Tokens::load(file)?;
            tracing::info!(file = %file.display(), ?tokens, "accepting these tokens");
            tokens
        }
        None => Tokens::new(),
    };
    let shutdown = CancellationToken::new();
    let mut config = HttpConfig::new(tokens)
        .with_addr(addr)
        .with_options(args.options)
        .with_limits(args.limits)
        .with_shutdown(shutdown.clone());
    if !args.allowed_hosts.is_empty() {
        let mut hosts = config.allowed_hosts.clone();
        hosts.extend(args.allowed_hosts);
        config = config.with_allowed_hosts(hosts);
    }
    if let Some(oauth) = oauth {
        tracing::info!(
            issuer = oauth.issuer(),
            resource = oauth.resource(),
            "accepting JWT access tokens"
        );
        config = config.with_oauth(oauth);
    }
    let server = HttpServer::bind(registry, config).await?;
    // The tests read this line to learn the port.
    eprintln!("mcp_server: listening on {}", server.url());
    tokio::spawn(async move {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let terminated = async {
            match terminate.as_mut() {
                Some(signal) => signal.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminated => {}
        }
        tracing::info!("interrupted; shutting down");
        shutdown.cancel();
    });
    Ok(server.serve().await?)
}

/// Test support: revokes `name` once `file` exists, so that a test can trigger a revocation
/// at the moment it chooses.
fn revoke_when_present(registry: Registry, file: PathBuf, name: String) {
    tokio::spawn(async move {
        loop {
            if tokio::fs::try_exists(&file).await.unwrap_or(false) {
                match registry.revoke(
                    &name,
                    format!("revoked by the operator ({})", file.display()),
                ) {
                    Ok(change) => tracing::info!(tool = %change.name, "revoked"),
                    Err(error) => tracing::error!(%error, "could not revoke"),
                }
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
}
