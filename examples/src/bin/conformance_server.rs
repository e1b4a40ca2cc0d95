//! The server that the official MCP conformance suite (`conformance/run`, see
//! `conformance/README.md`) is run against: exactly what its server scenarios ask for.
//!
//! ```sh
//! cargo run -p registry-examples --bin conformance_server -- --http 127.0.0.1:8751
//! ```
//!
//! - The tools are `#[tool]` functions below, with rich content, progress, logs, questions
//!   (elicitation) and sampling through their [`ToolContext`]; one, `json_schema_2020_12_tool`,
//!   is a `DynamicTool` because the scenario fixes its input schema to the byte (with `$schema`,
//!   `$defs`, `$anchor`, `allOf` and `if`/`then`/`else`), which shows that the registry serves
//!   an application's schema unchanged.
//!   The tasks extension's fixtures are here too: `greet` (an ordinary call); `slow_compute`,
//!   `protocol_error_job`, and `confirm_delete` and `multi_input` (which ask the client while
//!   they run: `input_required`, answered by `tasks/update`), declared `task`; `failing_job`
//!   and `test_tool_with_task`, declared `task = "required"` (-32021 without the extension).
//!   `test_tool_with_task`'s first round (MRTR before the task) is the probes'.
//! - The resources, template, prompts and completion are plain rmcp code
//!   ([`registry_examples::conformance::ConformanceApp`]), composed with the registry's server
//!   with `RegistryServer::with_handler`.
//! - The 2026-07-28 protocol probes (`test_input_required_result_*`, `test_missing_capability`)
//!   choose what the client is asked on the wire, so they are rmcp code too
//!   ([`registry_examples::conformance::probes::Probes`]), in front of the composed server.
//!
//! It serves without tokens, on loopback only (`HttpConfig::with_loopback_principal`), and
//! prints `listening on URL` as its first line. Port 0 picks a free port.

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use registry_core::{
    DynamicTool, Registry, Subject, ToolContext,
    call::ToolError,
    content::Content,
    host::{Elicitation, LogLevel, SampleRequest},
    tool,
};
use registry_examples::conformance::probes::{Probes, probe_states};
use registry_examples::conformance::{ConformanceApp, RED_PIXEL_PNG, SILENT_WAV};
use registry_mcp::logging::{self, LogFormat};
use registry_mcp::{EdgeLimits, HttpConfig, HttpServer, Principal, ServerOptions, Tokens};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

const USAGE: &str = "\
usage: conformance_server --http ADDR [--log-format text|json]

Serves the MCP conformance suite's server scenarios over streamable HTTP at http://ADDR/mcp,
without tokens, to loopback clients only (ADDR must be a loopback address; port 0 picks a
free one). The first line on stdout is `listening on URL`. Warnings and errors go to stderr,
as text (the default) or with --log-format json one JSON object a line; either way every
field is escaped: one event, one line.";

/// Returns a simple text.
#[tool(public)]
fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Returns an image (a 1x1 red PNG).
#[tool(public)]
fn test_image_content() -> Content {
    Content::image(RED_PIXEL_PNG, "image/png")
}

/// Returns audio (a short silent WAV file).
#[tool(public)]
fn test_audio_content() -> Content {
    Content::audio(SILENT_WAV, "audio/wav")
}

/// Returns an embedded text resource.
#[tool(public)]
fn test_embedded_resource() -> Content {
    Content::embedded_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )
}

/// Returns text, an image and an embedded resource.
#[tool(public)]
fn test_multiple_content_types() -> Vec<Content> {
    vec![
        Content::text("Multiple content types test:"),
        Content::image(RED_PIXEL_PNG, "image/png"),
        Content::embedded_text(
            "test://mixed-content-resource",
            "application/json",
            json!({"test": "data", "value": 123}).to_string(),
        ),
    ]
}

/// Logs three messages at info level while it runs.
#[tool(public)]
async fn test_tool_with_logging(ctx: &ToolContext) -> &'static str {
    ctx.log(LogLevel::Info, "Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.log(LogLevel::Info, "Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.log(LogLevel::Info, "Tool execution completed");
    "Tool with logging executed successfully"
}

