//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) served by `registry-mcp`
//! over streamable HTTP on loopback to rmcp's real client: a task tool answers a task to a
//! client that declared the extension and an ordinary result to one that did not;
//! `tasks/get` follows it to its inlined result; `tasks/cancel` reaches the running tool;
//! another principal's task reads as unknown; a task's tool that asks its client mid-flight
//! makes the task `input_required`, with the question in `inputRequests`, and goes on when
//! `tasks/update` answers it; a tool declared `task = "required"` is -32021 without the
//! extension.

use crate::mcp_support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_support::*;
use registry_core::host::Elicitation;
use registry_core::task::TaskLimits;
use registry_core::{DynamicTool, Registry, Subject, ToolContext};
use registry_mcp::{HttpConfig, HttpServer, Principal, ServerOptions, Tokens};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, GetTaskResult, InputRequest, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData, ServiceExt};
use serde_json::{Value, json};

/// What `prune` asks.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Whether to delete them.
    confirm: bool,
}

/// What each question of `two_questions` asks.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Named {
    /// A name.
    name: String,
}

const ANA: &str = "token-of-ana-for-the-tasks-tests";
const BO: &str = "token-of-bo-for-the-tasks-tests";

struct Fixture {
    registry: Registry,
    started: Arc<AtomicUsize>,
    saw_cancel: Arc<AtomicUsize>,
}

fn fixture() -> Fixture {
    let started = Arc::new(AtomicUsize::new(0));
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let (on_start, on_cancel) = (started.clone(), saw_cancel.clone());
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("export", "Export the archive and say how many rows.")
                .scopes(["jobs:run"])
                .task()
                .handler(|_, _| Ok::<_, String>(json!("exported 42 rows"))),
        )
        .tool(
            DynamicTool::new("reindex", "Rebuild the index until cancelled.")
                .scopes(["jobs:run"])
                .task()
                .handler(move |ctx: &ToolContext, _| {
                    on_start.fetch_add(1, Ordering::SeqCst);
                    pollster::block_on(ctx.cancelled());
                    on_cancel.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>(json!("stopped"))
                }),
        )
        .tool(
            DynamicTool::new("nap", "Rest a moment on the server's timers, then say so.")
                .scopes(["jobs:run"])
                .task()
                .async_handler(|_, _| async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok::<_, String>(json!("rested"))
                }),
        )
        .tool(
            DynamicTool::new("prune", "Delete the old backups once the user confirms.")
                .scopes(["jobs:run"])
                .task()
                .async_handler(|ctx: ToolContext, _| async move {
                    let answer = ctx.elicit::<Confirm>("Delete 12 backups?").await;
                    Ok::<_, String>(json!(match answer {
                        Ok(Elicitation::Accepted(Confirm { confirm: true })) => "deleted",
                        Ok(_) => "kept",
                        Err(error) => return Err(error.to_string()),
                    }))
                }),
        )
        .tool(
            DynamicTool::new("two_questions", "Ask two things at once, then say both.")
                .scopes(["jobs:run"])
                .task()
                .async_handler(|ctx: ToolContext, _| async move {
                    let (first, second) = tokio::join!(
                        ctx.elicit::<Named>("First name?"),
                        ctx.elicit::<Named>("Second name?")
                    );
                    let name = |answer: Result<Elicitation<Named>, _>| match answer {
                        Ok(Elicitation::Accepted(named)) => Ok(named.name),
                        Ok(_) => Ok("-".to_owned()),
                        Err(error) => Err(format!("{error}")),
                    };
                    Ok::<_, String>(json!(format!("{} and {}", name(first)?, name(second)?)))
                }),
        )
        .tool(
            DynamicTool::new("rebuild", "Rebuild everything; only as a task.")
                .scopes(["jobs:run"])
                .task_required()
                .handler(|_, _| Ok::<_, String>(json!("rebuilt"))),
        )
        .tool(
            DynamicTool::new("broken_job", "Fail on purpose.")
                .scopes(["jobs:run"])
                .task()
                .handler(|_, _| Err::<Value, _>("the disk is full")),
        )
        .build()
        .unwrap();
    Fixture {
        registry,
        started,
        saw_cancel,
    }
}

