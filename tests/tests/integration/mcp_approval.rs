//! Calls that need a person's approval, served by `registry-mcp` to rmcp's real client: the
//! question asked with elicitation (`elicitation/create`, or an `input_required` result on
//! protocol 2026-07-28), what accept, decline, cancel and no answer do, and what a client
//! that cannot ask anyone gets. Every tool counts its executions: a call that was not
//! approved must not have run.

use crate::mcp_support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_support::*;
use registry_core::{
    DynamicTool, Registry, Subject,
    approval::{ApprovalState, MemoryApprovalStore},
    gate::{CallRequest, Decision},
};
use registry_mcp::{HttpConfig, HttpServer, McpServer, Principal, ServerOptions, Tokens};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, InputResponses, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, ServiceExt};
use serde_json::{Value, json};

/// What the test's person answers.
#[derive(Clone, Copy, Debug)]
enum Reply {
    /// Accept, with `{"approve": <bool>}`.
    Accept(bool),
    /// Accept, with no content.
    AcceptEmpty,
    Decline,
    Cancel,
    /// The client fails the request.
    Fail,
    /// No answer for a minute.
    Silence,
}

/// A client whose user answers every approval question with `reply`, remembering each
/// question (message and requested schema).
#[derive(Clone)]
struct Person {
    reply: Reply,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Person {
    fn new(reply: Reply) -> Person {
        Person {
            reply,
            asked: Arc::default(),
        }
    }

    fn questions(&self) -> Vec<(String, Value)> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        eliciting()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.lock().unwrap().push(form_question(request));
        match self.reply {
            Reply::Accept(approve) => Ok(ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({ "approve": approve }))),
            Reply::AcceptEmpty => Ok(ElicitResult::new(ElicitationAction::Accept)),
            Reply::Decline => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Reply::Cancel => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Reply::Fail => Err(ErrorData::internal_error("no one is at the keyboard", None)),
            Reply::Silence => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(ElicitResult::new(ElicitationAction::Decline))
            }
        }
    }
}

/// A registry with `deploy` (needs approval), `restart` (approval required by the call policy
/// for production only) and `status` (free), each counting its executions; and its approval
/// store.
struct Tools {
    registry: Registry,
    store: Arc<MemoryApprovalStore>,
    deploys: Arc<AtomicUsize>,
    restarts: Arc<AtomicUsize>,
}

fn tools() -> Tools {
    let deploys = Arc::new(AtomicUsize::new(0));
    let restarts = Arc::new(AtomicUsize::new(0));
    let store = Arc::new(MemoryApprovalStore::new());
    let env_parameters = json!({
        "type": "object",
        "properties": {"env": {"type": "string"}},
        "required": ["env"],
        "additionalProperties": false,
    });
    let counted = |counter: &Arc<AtomicUsize>, verb: &'static str| {
        let counter = counter.clone();
        move |_ctx: &registry_core::ToolContext, args: Value| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!(format!("{verb} {}", args["env"].as_str().unwrap())))
        }
    };
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("deploy", "Deploy the service.")
                .public()
                .parameters(env_parameters.clone())
                .destructive()
                .needs_approval()
                .handler(counted(&deploys, "deployed")),
        )
        .tool(
            DynamicTool::new("restart", "Restart the service.")
                .public()
                .parameters(env_parameters)
                .handler(counted(&restarts, "restarted")),
        )
        .tool(
            DynamicTool::new("status", "The service's status.")
                .public()
                .read_only()
                .handler(|_ctx, _args| Ok::<_, String>(json!("green"))),
        )
        .call_policy(|call: &CallRequest<'_>| {
            if call.tool_name() == "restart" && call.arguments()["env"] == json!("production") {
                Decision::RequireApproval("a production restart".to_owned())
            } else {
                Decision::Allow
            }
        })
        .approval_store(store.clone())
        .build()
        .unwrap();
    Tools {
        registry,
        store,
        deploys,
        restarts,
    }
}

impl Tools {
    /// The state of the one approval request made for `tool`.
    fn state_of(&self, tool: &str) -> ApprovalState {
        let requests: Vec<_> = self
            .store
            .requests()
            .into_iter()
            .filter(|(request, _)| request.tool_name() == tool)
            .collect();
        assert_eq!(requests.len(), 1, "one request for {tool}: {requests:?}");
        requests[0].1.clone()
    }
}

