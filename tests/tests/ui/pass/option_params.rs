use registry_core::{Registry, ToolCall, tool};
use registry_tests::{open_run, success};
use serde_json::json;

/// Search the logs.
#[tool(public)]
fn search(query: String, limit: Option<u32>, since: std::option::Option<String>) -> String {
    format!("{query} {limit:?} {since:?}")
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let search = registry.get("search").unwrap();
    let parameters = &search.definition().parameters;
    assert_eq!(parameters["required"], json!(["query"]));
    assert!(parameters["properties"]["limit"].is_object());
    assert!(parameters["properties"]["since"].is_object());
    let run = open_run(&registry, &[]);
    let result = success(run.call_blocking(ToolCall::new(
        "c1",
        "search",
        json!({"query": "q", "limit": null}),
    )));
    assert_eq!(result, json!("q None None"));
    let result = success(run.call_blocking(ToolCall::new(
        "c2",
        "search",
        json!({"query": "q", "limit": 3, "since": "x"}),
    )));
    assert_eq!(result, json!("q Some(3) Some(\"x\")"));
}