/// The registry over streamable HTTP in process, with a token each for ana and bo.
async fn serve(registry: &Registry) -> String {
    let mut tokens = Tokens::new();
    for (token, principal) in [(ANA, "ana"), (BO, "bo")] {
        let subject = Subject::new("acme")
            .with_scopes(["jobs:run"])
            .with_principal(principal);
        tokens
            .insert(token, Principal::new(principal, subject))
            .unwrap();
    }
    let config = HttpConfig::new(tokens)
        .with_addr(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .with_options(ServerOptions::default());
    let server = HttpServer::bind(registry.clone(), config).await.unwrap();
    let url = server.url();
    tokio::spawn(server.serve());
    url
}

/// A session for `token`, declaring the tasks extension or not.
async fn connect(url: &str, token: &str, tasks: bool) -> RunningService<RoleClient, ClientConfig> {
    let mut config = ClientConfig::default();
    if tasks {
        config.capabilities = ClientCapabilities::builder().enable_tasks().build();
    }
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    within("initialize", config.serve(transport))
        .await
        .expect("the client connects")
}

async fn start(client: &RunningService<RoleClient, ClientConfig>, name: &str) -> CallToolResponse {
    within(
        "tools/call",
        client.call_tool_once(CallToolRequestParams::new(name.to_owned())),
    )
    .await
    .unwrap()
}

async fn task_id(client: &RunningService<RoleClient, ClientConfig>, name: &str) -> String {
    match start(client, name).await {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working);
            assert!(created.task.ttl_ms.is_some_and(|ttl| ttl > 0));
            created.task.task_id
        }
        other => panic!("{name}: expected a task, got {other:?}"),
    }
}

async fn get(
    client: &RunningService<RoleClient, ClientConfig>,
    id: &str,
) -> Result<GetTaskResult, ServiceError> {
    within("tasks/get", client.get_task(GetTaskParams::new(id))).await
}

