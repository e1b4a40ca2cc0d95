use registry_core::{Registry, ToolCall, tool};
use registry_tests::{open_run, success};
use serde_json::json;

/// Match a value against a type.
#[tool(public)]
fn r#match(r#type: String, r#async: Option<bool>) -> String {
    format!("{type} {async:?}", type = r#type, async = r#async)
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let tool = registry.get("match").unwrap();
    let parameters = &tool.definition().parameters;
    assert_eq!(parameters["required"], json!(["type"]));
    assert!(parameters["properties"]["async"].is_object());
    let run = open_run(&registry, &[]);
    let result = success(run.call_blocking(ToolCall::new(
        "c1",
        "match",
        json!({"type": "int", "async": true}),
    )));
    assert_eq!(result, json!("int Some(true)"));
}
