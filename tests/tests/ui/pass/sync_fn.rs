use registry_core::{Registry, ToolCall, tool};
use registry_tests::{open_run, success};
use serde_json::json;

/// Add two numbers.
#[tool(public)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let add = registry.get("add").unwrap();
    assert!(!add.is_async());
    assert_eq!(add.definition().description, "Add two numbers.");
    assert_eq!(add.definition().parameters["required"], json!(["a", "b"]));
    let run = open_run(&registry, &[]);
    assert_eq!(
        success(run.call_blocking(ToolCall::new("call_1", "add", json!({"a": 2, "b": 3})))),
        json!(5)
    );
}
