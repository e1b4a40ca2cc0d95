//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) served by `registry-mcp`
//! over streamable HTTP on loopback to rmcp's real client: a task tool answers a task to a
//! client that declared the extension and an ordinary result to one that did not;
//! `tasks/get` follows it to its inlined result; `tasks/cancel` reaches the running tool;
//! another principal's task reads as unknown.

mod mcp_support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_support::*;
use registry_core::{DynamicTool, Registry, Subject, ToolContext};
use registry_mcp::{HttpConfig, HttpServer, Principal, ServerOptions, Tokens};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, GetTaskResult, TaskPayload, TaskStatus,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData, ServiceExt};
use serde_json::{Value, json};

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
