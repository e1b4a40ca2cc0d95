//! MCP 2026-07-28 over real loopback HTTP, to rmcp's real client: the sealed `requestState`
//! of an approval question (altered, replayed, presented by another user, for other
//! arguments, expired: refused with -32602, and nothing runs), the `tools/list` a principal
//! gets (`cacheScope: "private"`, the same order every time, only what its token allows),
//! and `resultType` on the composed application's results.

use crate::mcp_support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_support::*;
use registry_core::{DynamicTool, Registry, Subject};
use registry_mcp::rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, ClientConfig, InputResponses,
    ListPromptsResult, PaginatedRequestParams, Prompt, ProtocolVersion, ResultType,
    ServerCapabilities, ServerConfig,
};
use registry_mcp::rmcp::service::{RequestContext, RoleClient, RunningService};
use registry_mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
use registry_mcp::{HttpConfig, HttpServer, Principal, ServerOptions, Tokens};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

const ALICE: &str = "alice-token-for-request-state-tests";
const BOB: &str = "bob-token-for-request-state-tests";
/// Bob's colleague with the `ops:read` scope only: sees fewer tools.
const CAROL: &str = "carol-token-for-request-state-tests";

/// The registry: `deploy` needs approval and counts its runs; `status` needs `ops:read`;
/// `audit_log` needs `ops:admin`.
fn registry(deploys: &Arc<AtomicUsize>) -> Registry {
    let deploys = deploys.clone();
    Registry::builder()
        .tool(
            DynamicTool::new("deploy", "Deploy the service.")
                .public()
                .parameters(json!({
                    "type": "object",
                    "properties": {"env": {"type": "string"}},
                    "required": ["env"],
                    "additionalProperties": false,
                }))
                .destructive()
                .needs_approval()
                .handler(move |_ctx, args: Value| {
                    deploys.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>(json!(format!("deployed {}", args["env"].as_str().unwrap())))
                }),
        )
        .tool(
            DynamicTool::new("status", "The service's status.")
                .scopes(["ops:read"])
                .read_only()
                .handler(|_ctx, _args| Ok::<_, String>(json!("green"))),
        )
        .tool(
            DynamicTool::new("audit_log", "Read the audit log.")
                .scopes(["ops:admin"])
                .read_only()
                .handler(|_ctx, _args| Ok::<_, String>(json!([]))),
        )
        .build()
        .unwrap()
}

/// The application's part: one prompt, its result read from JSON (no `resultType`).
#[derive(Clone)]
struct Prompts;

impl ServerHandler for Prompts {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_prompts().build())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let result: ListPromptsResult =
            serde_json::from_value(json!({"prompts": [{"name": "hello"}]})).unwrap();
        assert_eq!(
            result.result_type, None,
            "read from JSON without resultType"
        );
        Ok(result)
    }
}