/// Reports progress 0, 50 and 100 of 100.
#[tool(public)]
async fn test_tool_with_progress(ctx: &ToolContext) -> &'static str {
    for (step, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if step > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.progress(done, Some(100.0), "");
    }
    "Tool with progress executed successfully"
}

/// Greets someone by name.
#[tool(public)]
fn greet(
    /// Who to greet.
    name: String,
) -> String {
    format!("Hello, {name}!")
}

/// Computes slowly: waits the given number of seconds, then answers. Stops when cancelled.
#[tool(public, task)]
fn slow_compute(
    ctx: &ToolContext,
    /// How long to take, in seconds; `0` answers at once.
    seconds: u64,
    /// A label echoed in the answer.
    label: Option<String>,
) -> Result<String, String> {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < deadline {
        if ctx.is_cancelled() {
            return Err("cancelled".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(format!(
        "computed {} in {seconds} s",
        label.as_deref().unwrap_or("a result")
    ))
}

/// Runs a job that fails after about a second; only as a task.
#[tool(public, task = "required")]
fn failing_job(ctx: &ToolContext) -> Result<String, String> {
    for _ in 0..50 {
        if ctx.is_cancelled() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err("the job failed on purpose".into())
}

/// Runs a job that breaks inside the server, a protocol-level error.
#[tool(public, task)]
fn protocol_error_job() -> String {
    panic!("protocol_error_job breaks on purpose")
}

/// What `confirm_delete` and `multi_input` ask.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Confirmation {
    /// Whether to go ahead.
    confirm: bool,
}

/// What each question of `multi_input` asks.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct NamedConfirmation {
    /// A name for the answer.
    name: String,
    /// Whether to go ahead.
    confirm: bool,
}

/// Deletes a file once the user confirms, asking while it runs as a task.
#[tool(public, task)]
async fn confirm_delete(
    ctx: &ToolContext,
    /// The file to delete.
    filename: String,
) -> Result<String, ToolError> {
    let answer = ctx
        .elicit::<Confirmation>(format!("Delete {filename}?"))
        .await?;
    Ok(match answer {
        Elicitation::Accepted(Confirmation { confirm: true }) => format!("Deleted {filename}"),
        _ => format!("Kept {filename}"),
    })
}

/// Asks two questions at once while it runs as a task, then answers with both.
#[tool(public, task)]
async fn multi_input(ctx: &ToolContext) -> Result<String, ToolError> {
    let (first, second) = tokio::join!(
        ctx.elicit::<NamedConfirmation>("First: your name, and go ahead?"),
        ctx.elicit::<NamedConfirmation>("Second: your name, and go ahead?"),
    );
    let name = |answer: Elicitation<NamedConfirmation>| match answer {
        Elicitation::Accepted(answer) => answer.name,
        Elicitation::Declined | Elicitation::Cancelled => "(none)".into(),
    };
    Ok(format!("Got {} and {}", name(first?), name(second?)))
}

/// Greets a user whose name the client gave in a first round (`input_required`, answered
/// by `Probes`), then runs as a task; only as a task.
#[tool(public, task = "required")]
fn test_tool_with_task(
    /// The user's name, gathered before the task starts.
    user_name: String,
) -> String {
    format!("Hello, {user_name}, from a task!")
}

/// Always fails.
#[tool(public)]
fn test_error_handling() -> Result<String, String> {
    Err("This tool intentionally returns an error for testing".into())
}

/// Asks the client's model.
#[tool(public)]
async fn test_sampling(
    ctx: &ToolContext,
    /// The prompt to send to the model.
    prompt: String,
) -> Result<String, ToolError> {
    let reply = ctx.sample(SampleRequest::new(100).user(prompt)).await?;
    Ok(format!("LLM response: {}", reply.text()))
}

/// What `test_elicitation` asks the user for.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct UserInfo {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}

/// Asks the user for a name and an email address.
#[tool(public)]
async fn test_elicitation(
    ctx: &ToolContext,
    /// The message to show the user.
    message: String,
) -> Result<String, ToolError> {
    let answer = ctx.elicit::<UserInfo>(message).await?;
    Ok(format!("User response: {}", describe(answer)))
}

/// A status, for the SEP-1034 defaults.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    Active,
    Inactive,
    Pending,
}

/// A form whose every field has a default (SEP-1034).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct WithDefaults {
    /// User name
    #[serde(default = "default_name")]
    name: String,
    /// User age
    #[serde(default = "default_age")]
    age: i64,
    /// User score
    #[serde(default = "default_score")]
    score: f64,
    /// User status
    #[serde(default = "default_status")]
    status: Status,
    /// Verification status
    #[serde(default = "default_verified")]
    verified: bool,
}