fn server(registry: &Registry, options: ServerOptions) -> McpServer {
    McpServer::new(
        registry.clone(),
        options.with_poll_interval(Duration::from_secs(3600)),
    )
    .unwrap()
}

/// A client with an old protocol (`initialize`) connected in process.
async fn connect<H: ClientHandler>(
    registry: &Registry,
    options: ServerOptions,
    handler: H,
) -> RunningService<RoleClient, H> {
    let client_io = spawn_server(registry, options);
    within("initialize", handler.serve(tokio::io::split(client_io)))
        .await
        .expect("the client connects")
}

/// A 2026-07-28 client (`server/discover`, no `initialize`) connected in process.
async fn connect_modern<H: ClientHandler>(
    registry: &Registry,
    handler: H,
) -> RunningService<RoleClient, H> {
    let client_io = spawn_server(registry, ServerOptions::default());
    within(
        "discover",
        handler.serve_with_lifecycle(
            tokio::io::split(client_io),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("a 2026-07-28 client connects")
}

/// Serves `registry` in process, for the subject `acme`/`release-bot` as client `test`; the
/// client's end of the pipe.
fn spawn_server(registry: &Registry, options: ServerOptions) -> tokio::io::DuplexStream {
    let server = server(registry, options);
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_io);
    let subject = Subject::new("acme").with_agent("release-bot");
    tokio::spawn(async move { server.serve_io("test", subject, read, write).await });
    client_io
}

/// Calls `name` with `arguments` through the client, which drives `input_required` rounds.
async fn call_through<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    arguments: Value,
) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(object(arguments));
    within("tools/call", client.call_tool(params))
        .await
        .expect("tools/call succeeds")
}

fn assert_declined(result: &CallToolResult) {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = text(result);
    assert!(
        text.contains("denied") && text.contains("declined"),
        "{text}"
    );
    assert!(text.contains("Nothing was done"), "{text}");
}

