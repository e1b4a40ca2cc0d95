//! SEP-2243 parameter headers over real loopback HTTP, to rmcp's real 2026-07-28 client: a
//! `#[tool]` parameter declared `#[header("Region")]` is exported as `x-mcp-header`, the
//! client mirrors it into `Mcp-Param-Region`, and a call whose header and argument differ
//! (or whose header is missing) is refused with -32020 — while a tool the caller may not see
//! stays an unknown tool (-32602), whatever headers come with it.

mod mcp_support;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use mcp_support::*;
use registry_core::{Registry, Subject, tool};
use registry_mcp::{HttpConfig, HttpServer, Principal, ServerOptions, Tokens};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{CallToolRequestParams, ClientConfig, ErrorCode, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;

const TOKEN: &str = "ops-token-for-header-tests";

/// Restart the service in a region.
#[tool(public)]
fn restart(
    /// The region, e.g. `eu-west-1`.
    #[header("Region")]
    region: String,
    /// How many instances at once.
    #[header("Batch")]
    batch: u32,
) -> String {
    format!("restarted {region} by {batch}")
}

/// Drain the service in a region (operators only).
#[tool(scopes = "ops:admin")]
fn drain(
    /// The region.
    #[header("Region")]
    region: String,
) -> String {
    format!("drained {region}")
}

async fn serve() -> String {
    let registry = Registry::builder()
        .declared_in([module_path!()])
        .build()
        .unwrap();
    let mut tokens = Tokens::new();
    let subject = Subject::new("acme").with_agent("ops-bot");
    tokens
        .insert(TOKEN, Principal::new("ops", subject))
        .unwrap();
    let config = HttpConfig::new(tokens)
        .with_addr(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .with_options(ServerOptions::default().with_poll_interval(Duration::from_secs(3600)));
    let server = HttpServer::bind(registry, config).await.unwrap();
    let url = server.url();
    tokio::spawn(server.serve());
    url
}

/// A 2026-07-28 client, sending `headers` with every request besides its own.
async fn client(url: &str, headers: &[(&str, &str)]) -> RunningService<RoleClient, ClientConfig> {
    let headers: HashMap<HeaderName, HeaderValue> = headers
        .iter()
        .map(|(name, value)| {
            (
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            )
        })
        .collect();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header(TOKEN)
            .custom_headers(headers),
    );
    within(
        "discover",
        ClientConfig::default().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("a 2026-07-28 client connects")
}

fn restart_in(region: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("restart")
        .with_arguments(object(json!({"region": region, "batch": 1})))
}

/// The code and message of a refused call.
fn refusal(error: ServiceError) -> (ErrorCode, String) {
    match error {
        ServiceError::McpError(data) => (data.code, data.message.into_owned()),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_listed_the_tools_mirrors_the_parameter_and_is_served() {
    let url = serve().await;
    let client = client(&url, &[]).await;
    let (tools, _) = list_all(client.peer()).await;
    let restart = tools
        .iter()
        .find(|tool| tool.name == "restart")
        .unwrap_or_else(|| panic!("restart is listed: {:?}", names(&tools)));
    let properties = &restart.input_schema["properties"];
    assert_eq!(properties["region"]["x-mcp-header"], json!("Region"));
    assert_eq!(properties["batch"]["x-mcp-header"], json!("Batch"));

    // rmcp's client mirrors what the schema says: the headers match, the call runs.
    // rmcp 3.11's client caches a listed tool's schema in its transport's worker, and under a
    // loaded CI (twice on 2026-12-04, never on an idle machine) its first call went out without
    // any of the tool's headers, as if not yet listed: answered -32020 naming a missing header,
    // which is the server's rule. That client's race is given one more listing; a header that is
    // sent and differs, or a missing one after that, still fails.
    let params = restart_in("eu-west-1");
    let result = match within("tools/call", client.call_tool(params.clone())).await {
        Err(ServiceError::McpError(error))
            if error.code == ErrorCode(-32020) && error.message.contains("is missing") =>
        {
            eprintln!("rmcp's client sent no parameter header; listing again: {error:?}");
            let _ = list_all(client.peer()).await;
            within("tools/call", client.call_tool(params)).await
        }
        other => other,
    }
    .unwrap();
    assert_eq!(text(&result), "restarted eu-west-1 by 1");
    // A value a header cannot hold as it is goes base64-wrapped, and still matches.
    let result = within("tools/call", client.call_tool(restart_in(" été ")))
        .await
        .unwrap();
    assert_eq!(text(&result), "restarted  été  by 1");
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_that_differs_from_its_argument_or_is_missing_is_refused_with_32020() {
    let url = serve().await;

    // Sends `Mcp-Param-Region: us-east-1` with a call for eu-west-1, and the right batch (never having listed
    // the tools, the client adds no header of its own).
    let lying = client(
        &url,
        &[("Mcp-Param-Region", "us-east-1"), ("Mcp-Param-Batch", "1")],
    )
    .await;
    let error = within("tools/call", lying.call_tool(restart_in("eu-west-1")))
        .await
        .unwrap_err();
    let (code, message) = refusal(error);
    assert_eq!(code, ErrorCode::HEADER_MISMATCH, "{message}");
    assert!(
        message.contains("does not match the argument \"region\""),
        "{message}"
    );
    // A header for an argument that is not given (the call is invalid anyway: the header is
    // checked first).
    let params = CallToolRequestParams::new("restart")
        .with_arguments(object(json!({"region": "us-east-1"})));
    let lying_batch = client(
        &url,
        &[("Mcp-Param-Region", "us-east-1"), ("Mcp-Param-Batch", "3")],
    )
    .await;
    let (code, message) = refusal(
        within("tools/call", lying_batch.call_tool(params))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, ErrorCode::HEADER_MISMATCH, "{message}");
    assert!(
        message.contains("Mcp-Param-Batch header is given but the argument"),
        "{message}"
    );

    // No header at all for a mirrored argument.
    let silent = client(&url, &[]).await;
    let (code, message) = refusal(
        within("tools/call", silent.call_tool(restart_in("eu-west-1")))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, ErrorCode::HEADER_MISMATCH, "{message}");
    assert!(message.contains("header is missing"), "{message}");

    // A tool this token may not see stays unknown, headers or not: no -32020 tells it apart.
    let params =
        CallToolRequestParams::new("drain").with_arguments(object(json!({"region": "eu-west-1"})));
    let error = within("tools/call", lying.call_tool(params))
        .await
        .unwrap_err();
    let message = invalid_params(error);
    assert!(message.contains("unknown tool \"drain\""), "{message}");
    for client in [lying, lying_batch, silent] {
        within("shutdown", client.cancel()).await.unwrap();
    }
}
