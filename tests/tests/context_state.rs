//! What a tool knows of its call through `ToolContext`: run id, call id, tool name, tenant,
//! granted scopes; and typed application state registered on the registry, reached from sync
//! and async tools, and used to scope data by tenant.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use registry_core::{ErrorKind, Registry, RegistryBuilder, Subject, ToolCall, ToolContext, tool};
use registry_tests::success;
use serde_json::{Value, json};

/// Shared application state: a counter of calls.
#[derive(Default)]
struct Counter {
    calls: AtomicUsize,
}

/// Shared application state: rows per tenant, like a database.
struct Store {
    rows: HashMap<&'static str, Vec<&'static str>>,
}

/// Say who is calling.
#[tool(public)]
fn whoami(ctx: &ToolContext) -> Value {
    context_json(ctx)
}

/// Say who is calling, under another name.
#[tool(public, name = "who_is_it")]
async fn whoami_async(
    /// Anything.
    note: Option<String>,
    ctx: &ToolContext,
) -> Value {
    let mut value = context_json(ctx);
    value["note"] = json!(note);
    value
}

fn context_json(ctx: &ToolContext) -> Value {
    json!({
        "run_id": ctx.run_id(),
        "call_id": ctx.call_id(),
        "tool_name": ctx.tool_name(),
        "tenant": ctx.tenant(),
        "scopes": ctx.subject().scopes().collect::<Vec<_>>(),
        "may_read": ctx.has_scope("build:read"),
        "may_write": ctx.has_scope("build:write"),
        "agent": ctx.subject().agent(),
    })
}

/// Count this call.
#[tool(public)]
fn count(ctx: &ToolContext) -> Result<usize, String> {
    let counter = ctx.state::<Counter>().ok_or("no counter is configured")?;
    Ok(counter.calls.fetch_add(1, Ordering::SeqCst) + 1)
}

/// Count this call, asynchronously.
#[tool(public)]
async fn count_later(ctx: &ToolContext) -> Result<usize, String> {
    std::future::ready(()).await;
    let counter = ctx.state::<Counter>().ok_or("no counter is configured")?;
    Ok(counter.calls.fetch_add(1, Ordering::SeqCst) + 1)
}

/// List the caller's rows, those starting with `prefix` if given.
#[tool(scopes = "data:read", read_only)]
fn list_rows(
    /// Only rows starting with this.
    prefix: Option<String>,
    ctx: &ToolContext,
) -> Result<Vec<String>, String> {
    let store = ctx.state::<Store>().ok_or("no store is configured")?;
    let rows = store.rows.get(ctx.tenant()).cloned().unwrap_or_default();
    Ok(rows
        .into_iter()
        .filter(|row| {
            prefix
                .as_deref()
                .is_none_or(|prefix| row.starts_with(prefix))
        })
        .map(str::to_owned)
        .collect())
}

fn builder() -> RegistryBuilder {
    Registry::builder().declared_in(["context_state"])
}

fn registry() -> Registry {
    builder()
        .state(Counter::default())
        .state(Store {
            rows: HashMap::from([
                ("tenant-a", vec!["a-invoice-1", "a-invoice-2", "a-order-1"]),
                ("tenant-b", vec!["b-invoice-1"]),
            ]),
        })
        .build()
        .unwrap()
}

#[test]
fn the_context_tells_the_run_the_call_the_tool_and_the_subject() {
    let registry = registry();
    let subject = Subject::new("tenant-a")
        .with_scopes(["build:read", "data:read"])
        .with_agent("helper");
    let run = registry.open_run("run-7", &subject);
    assert_eq!(
        success(run.call_blocking(ToolCall::new("call_1", "whoami", json!({})))),
        json!({
            "run_id": "run-7",
            "call_id": "call_1",
            "tool_name": "whoami",
            "tenant": "tenant-a",
            "scopes": ["build:read", "data:read"],
            "may_read": true,
            "may_write": false,
            "agent": "helper",
        })
    );
    // An async tool, under its declared name, awaited and called blocking.
    let expected = json!({
        "run_id": "run-7",
        "call_id": "call_2",
        "tool_name": "who_is_it",
        "tenant": "tenant-a",
        "scopes": ["build:read", "data:read"],
        "may_read": true,
        "may_write": false,
        "agent": "helper",
        "note": "hi",
    });
    let call = ToolCall::new("call_2", "who_is_it", json!({"note": "hi"}));
    assert_eq!(
        success(pollster::block_on(run.call(call.clone()))),
        expected
    );
    assert_eq!(success(run.call_blocking(call)), expected);

    // Another run, another subject: its own context.
    let other = registry.open_run("run-8", &Subject::new("tenant-b"));
    assert_eq!(
        success(other.call_blocking(ToolCall::new("x", "whoami", json!({})))),
        json!({
            "run_id": "run-8",
            "call_id": "x",
            "tool_name": "whoami",
            "tenant": "tenant-b",
            "scopes": [],
            "may_read": false,
            "may_write": false,
            "agent": null,
        })
    );
}