#[tokio::test]
async fn an_accepted_question_runs_the_call_once_and_answers_with_its_result() {
    let tools = tools();
    let person = Person::new(Reply::Accept(true));
    let client = connect(&tools.registry, ServerOptions::default(), person.clone()).await;

    let result = call(&client, "deploy", json!({"env": "production"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text(&result), "deployed production");
    assert_eq!(tools.deploys.load(Ordering::SeqCst), 1, "ran exactly once");

    // The person was asked once, about this tool and these arguments, with one checkbox.
    let questions = person.questions();
    assert_eq!(questions.len(), 1);
    let (message, schema) = &questions[0];
    assert!(message.contains("\"deploy\""), "{message}");
    assert!(message.contains("production"), "{message}");
    assert!(message.contains("needing approval"), "{message}");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["approve"]["type"], "boolean");
    assert_eq!(schema["properties"]["approve"]["default"], false);
    assert_eq!(schema["required"], json!(["approve"]));
    assert!(
        matches!(
            tools.state_of("deploy"),
            ApprovalState::Approved { by: Some(ref by), edited: false } if by == "test"
        ),
        "{:?}",
        tools.state_of("deploy")
    );

    // A tool without approval is not asked about.
    let status = call(&client, "status", json!({})).await.unwrap();
    assert_eq!(text(&status), "green");
    assert_eq!(person.questions().len(), 1);
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn the_question_names_the_tool_the_arguments_and_the_policys_reason() {
    let tools = tools();
    let person = Person::new(Reply::Accept(true));
    let client = connect(&tools.registry, ServerOptions::default(), person.clone()).await;

    // Staging passes the call policy: no question.
    let staging = call(&client, "restart", json!({"env": "staging"}))
        .await
        .unwrap();
    assert_eq!(text(&staging), "restarted staging");
    assert!(person.questions().is_empty());

    let production = call(&client, "restart", json!({"env": "production"}))
        .await
        .unwrap();
    assert_eq!(text(&production), "restarted production");
    assert_eq!(tools.restarts.load(Ordering::SeqCst), 2);
    let questions = person.questions();
    assert_eq!(questions.len(), 1);
    assert_eq!(
        questions[0].0,
        r#"Allow "restart" with {"env":"production"}? (a production restart)"#
    );
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_declined_question_is_an_error_result_and_nothing_runs() {
    let tools = tools();
    let person = Person::new(Reply::Decline);
    let client = connect(&tools.registry, ServerOptions::default(), person.clone()).await;

    let result = call(&client, "deploy", json!({"env": "production"}))
        .await
        .unwrap();
    assert_declined(&result);
    assert_eq!(tools.deploys.load(Ordering::SeqCst), 0, "did not run");
    assert_eq!(person.questions().len(), 1);
    assert!(
        matches!(
            tools.state_of("deploy"),
            ApprovalState::Denied { by: Some(ref by), ref reason } if by == "test" && reason == "the user declined"
        ),
        "{:?}",
        tools.state_of("deploy")
    );
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_cancelled_question_is_an_error_result_and_nothing_runs() {
    let tools = tools();
    let client = connect(
        &tools.registry,
        ServerOptions::default(),
        Person::new(Reply::Cancel),
    )
    .await;

    let result = call(&client, "deploy", json!({"env": "production"}))
        .await
        .unwrap();
    assert_declined(&result);
    assert_eq!(tools.deploys.load(Ordering::SeqCst), 0, "did not run");
    assert!(matches!(
        tools.state_of("deploy"),
        ApprovalState::Denied { .. }
    ));
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn accepting_without_ticking_approve_approves_nothing() {
    for reply in [Reply::Accept(false), Reply::AcceptEmpty] {
        let tools = tools();
        let client = connect(
            &tools.registry,
            ServerOptions::default(),
            Person::new(reply),
        )
        .await;
        let result = call(&client, "deploy", json!({"env": "production"}))
            .await
            .unwrap();
        assert_declined(&result);
        assert_eq!(
            tools.deploys.load(Ordering::SeqCst),
            0,
            "{reply:?}: did not run"
        );
        within("shutdown", client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn a_question_that_fails_or_is_not_answered_in_time_denies_the_call() {
    let tools = tools();
    let client = connect(
        &tools.registry,
        ServerOptions::default(),
        Person::new(Reply::Fail),
    )
    .await;
    let result = call(&client, "deploy", json!({"env": "production"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    let text_of_failure = text(&result);
    assert!(
        text_of_failure.contains("could not be obtained")
            && text_of_failure.contains("nothing was done"),
        "{text_of_failure}"
    );
    assert_eq!(tools.deploys.load(Ordering::SeqCst), 0, "did not run");
    assert!(matches!(
        tools.state_of("deploy"),
        ApprovalState::Denied { ref reason, .. } if reason.contains("could not be obtained")
    ));
    within("shutdown", client.cancel()).await.unwrap();

    let tools = self::tools();
    let options = ServerOptions::default().with_approval_timeout(Duration::from_millis(200));
    let client = connect(&tools.registry, options, Person::new(Reply::Silence)).await;
    let result = call(&client, "deploy", json!({"env": "production"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("no one answered"),
        "{}",
        text(&result)
    );
    assert_eq!(tools.deploys.load(Ordering::SeqCst), 0, "did not run");
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_client_without_elicitation_is_told_it_cannot_approve_and_nothing_runs() {
    let tools = tools();
    // `()` declares no capability at all.
    let client = connect(&tools.registry, ServerOptions::default(), ()).await;

    let result = call(&client, "deploy", json!({"env": "production"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    let text = text(&result);
    assert!(text.contains("\"deploy\""), "{text}");
    assert!(text.contains("needs a person's approval"), "{text}");
    assert!(text.contains("this MCP client cannot give"), "{text}");
    assert!(text.contains("nothing was done"), "{text}");
    assert_eq!(tools.deploys.load(Ordering::SeqCst), 0, "did not run");
    // Denied, not left pending: it can never run later, unseen.
    assert!(
        matches!(
            tools.state_of("deploy"),
            ApprovalState::Denied { ref reason, .. } if reason.contains("cannot ask a person")
        ),
        "{:?}",
        tools.state_of("deploy")
    );
    // Calls that need no approval work as ever.
    assert_eq!(
        mcp_support::text(&call(&client, "status", json!({})).await.unwrap()),
        "green"
    );
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_2026_07_28_client_is_asked_in_an_input_required_result() {
    // Accepted: the client's user is asked through the client's own handler, the client
    // retries with the answer, and the call runs once.
    let tools = tools();
    let person = Person::new(Reply::Accept(true));
    let client = connect_modern(&tools.registry, person.clone()).await;
    let result = call_through(&client, "deploy", json!({"env": "production"})).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text(&result), "deployed production");
    assert_eq!(tools.deploys.load(Ordering::SeqCst), 1, "ran exactly once");
    let questions = person.questions();
    assert_eq!(questions.len(), 1);
    assert!(questions[0].0.contains("\"deploy\"") && questions[0].0.contains("production"));
    within("shutdown", client.cancel()).await.unwrap();

    // Declined: not run.
    let tools = self::tools();
    let client = connect_modern(&tools.registry, Person::new(Reply::Decline)).await;
    let result = call_through(&client, "deploy", json!({"env": "production"})).await;
    assert_declined(&result);
    assert_eq!(tools.deploys.load(Ordering::SeqCst), 0, "did not run");
    within("shutdown", client.cancel()).await.unwrap();

    // Without elicitation: told so, not run.
    let tools = self::tools();
    let client = connect_modern(&tools.registry, ()).await;
    let result = call_through(&client, "deploy", json!({"env": "production"})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("this MCP client cannot give"),
        "{}",
        text(&result)
    );
    assert_eq!(tools.deploys.load(Ordering::SeqCst), 0, "did not run");
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn an_answer_in_a_retried_call_counts_once_and_only_for_its_question() {
    let tools = tools();
    let client = connect_modern(&tools.registry, Person::new(Reply::Accept(true))).await;
    let params =
        CallToolRequestParams::new("deploy").with_arguments(object(json!({"env": "production"})));

    // A made-up state is refused.
    let forged = params
        .clone()
        .with_request_state("apr_00000000000000000000000000000000");
    let error = within("tools/call", client.call_tool_once(forged))
        .await
        .unwrap_err();
    assert!(invalid_params(error).contains("requestState"));

    // Driving the rounds by hand: the question, then the answer.
    let first = within("tools/call", client.call_tool_once(params.clone()))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(input) = first else {
        panic!("an input_required result was expected: {first:?}");
    };
    let state = input.request_state.clone().expect("a request state");
    assert!(
        input
            .input_requests
            .as_ref()
            .unwrap()
            .contains_key("approval")
    );
    let answer: InputResponses = [(
        "approval".to_owned(),
        json!({"action": "accept", "content": {"approve": true}}),
    )]
    .into();
    let retry = params
        .clone()
        .with_input_responses(answer)
        .with_request_state(state);
    let done = within("tools/call", client.call_tool_once(retry.clone()))
        .await
        .unwrap();
    let CallToolResponse::Complete(done) = done else {
        panic!("a result was expected: {done:?}");
    };
    assert_eq!(text(&done), "deployed production");

    // The same answer again runs nothing.
    let error = within("tools/call", client.call_tool_once(retry))
        .await
        .unwrap_err();
    assert!(invalid_params(error).contains("requestState"));
    assert_eq!(tools.deploys.load(Ordering::SeqCst), 1, "ran exactly once");
    within("shutdown", client.cancel()).await.unwrap();
}

/// The registry served over streamable HTTP in process, with one token for `acme`.
async fn http(registry: &Registry) -> String {
    const TOKEN: &str = "release-token-for-approval-tests";
    let mut tokens = Tokens::new();
    let subject = Subject::new("acme").with_agent("release-bot");
    tokens
        .insert(TOKEN, Principal::new("release", subject))
        .unwrap();
    let config = HttpConfig::new(tokens)
        .with_addr(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .with_options(ServerOptions::default().with_poll_interval(Duration::from_secs(3600)));
    let server = HttpServer::bind(registry.clone(), config).await.unwrap();
    let url = server.url();
    tokio::spawn(server.serve());
    url
}

fn http_transport(url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header("release-token-for-approval-tests"),
    )
}

#[tokio::test]
async fn over_http_the_question_reaches_old_and_new_clients_alike() {
    let tools = tools();
    let url = http(&tools.registry).await;

    // An old-protocol session: `elicitation/create` on the call's response stream.
    let person = Person::new(Reply::Accept(true));
    let legacy = within("initialize", person.clone().serve(http_transport(&url)))
        .await
        .expect("the client connects");
    let result = call(&legacy, "deploy", json!({"env": "production"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "deployed production");
    assert_eq!(person.questions().len(), 1);
    within("shutdown", legacy.cancel()).await.unwrap();

    // A 2026-07-28 client: an `input_required` result, and a retried call.
    let person = Person::new(Reply::Decline);
    let modern = within(
        "discover",
        person.clone().serve_with_lifecycle(
            http_transport(&url),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("a 2026-07-28 client connects");
    let result = call_through(&modern, "deploy", json!({"env": "staging"})).await;
    assert_declined(&result);
    assert_eq!(person.questions().len(), 1);
    assert!(person.questions()[0].0.contains("staging"));
    assert_eq!(
        tools.deploys.load(Ordering::SeqCst),
        1,
        "only the approved call ran"
    );
    within("shutdown", modern.cancel()).await.unwrap();
}

/// An approval store that keeps requests in memory and cannot decide them, failing with the
/// kind of text a database driver gives: an address and a user name.
struct FailingDecisions(MemoryApprovalStore);

const STORE_FAILURE: &str = "could not reach postgres://registry_admin@db.internal.example:5432/registry: connection refused";

impl registry_core::approval::ApprovalStore for FailingDecisions {
    fn insert<'a>(
        &'a self,
        request: &'a registry_core::approval::ApprovalRequest,
    ) -> registry_core::definition::BoxFuture<'a, Result<(), registry_core::gate::StoreError>> {
        self.0.insert(request)
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> registry_core::definition::BoxFuture<
        'a,
        Result<
            Option<(registry_core::approval::ApprovalRequest, ApprovalState)>,
            registry_core::gate::StoreError,
        >,
    > {
        self.0.get(id)
    }

    fn decide<'a>(
        &'a self,
        _id: &'a str,
        _state: ApprovalState,
    ) -> registry_core::definition::BoxFuture<
        'a,
        Result<registry_core::approval::Transition, registry_core::gate::StoreError>,
    > {
        Box::pin(std::future::ready(Err(
            registry_core::gate::StoreError::new(STORE_FAILURE),
        )))
    }

    fn pending_count<'a>(
        &'a self,
        request: &'a registry_core::approval::ApprovalRequest,
    ) -> registry_core::definition::BoxFuture<'a, Result<usize, registry_core::gate::StoreError>>
    {
        self.0.pending_count(request)
    }
}

#[tokio::test]
async fn a_failing_approval_store_is_not_named_to_the_client() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("deploy", "Deploy the service.")
                .public()
                .parameters(
                    json!({"type": "object", "properties": {"env": {"type": "string"}},
                                   "required": ["env"], "additionalProperties": false}),
                )
                .destructive()
                .needs_approval()
                .handler(move |_ctx, _args| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>(json!("deployed"))
                }),
        )
        .approval_store(Arc::new(FailingDecisions(MemoryApprovalStore::new())))
        .build()
        .unwrap();
    let person = Person::new(Reply::Accept(true));
    let client = connect(&registry, ServerOptions::default(), person.clone()).await;
    let result = call(&client, "deploy", json!({"env": "production"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = text(&result);
    for secret in [
        "postgres",
        "db.internal",
        "registry_admin",
        "5432",
        "connection refused",
    ] {
        assert!(!text.contains(secret), "{secret:?} in {text}");
    }
    assert!(text.contains("approval store cannot be reached"), "{text}");
    assert_eq!(person.questions().len(), 1, "the person was asked");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");
    within("shutdown", client.cancel()).await.unwrap();
}

/// Issue 45 (L4): a request decided elsewhere while its question waits (an operator's
/// console writing to the shared store) is answered "decided elsewhere", without who decided
/// it; who did stays in the state and the log.
#[tokio::test]
async fn a_call_decided_elsewhere_does_not_name_who_decided() {
    use registry_core::approval::ApprovalStore;

    let tools = tools();
    let person = Person::new(Reply::Silence);
    let client = connect(&tools.registry, ServerOptions::default(), person.clone()).await;
    let calling = tokio::spawn({
        let peer = client.peer().clone();
        async move {
            let params = CallToolRequestParams::new("deploy")
                .with_arguments(object(json!({"env": "production"})));
            peer.call_tool(params).await
        }
    });
    let id = loop {
        let pending = tools.store.requests();
        if let Some((request, _)) = pending.first() {
            break request.id().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let denied = ApprovalState::Denied {
        by: Some("ana@ops.example.com".to_owned()),
        reason: "change freeze".to_owned(),
    };
    tools.store.decide(&id, denied).await.unwrap();
    let result = within("tools/call", calling).await.unwrap().unwrap();
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = text(&result);
    assert!(text.contains("decided elsewhere"), "{text}");
    assert!(!text.contains("ana"), "{text}");
    assert!(!text.contains("ops.example.com"), "{text}");
    assert_eq!(tools.deploys.load(Ordering::SeqCst), 0, "nothing ran");
    within("shutdown", client.cancel()).await.unwrap();
}