fn default_name() -> String {
    "John Doe".into()
}
fn default_age() -> i64 {
    30
}
fn default_score() -> f64 {
    95.5
}
fn default_status() -> Status {
    Status::Active
}
fn default_verified() -> bool {
    true
}

/// Asks for a form whose fields all have defaults.
#[tool(public)]
async fn test_elicitation_sep1034_defaults(ctx: &ToolContext) -> Result<String, ToolError> {
    let answer = ctx
        .elicit::<WithDefaults>("Please review these values")
        .await?;
    Ok(format!("Elicitation completed: {}", describe(answer)))
}

/// Options without titles.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Untitled {
    Option1,
    Option2,
    Option3,
}

/// Options with titles, for one choice.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum TitledOne {
    #[schemars(title = "First Option")]
    Value1,
    #[schemars(title = "Second Option")]
    Value2,
    #[schemars(title = "Third Option")]
    Value3,
}

/// Options titled the old way, with `enumNames`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(extend("enumNames" = ["Option One", "Option Two", "Option Three"]))]
enum Legacy {
    Opt1,
    Opt2,
    Opt3,
}

/// Options with titles, for several choices.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum TitledMany {
    #[schemars(title = "First Choice")]
    Value1,
    #[schemars(title = "Second Choice")]
    Value2,
    #[schemars(title = "Third Choice")]
    Value3,
}

/// Every kind of enum a form may hold (SEP-1330).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Enums {
    /// One of three, untitled
    untitled_single: Untitled,
    /// One of three, titled
    titled_single: TitledOne,
    /// One of three, titled with enumNames
    legacy_enum: Legacy,
    /// Several of three, untitled
    untitled_multi: Vec<Untitled>,
    /// Several of three, titled
    titled_multi: Vec<TitledMany>,
}

/// Asks for a form with every kind of enum.
#[tool(public)]
async fn test_elicitation_sep1330_enums(ctx: &ToolContext) -> Result<String, ToolError> {
    let answer = ctx.elicit::<Enums>("Please choose").await?;
    Ok(format!("Elicitation completed: {}", describe(answer)))
}

/// Takes a little while, so that a client may reconnect meanwhile (SEP-1699).
#[tool(public)]
async fn test_reconnection() -> &'static str {
    tokio::time::sleep(Duration::from_millis(100)).await;
    "Reconnection test completed successfully"
}

/// Logs one message at info level: a 2026-07-28 client gets it only if its request set a log
/// level (`_meta` `io.modelcontextprotocol/logLevel`, SEP-2575).
#[tool(public)]
fn test_logging_tool(ctx: &ToolContext) -> &'static str {
    ctx.log(LogLevel::Info, "Diagnostic trace logging activated");
    "Logging evaluated"
}

/// Reports progress while it runs: the response stream carries notifications and the result,
/// never a request to the client (protocol 2026-07-28).
#[tool(public)]
async fn test_streaming_elicitation(ctx: &ToolContext) -> &'static str {
    ctx.progress(50.0, Some(100.0), "halfway");
    tokio::time::sleep(Duration::from_millis(20)).await;
    ctx.progress(100.0, Some(100.0), "done");
    "Streaming complete"
}