/// Serves the registry (and [`Prompts`]) over streamable HTTP on loopback, with three
/// tokens of tenant `acme`: alice and bob with `ops:read` and `ops:admin`, carol with
/// `ops:read`.
async fn serve(registry: Registry, options: ServerOptions) -> String {
    let mut tokens = Tokens::new();
    for (token, id, scopes) in [
        (ALICE, "alice", &["ops:read", "ops:admin"][..]),
        (BOB, "bob", &["ops:read", "ops:admin"][..]),
        (CAROL, "carol", &["ops:read"][..]),
    ] {
        let subject = Subject::new("acme")
            .with_agent("release-bot")
            .with_principal(id)
            .with_scopes(scopes.iter().copied());
        tokens.insert(token, Principal::new(id, subject)).unwrap();
    }
    let config = HttpConfig::new(tokens)
        .with_addr(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .with_options(options.with_poll_interval(Duration::from_secs(3600)));
    let server = HttpServer::bind_with(registry, config, |tools| tools.with_handler(Prompts))
        .await
        .unwrap();
    let url = server.url();
    tokio::spawn(server.serve());
    url
}

/// A 2026-07-28 client of `token` (stateless: each request stands alone).
async fn client(url: &str, token: &str) -> RunningService<RoleClient, ClientConfig> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    within(
        "discover",
        eliciting().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("a 2026-07-28 client connects")
}

fn deploy(env: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("deploy").with_arguments(object(json!({"env": env})))
}

/// Calls `deploy` to `env`: the `input_required` result's state.
async fn ask(client: &RunningService<RoleClient, ClientConfig>, env: &str) -> String {
    let first = within("tools/call", client.call_tool_once(deploy(env)))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(input) = first else {
        panic!("an input_required result was expected: {first:?}");
    };
    assert!(input.input_requests.unwrap().contains_key("approval"));
    input.request_state.expect("a request state")
}

/// The retry of `deploy` to `env`, approving, with `state`.
fn approving(env: &str, state: &str) -> CallToolRequestParams {
    let answer: InputResponses = [(
        "approval".to_owned(),
        json!({"action": "accept", "content": {"approve": true}}),
    )]
    .into();
    deploy(env)
        .with_input_responses(answer)
        .with_request_state(state.to_owned())
}

/// The -32602 message a retry gets.
async fn refused(
    client: &RunningService<RoleClient, ClientConfig>,
    retry: CallToolRequestParams,
) -> String {
    let error = within("tools/call", client.call_tool_once(retry))
        .await
        .expect_err("the retry is refused");
    invalid_params(error)
}

async fn ran(client: &RunningService<RoleClient, ClientConfig>, retry: CallToolRequestParams) {
    let done = within("tools/call", client.call_tool_once(retry))
        .await
        .unwrap();
    let CallToolResponse::Complete(done) = done else {
        panic!("a result was expected: {done:?}");
    };
    assert_eq!(text(&done), "deployed production");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_state_opens_once_for_its_principal_and_its_call_only() {
    let deploys = Arc::new(AtomicUsize::new(0));
    let url = serve(registry(&deploys), ServerOptions::default()).await;
    let alice = client(&url, ALICE).await;
    let bob = client(&url, BOB).await;
    let state = ask(&alice, "production").await;

    // Altered (one character changed, one appended): it does not verify.
    let mut changed = state.clone().into_bytes();
    changed[4] = if changed[4] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    for forged in [changed, format!("{state}-TAMPERED")] {
        let message = refused(&alice, approving("production", &forged)).await;
        assert!(message.contains("does not verify"), "{message}");
    }
    // Presented by another user of the same client app and tenant: it does not verify.
    let message = refused(&bob, approving("production", &state)).await;
    assert!(message.contains("another user"), "{message}");
    // For other arguments than the call that was asked about: it does not verify.
    let message = refused(&alice, approving("staging", &state)).await;
    assert!(message.contains("another request"), "{message}");
    assert_eq!(deploys.load(Ordering::SeqCst), 0, "nothing ran");

    // None of that used it up: its own user, for its own call, runs it once.
    ran(&alice, approving("production", &state)).await;
    assert_eq!(deploys.load(Ordering::SeqCst), 1);
    // Replayed: refused, and nothing runs again.
    let message = refused(&alice, approving("production", &state)).await;
    assert!(message.contains("used already"), "{message}");
    assert_eq!(deploys.load(Ordering::SeqCst), 1, "ran exactly once");
    for client in [alice, bob] {
        within("shutdown", client.cancel()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_state_past_its_ttl_is_refused() {
    let deploys = Arc::new(AtomicUsize::new(0));
    let options = ServerOptions::default().with_request_states(Duration::from_millis(200), 100);
    let url = serve(registry(&deploys), options).await;
    let alice = client(&url, ALICE).await;
    let state = ask(&alice, "production").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let message = refused(&alice, approving("production", &state)).await;
    assert!(message.contains("expired"), "{message}");
    assert_eq!(deploys.load(Ordering::SeqCst), 0, "nothing ran");
    within("shutdown", alice.cancel()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_is_private_in_one_order_and_only_what_the_token_allows() {
    let deploys = Arc::new(AtomicUsize::new(0));
    let url = serve(registry(&deploys), ServerOptions::default()).await;
    let alice = client(&url, ALICE).await;
    let carol = client(&url, CAROL).await;

    let mut seen = Vec::new();
    for (client, expected) in [
        (&alice, vec!["audit_log", "deploy", "status"]),
        (&carol, vec!["deploy", "status"]),
    ] {
        for _ in 0..2 {
            let page = within("tools/list", client.list_tools(None)).await.unwrap();
            assert_eq!(page.cache_scope, Some(CacheScope::Private), "{page:?}");
            assert_eq!(page.ttl_ms, Some(0));
            assert_eq!(page.result_type, Some(ResultType::COMPLETE));
            assert_eq!(names(&page.tools), expected);
            seen.push(page.tools);
        }
    }
    // The same principal gets the same list, byte for byte, every time.
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[2], seen[3]);
    for client in [alice, carol] {
        within("shutdown", client.cancel()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_applications_results_carry_a_result_type() {
    let deploys = Arc::new(AtomicUsize::new(0));
    let url = serve(registry(&deploys), ServerOptions::default()).await;
    let alice = client(&url, ALICE).await;
    let prompts = within("prompts/list", alice.list_prompts(None))
        .await
        .unwrap();
    assert_eq!(prompts.result_type, Some(ResultType::COMPLETE));
    let names: Vec<&str> = prompts
        .prompts
        .iter()
        .map(|p: &Prompt| p.name.as_str())
        .collect();
    assert_eq!(names, ["hello"]);
    within("shutdown", alice.cancel()).await.unwrap();
}

/// Issue 45, N6: the store of used requestStates has a share per principal. Alice approves
/// twice as many calls as her share while the store has room for all of them: past her share
/// she is refused (saying so), and the store keeps room, so Bob's approval retry still runs.
/// Before the share, Alice's states filled the whole store and Bob was refused ("too many
/// requestStates are in use on this server").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_principal_cannot_fill_the_store_of_used_request_states() {
    let deploys = Arc::new(AtomicUsize::new(0));
    let options = ServerOptions::default()
        .with_request_states(Duration::from_secs(600), 6)
        .with_request_state_capacity_per_principal(3);
    let url = serve(registry(&deploys), options).await;
    let alice = client(&url, ALICE).await;
    let bob = client(&url, BOB).await;
    for round in 0..6 {
        let state = ask(&alice, "production").await;
        if round < 3 {
            ran(&alice, approving("production", &state)).await;
        } else {
            let message = refused(&alice, approving("production", &state)).await;
            assert!(message.contains("of this user are in use"), "{message}");
        }
    }
    assert_eq!(deploys.load(Ordering::SeqCst), 3);
    let state = ask(&bob, "production").await;
    ran(&bob, approving("production", &state)).await;
    assert_eq!(deploys.load(Ordering::SeqCst), 4);
    for client in [alice, bob] {
        within("shutdown", client.cancel()).await.unwrap();
    }
}
