use registry_core::{Registry, ToolContext, tool};
use serde_json::json;

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let add = registry.get("add").unwrap();
    assert!(!add.is_async());
    assert_eq!(add.definition().description, "Add two numbers.");
    assert_eq!(add.definition().parameters["required"], json!(["a", "b"]));
    let ctx = ToolContext::new("call_1", "add");
    assert_eq!(
        add.call_blocking(&ctx, json!({"a": 2, "b": 3})).unwrap(),
        json!(5)
    );
}