/// Says which region it was asked about. Its `region` is mirrored into the HTTP header
/// `Mcp-Param-Region` (SEP-2243): a call whose header and argument differ is refused (-32020).
#[tool(public, read_only)]
fn test_header_mirroring(
    /// The region, e.g. `eu-west-1`.
    #[header("Region")]
    region: String,
) -> String {
    format!("region: {region}")
}

/// `action=..., content=...`, as the suite's scenarios word an answer.
fn describe<T: Serialize>(answer: Elicitation<T>) -> String {
    match answer {
        Elicitation::Accepted(content) => format!(
            "action=accept, content={}",
            serde_json::to_string(&content).unwrap_or_default()
        ),
        Elicitation::Declined => "action=decline".to_owned(),
        Elicitation::Cancelled => "action=cancel".to_owned(),
    }
}

/// The one tool whose schema the scenario fixes: JSON Schema 2020-12 with `$schema`, `$defs`,
/// an `$anchor`, a `$ref`, composition (`allOf` of an `anyOf`) and a conditional
/// (`if`/`then`/`else`), served as it is (SEP-1613, SEP-2106) and enforced on every call.
fn json_schema_tool() -> DynamicTool {
    DynamicTool::new(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
    )
    .public()
    .parameters(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": { "type": "string" },
                    "city": { "type": "string" }
                }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [
            { "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }
        ],
        "if": {
            "properties": { "contactMethod": { "const": "phone" } },
            "required": ["contactMethod"]
        },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    }))
    .handler(|_ctx, arguments| Ok::<_, String>(json!({ "received": arguments })))
}

fn parse_args() -> Result<(SocketAddr, LogFormat), String> {
    let mut args = std::env::args().skip(1);
    let mut addr = None;
    let mut format = LogFormat::Text;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => {
                let value = args
                    .next()
                    .ok_or("--http needs an address, e.g. 127.0.0.1:0")?;
                addr = Some(
                    value
                        .parse::<SocketAddr>()
                        .map_err(|error| format!("--http {value:?}: {error}"))?,
                );
            }
            "--log-format" => {
                format = args
                    .next()
                    .ok_or("--log-format needs text or json")?
                    .parse()
                    .map_err(|error| format!("--log-format: {error}"))?;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let addr = addr.ok_or_else(|| "--http ADDR is required".to_owned())?;
    Ok((addr, format))
}

#[tokio::main]
async fn main() -> ExitCode {
    let (addr, format) = match parse_args() {
        Ok(parsed) => parsed,
        Err(problem) => {
            if !problem.is_empty() {
                eprintln!("conformance_server: {}\n", logging::escape(&problem));
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Every field escaped, rmcp's and hyper's too: one event, one line.
    if let Err(error) = logging::init(format, "warn") {
        eprintln!("conformance_server: {error}");
        return ExitCode::FAILURE;
    }
    match serve(addr).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let error = error.to_string();
            eprintln!("conformance_server: {}", logging::escape(&error));
            ExitCode::FAILURE
        }
    }
}

async fn serve(addr: SocketAddr) -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder()
        .declared_in([module_path!()])
        .tool(json_schema_tool())
        .build()?;
    let subject = Subject::new("conformance");
    let config = HttpConfig::new(Tokens::new())
        .with_addr(addr)
        .with_loopback_principal(Principal::new("conformance", subject))
        .with_options(
            ServerOptions::default()
                .with_server_info("registry-conformance-server", env!("CARGO_PKG_VERSION")),
        )
        // The suite is one client that opens a session per scenario, back to back, all as the
        // one loopback principal: the per-principal session cap (16) and rate (50/s) are for
        // many principals sharing a server, not for a test suite.
        .with_limits(
            EdgeLimits::default()
                .with_max_sessions_per_principal(1000)
                .with_requests_per_second(10_000)
                .with_burst(10_000),
        );
    let app = ConformanceApp::default();
    let states = probe_states();
    let server = HttpServer::bind_with(registry, config, move |tools| {
        Probes::new(tools.with_handler(app.clone()), states.clone())
    })
    .await?;
    println!("listening on {}", server.url());
    std::io::stdout().flush()?;
    tokio::select! {
        served = server.serve() => served?,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
