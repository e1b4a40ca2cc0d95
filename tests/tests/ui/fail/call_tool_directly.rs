// A tool runs only through a run: `Tool::call_blocking` and `Tool::call` are gone, and the
// compiler says what to write instead.
use registry_core::{Registry, ToolContext, tool};
use serde_json::json;

/// Say hello.
#[tool(public)]
fn hello() -> String {
    "hello".into()
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let tool = registry.get("hello").unwrap();
    let ctx = ToolContext::new("call_1", "hello");
    let _ = tool.call_blocking(&ctx, json!({}));
    let _ = tool.call(ctx, json!({}));
}