/// Polls `tasks/get` until the task has ended.
async fn ended(client: &RunningService<RoleClient, ClientConfig>, id: &str) -> GetTaskResult {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let task = get(client, id).await.unwrap();
        if task.task.status().is_terminal() {
            return task;
        }
        assert!(Instant::now() < deadline, "the task {id} never ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn error_of(error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_tool_answers_a_task_followed_to_its_result() {
    let fixture = fixture();
    let url = serve(&fixture.registry).await;
    let ana = connect(&url, ANA, true).await;

    let id = task_id(&ana, "export").await;
    let done = ended(&ana, &id).await;
    match &done.task.payload {
        TaskPayload::Completed { result } => {
            assert_eq!(result["content"][0]["text"], json!("exported 42 rows"));
            assert_eq!(result["isError"], json!(false));
        }
        other => panic!("expected completed, got {other:?}"),
    }

    // An async tool runs inside the server's runtime: its Tokio timers work.
    let id = task_id(&ana, "nap").await;
    match ended(&ana, &id).await.task.payload {
        TaskPayload::Completed { result } => {
            assert_eq!(result["content"][0]["text"], json!("rested"), "{result:?}");
        }
        other => panic!("expected completed, got {other:?}"),
    }

    // A tool that returned an error is completed, with the error as the result.
    let id = task_id(&ana, "broken_job").await;
    match ended(&ana, &id).await.task.payload {
        TaskPayload::Completed { result } => {
            assert_eq!(result["isError"], json!(true));
            let text = result["content"][0]["text"].as_str().unwrap().to_owned();
            assert!(text.contains("the disk is full"), "{text}");
        }
        other => panic!("expected completed with isError, got {other:?}"),
    }

    // Unknown ids are invalid params.
    let unknown = error_of(get(&ana, "task_0").await.unwrap_err());
    assert_eq!(unknown.code.0, -32602, "{unknown:?}");
    within("shutdown", ana.cancel()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_cancel_reaches_the_running_tool() {
    let fixture = fixture();
    let url = serve(&fixture.registry).await;
    let ana = connect(&url, ANA, true).await;
    let id = task_id(&ana, "reindex").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while fixture.started.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the tool never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        get(&ana, &id).await.unwrap().task.status(),
        TaskStatus::Working
    );

    within("tasks/cancel", ana.cancel_task(CancelTaskParams::new(&id)))
        .await
        .unwrap();
    assert_eq!(ended(&ana, &id).await.task.status(), TaskStatus::Cancelled);
    while fixture.saw_cancel.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the cancel never reached the tool"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Cancelling an ended task is acknowledged again, and changes nothing.
    within("tasks/cancel", ana.cancel_task(CancelTaskParams::new(&id)))
        .await
        .unwrap();
    assert_eq!(
        get(&ana, &id).await.unwrap().task.status(),
        TaskStatus::Cancelled
    );
    within("shutdown", ana.cancel()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_extension_the_same_tool_is_an_ordinary_call() {
    let fixture = fixture();
    let url = serve(&fixture.registry).await;
    let plain = connect(&url, ANA, false).await;
    match start(&plain, "export").await {
        CallToolResponse::Complete(result) => assert_eq!(text(&result), "exported 42 rows"),
        other => panic!("expected an ordinary result, got {other:?}"),
    }
    // And the task methods need the extension: -32021.
    let refused = error_of(get(&plain, "task_0").await.unwrap_err());
    assert_eq!(refused.code.0, -32021, "{refused:?}");
    within("shutdown", plain.cancel()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principal_cannot_read_or_cancel_a_task() {
    let fixture = fixture();
    let url = serve(&fixture.registry).await;
    let ana = connect(&url, ANA, true).await;
    let bo = connect(&url, BO, true).await;
    let id = task_id(&ana, "reindex").await;

    let read = error_of(get(&bo, &id).await.unwrap_err());
    assert_eq!(read.code.0, -32602, "{read:?}");
    let never = error_of(get(&bo, "task_0").await.unwrap_err());
    assert_eq!(
        read.message.replace(&id, "X"),
        never.message.replace("task_0", "X"),
        "another's task must read as an unknown one"
    );
    let cancel = within("tasks/cancel", bo.cancel_task(CancelTaskParams::new(&id)))
        .await
        .unwrap_err();
    assert_eq!(error_of(cancel).code.0, -32602);
    assert_eq!(
        get(&ana, &id).await.unwrap().task.status(),
        TaskStatus::Working
    );
    assert_eq!(fixture.saw_cancel.load(Ordering::SeqCst), 0);

    within("tasks/cancel", ana.cancel_task(CancelTaskParams::new(&id)))
        .await
        .unwrap();
    assert_eq!(ended(&ana, &id).await.task.status(), TaskStatus::Cancelled);
    within("shutdown", ana.cancel()).await.unwrap();
    within("shutdown", bo.cancel()).await.unwrap();
}

/// Polls `tasks/get` until the task asks `count` questions; their keys and messages.
async fn asked(
    client: &RunningService<RoleClient, ClientConfig>,
    id: &str,
    count: usize,
) -> Vec<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let task = get(client, id).await.unwrap();
        if let TaskPayload::InputRequired { input_requests } = &task.task.payload {
            assert_eq!(task.task.status(), TaskStatus::InputRequired);
            if input_requests.len() == count {
                return input_requests
                    .iter()
                    .map(|(key, request)| {
                        let InputRequest::Elicitation(request) = request else {
                            panic!("expected an elicitation, got {request:?}");
                        };
                        let wire = serde_json::to_value(request).unwrap();
                        assert_eq!(wire["method"], json!("elicitation/create"), "{wire}");
                        let message = wire["params"]["message"].as_str().unwrap().to_owned();
                        (key.clone(), message)
                    })
                    .collect();
            }
        }
        assert!(
            Instant::now() < deadline,
            "the task {id} never asked {count} questions: {task:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn update(
    client: &RunningService<RoleClient, ClientConfig>,
    id: &str,
    responses: Value,
) -> Result<(), ServiceError> {
    let responses = serde_json::from_value(responses).unwrap();
    within(
        "tasks/update",
        client.update_task(UpdateTaskParams::new(id, responses)),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_question_is_asked_on_tasks_get_and_answered_by_tasks_update() {
    let fixture = fixture();
    let url = serve(&fixture.registry).await;
    let ana = connect(&url, ANA, true).await;
    let bo = connect(&url, BO, true).await;
    let id = task_id(&ana, "prune").await;
    let questions = asked(&ana, &id, 1).await;
    let (key, message) = questions[0].clone();
    assert_eq!(message, "Delete 12 backups?");

    // Another principal cannot answer: the task reads as unknown to them.
    let foreign = update(
        &bo,
        &id,
        json!({ &key: { "action": "accept", "content": { "confirm": true } } }),
    )
    .await
    .unwrap_err();
    assert_eq!(error_of(foreign).code.0, -32602);
    // A key the task does not ask under is ignored, whatever it holds (SEP-2663).
    update(&ana, &id, json!({ "q99": { "anything": true } }))
        .await
        .unwrap();
    // An answer under the asked key that is not an elicitation result is refused.
    let malformed = error_of(
        update(&ana, &id, json!({ &key: { "confirm": true } }))
            .await
            .unwrap_err(),
    );
    assert_eq!(malformed.code.0, -32602);
    assert!(
        malformed.message.contains("elicitation result"),
        "{malformed:?}"
    );
    assert_eq!(
        asked(&ana, &id, 1).await[0].0,
        key,
        "still asked after the refusals"
    );

    update(
        &ana,
        &id,
        json!({ &key: { "action": "accept", "content": { "confirm": true } } }),
    )
    .await
    .unwrap();
    match ended(&ana, &id).await.task.payload {
        TaskPayload::Completed { result } => {
            assert_eq!(result["content"][0]["text"], json!("deleted"), "{result:?}");
        }
        other => panic!("expected completed, got {other:?}"),
    }
    // After the end, an answer is refused, saying so.
    let late = error_of(
        update(&ana, &id, json!({ &key: { "action": "decline" } }))
            .await
            .unwrap_err(),
    );
    assert_eq!(late.code.0, -32602);
    assert!(late.message.contains("has ended"), "{late:?}");
    within("shutdown", ana.cancel()).await.unwrap();
    within("shutdown", bo.cancel()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_questions_at_once_are_answered_one_at_a_time() {
    let fixture = fixture();
    let url = serve(&fixture.registry).await;
    let ana = connect(&url, ANA, true).await;
    let id = task_id(&ana, "two_questions").await;
    let questions = asked(&ana, &id, 2).await;
    let (first, second) = (questions[0].0.clone(), questions[1].0.clone());
    assert_ne!(first, second);

    update(
        &ana,
        &id,
        json!({ &first: { "action": "accept", "content": { "name": "ada" } } }),
    )
    .await
    .unwrap();
    // Only the unanswered question is left, and the task still waits.
    let left = asked(&ana, &id, 1).await;
    assert_eq!(left[0].0, second);
    // Answering the first again is ignored.
    update(
        &ana,
        &id,
        json!({ &first: { "action": "accept", "content": { "name": "eve" } } }),
    )
    .await
    .unwrap();
    update(
        &ana,
        &id,
        json!({ &second: { "action": "accept", "content": { "name": "bob" } } }),
    )
    .await
    .unwrap();
    match ended(&ana, &id).await.task.payload {
        TaskPayload::Completed { result } => {
            let text = result["content"][0]["text"].as_str().unwrap().to_owned();
            assert!(text == "ada and bob" || text == "bob and ada", "{text}");
        }
        other => panic!("expected completed, got {other:?}"),
    }
    within("shutdown", ana.cancel()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_task_tool_is_refused_without_the_extension() {
    let fixture = fixture();
    let url = serve(&fixture.registry).await;
    let plain = connect(&url, ANA, false).await;
    let refused = within(
        "tools/call",
        plain.call_tool_once(CallToolRequestParams::new("rebuild")),
    )
    .await
    .unwrap_err();
    let refused = error_of(refused);
    assert_eq!(refused.code.0, -32021, "{refused:?}");
    assert_eq!(
        refused.data,
        Some(
            json!({ "requiredCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } } })
        )
    );
    within("shutdown", plain.cancel()).await.unwrap();

    // With the extension it runs, as a task.
    let ana = connect(&url, ANA, true).await;
    let id = task_id(&ana, "rebuild").await;
    assert_eq!(ended(&ana, &id).await.task.status(), TaskStatus::Completed);
    within("shutdown", ana.cancel()).await.unwrap();
}

/// N5 over HTTP: ana ends three times the total of tasks (each followed to its result), then
/// fills her share of running ones; bo's `tools/call` still gets a task, which completes:
/// ended tasks take no place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_principals_ended_tasks_leave_another_room_to_start_one() {
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("export", "Export the archive and say how many rows.")
                .scopes(["jobs:run"])
                .task()
                .handler(|_, _| Ok::<_, String>(json!("exported 42 rows"))),
        )
        .tool(
            DynamicTool::new("reindex", "Rebuild the index until cancelled.")
                .scopes(["jobs:run"])
                .task()
                .handler(|ctx: &ToolContext, _| {
                    pollster::block_on(ctx.cancelled());
                    Ok::<_, String>(json!("stopped"))
                }),
        )
        .task_limits(
            TaskLimits::new()
                .with_per_principal(2)
                .with_total(4)
                .with_ended_per_principal(3),
        )
        .build()
        .unwrap();
    let url = serve(&registry).await;
    let ana = connect(&url, ANA, true).await;
    let bo = connect(&url, BO, true).await;
    for _ in 0..12 {
        let id = task_id(&ana, "export").await;
        assert_eq!(ended(&ana, &id).await.task.status(), TaskStatus::Completed);
    }
    let running = [
        task_id(&ana, "reindex").await,
        task_id(&ana, "reindex").await,
    ];
    match start(&ana, "reindex").await {
        CallToolResponse::Complete(refused) => {
            assert!(
                text(&refused).contains("you run 2 tasks already"),
                "{refused:?}"
            );
        }
        other => panic!("ana's third running task: expected a refusal, got {other:?}"),
    }

    let id = task_id(&bo, "export").await;
    assert_eq!(ended(&bo, &id).await.task.status(), TaskStatus::Completed);
    for id in &running {
        within("tasks/cancel", ana.cancel_task(CancelTaskParams::new(id)))
            .await
            .unwrap();
    }
    within("shutdown", ana.cancel()).await.unwrap();
    within("shutdown", bo.cancel()).await.unwrap();
}
