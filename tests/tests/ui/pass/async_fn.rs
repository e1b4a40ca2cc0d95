use registry_core::{Registry, ToolContext, tool};
use serde_json::json;

/// Greet someone, eventually.
#[tool]
async fn greet(name: String) -> String {
    std::future::ready(()).await;
    format!("hello, {name}")
}

/// Check the context, eventually.
#[tool]
async fn whoami(ctx: &ToolContext) -> String {
    std::future::ready(()).await;
    ctx.call_id().to_owned()
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let greet = registry.get("greet").unwrap();
    assert!(greet.is_async());
    let ctx = ToolContext::new("call_1", "greet");
    let result = greet.call_blocking(&ctx, json!({"name": "Ada"})).unwrap();
    assert_eq!(result, json!("hello, Ada"));
    let whoami = registry.get("whoami").unwrap();
    assert_eq!(
        whoami.call_blocking(&ctx, json!({})).unwrap(),
        json!("call_1")
    );
}
