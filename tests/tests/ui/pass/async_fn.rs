use registry_core::{Registry, ToolCall, ToolContext, tool};
use registry_tests::{open_run, success};
use serde_json::json;

/// Greet someone, eventually.
#[tool(public)]
async fn greet(name: String) -> String {
    std::future::ready(()).await;
    format!("hello, {name}")
}

/// Check the context, eventually.
#[tool(public)]
async fn whoami(ctx: &ToolContext) -> String {
    std::future::ready(()).await;
    ctx.call_id().to_owned()
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let greet = registry.get("greet").unwrap();
    assert!(greet.is_async());
    let run = open_run(&registry, &[]);
    let result =
        success(run.call_blocking(ToolCall::new("call_1", "greet", json!({"name": "Ada"}))));
    assert_eq!(result, json!("hello, Ada"));
    assert_eq!(
        success(run.call_blocking(ToolCall::new("call_1", "whoami", json!({})))),
        json!("call_1")
    );
}
