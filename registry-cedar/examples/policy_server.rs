//! An MCP server whose boundary is a directory of Cedar policies, reloaded on SIGHUP.
//!
//! ```sh
//! cargo run --manifest-path registry-cedar/Cargo.toml --example policy_server -- \
//!     --policies registry-cedar/examples/policies
//! # then, after editing a policy file:
//! kill -HUP <pid>
//! ```
//!
//! It serves streamable HTTP at `http://ADDR/mcp` (default `127.0.0.1:8750`; `--http
//! 127.0.0.1:0` picks a free port, printed on stderr as `policy_server: listening on URL`) to
//! two development bearer tokens, each standing for a subject with attributes:
//!
//! - `finance-dev-token-0001`: tenant `acme`, scopes `ledger:read`, `ledger:write`, attribute
//!   `data_domain = "finance"`;
//! - `ops-dev-token-0002`: tenant `acme`, scope `deploy:write`, attribute `environment =
//!   "production"`.
//!
//! The tools are a ledger's balance, a refund and a deploy. The policies are validated against
//! the registry at start (a policy naming an unknown tool, attribute or argument stops the
//! server, naming it); each SIGHUP reads the directory again: a set that parses and holds
//! replaces the old one for the next call of every session, any other is refused and logged,
//! and the old one stays.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use registry_cedar::CedarPolicies;
use registry_core::{DynamicTool, Registry, Subject};
use registry_mcp::{HttpConfig, HttpServer, Principal, Tokens};
use serde_json::{Value, json};

const USAGE: &str = "usage: policy_server --policies DIR [--http ADDR]";

fn tools() -> Vec<DynamicTool> {
    let echo = |_: &registry_core::ToolContext, args: Value| Ok::<_, String>(args);
    vec![
        DynamicTool::new("ledger_balance", "Read a ledger's balance.")
            .scopes(["ledger:read"])
            .read_only()
            .attribute("data_domain", ["finance"])
            .parameters(json!({
                "type": "object",
                "properties": {"ledger": {"type": "string"}},
                "required": ["ledger"],
            }))
            .handler(|_, args| {
                Ok::<_, String>(json!({"ledger": args["ledger"], "cents": 125_000}))
            }),
        DynamicTool::new("refund", "Refund part of an order, in cents.")
            .scopes(["ledger:write"])
            .attribute("data_domain", ["finance"])
            .parameters(json!({
                "type": "object",
                "properties": {"order": {"type": "string"}, "cents": {"type": "integer"}},
                "required": ["order", "cents"],
            }))
            .handler(echo),
        DynamicTool::new("deploy", "Deploy a service to an environment.")
            .scopes(["deploy:write"])
            .destructive()
            .attribute("environment", ["staging", "production"])
            .parameters(json!({
                "type": "object",
                "properties": {"service": {"type": "string"}, "env": {"type": "string"}},
                "required": ["service", "env"],
            }))
            .handler(echo),
    ]
}

fn tokens() -> Result<Tokens, Box<dyn std::error::Error>> {
    let mut tokens = Tokens::new();
    let finance = Subject::new("acme")
        .with_scopes(["ledger:read", "ledger:write"])
        .with_attribute("data_domain", "finance");
    tokens.insert(
        "finance-dev-token-0001",
        Principal::new("finance-bot", finance),
    )?;
    let ops = Subject::new("acme")
        .with_scopes(["deploy:write"])
        .with_attribute("environment", "production");
    tokens.insert("ops-dev-token-0002", Principal::new("ops-bot", ops))?;
    Ok(tokens)
}

struct Args {
    policies: PathBuf,
    http: SocketAddr,
}

fn args() -> Result<Args, String> {
    let mut policies = None;
    let mut http = SocketAddr::from(([127, 0, 0, 1], 8750));
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--policies" => policies = args.next().map(PathBuf::from),
            "--http" => {
                let value = args.next().ok_or("--http needs an address")?;
                http = value
                    .parse()
                    .map_err(|error| format!("--http {value:?}: {error}"))?;
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let policies = policies.ok_or_else(|| format!("--policies DIR is required\n{USAGE}"))?;
    Ok(Args { policies, http })
}

async fn serve(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let policies = CedarPolicies::from_dir(&args.policies)?;
    let registry = tools()
        .into_iter()
        .fold(Registry::builder(), |builder, tool| builder.tool(tool))
        .policies(policies.clone())
        .build()?;
    tracing::info!(policies = ?policies.ids(), dir = %args.policies.display(), "policies in force");
    // Each SIGHUP reads the directory again; a refused set is logged (audit target) and the
    // old one stays. Kept for as long as the server runs.
    let _hangup = policies.reload_on_hangup(&args.policies)?;
    let server =
        HttpServer::bind(registry, HttpConfig::new(tokens()?).with_addr(args.http)).await?;
    // The tests read this line to learn the port.
    eprintln!(
        "policy_server: listening on {} (pid {})",
        server.url(),
        std::process::id()
    );
    Ok(server.serve().await?)
}

fn main() -> ExitCode {
    // Logs (the audit events of calls and of reloads among them) go to stderr, escaped.
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "info,rmcp=warn".to_owned());
    if let Err(error) = registry_mcp::logging::init(registry_mcp::logging::LogFormat::Text, &filter)
    {
        eprintln!("policy_server: RUST_LOG: {error}");
        return ExitCode::from(2);
    }
    let args = match args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("policy_server: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("policy_server: {error}");
            ExitCode::FAILURE
        }
    }
}