#[test]
fn a_context_outside_a_run_has_no_tenant_scopes_or_state() {
    let ctx = ToolContext::new("call_1", "whoami");
    assert_eq!(ctx.run_id(), "");
    assert_eq!(ctx.call_id(), "call_1");
    assert_eq!(ctx.tool_name(), "whoami");
    assert_eq!(ctx.tenant(), "");
    assert!(!ctx.has_scope("build:read"));
    assert!(ctx.state::<Counter>().is_none());
    // A tool is only ever called through a run, whose context carries the registry's state:
    // a tool missing its state is `missing_state_is_the_tools_own_error`.
}

#[test]
fn typed_state_is_shared_by_sync_and_async_tools_and_runs() {
    let registry = registry();
    let first = registry.open_run("run-1", &Subject::new("tenant-a"));
    let second = registry.open_run("run-2", &Subject::new("tenant-b"));
    assert_eq!(
        success(first.call_blocking(ToolCall::new("1", "count", json!({})))),
        json!(1)
    );
    assert_eq!(
        success(second.call_blocking(ToolCall::new("2", "count_later", json!({})))),
        json!(2)
    );
    assert_eq!(
        success(pollster::block_on(first.call(ToolCall::new(
            "3",
            "count_later",
            json!({})
        )))),
        json!(3)
    );
    assert_eq!(
        success(pollster::block_on(second.call(ToolCall::new(
            "4",
            "count",
            json!({})
        )))),
        json!(4)
    );
    // Clones of the registry share it too.
    let clone = registry.clone();
    let third = clone.open_run("run-3", &Subject::new("tenant-c"));
    assert_eq!(
        success(third.call_blocking(ToolCall::new("5", "count", json!({})))),
        json!(5)
    );
    // Another registry has its own (the second value of one type replaces the first).
    let other = registry_with_counter(100);
    let run = other.open_run("run-4", &Subject::new("tenant-a"));
    assert_eq!(
        success(run.call_blocking(ToolCall::new("6", "count", json!({})))),
        json!(101)
    );
}

fn registry_with_counter(start: usize) -> Registry {
    builder()
        .state(Counter::default())
        .state(Counter {
            calls: AtomicUsize::new(start),
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn state_is_reached_from_concurrent_tasks() {
    let registry = registry();
    let run = std::sync::Arc::new(registry.open_run("run", &Subject::new("tenant-a")));
    let mut tasks = Vec::new();
    for task in 0..50 {
        let run = run.clone();
        tasks.push(tokio::spawn(async move {
            let name = if task % 2 == 0 {
                "count"
            } else {
                "count_later"
            };
            let observation = run
                .call(ToolCall::new(task.to_string(), name, json!({})))
                .await;
            observation.json().as_u64().unwrap()
        }));
    }
    let mut seen = Vec::new();
    for task in tasks {
        seen.push(task.await.unwrap());
    }
    seen.sort_unstable();
    assert_eq!(seen, (1..=50).collect::<Vec<u64>>());
}

#[test]
fn missing_state_is_the_tools_own_error() {
    let registry = builder().build().unwrap();
    let run = registry.open_run("run", &Subject::new("tenant-a"));
    let observation = run.call_blocking(ToolCall::new("1", "count", json!({})));
    assert_eq!(observation.error_kind(), Some(ErrorKind::ExecutionFailed));
    assert_eq!(
        observation.error_text().unwrap(),
        "the tool \"count\" failed: no counter is configured"
    );
}

#[test]
fn a_tool_scopes_data_by_tenant() {
    let registry = registry();
    let rows = |tenant: &str, arguments: Value| {
        let run = registry.open_run(
            format!("run-{tenant}"),
            &Subject::new(tenant).with_scopes(["data:read"]),
        );
        success(run.call_blocking(ToolCall::new("1", "list_rows", arguments)))
    };
    assert_eq!(
        rows("tenant-a", json!({})),
        json!(["a-invoice-1", "a-invoice-2", "a-order-1"])
    );
    assert_eq!(
        rows("tenant-a", json!({"prefix": "a-invoice"})),
        json!(["a-invoice-1", "a-invoice-2"])
    );
    assert_eq!(rows("tenant-b", json!({})), json!(["b-invoice-1"]));
    // Another tenant's rows cannot be reached through the arguments.
    assert_eq!(rows("tenant-b", json!({"prefix": "a-"})), json!([]));
    assert_eq!(rows("tenant-c", json!({})), json!([]));
}
