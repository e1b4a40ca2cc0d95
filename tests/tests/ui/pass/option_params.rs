use registry_core::{Registry, ToolContext, tool};
use serde_json::json;

/// Search the logs.
#[tool]
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
    let ctx = ToolContext::new("c1", "search");
    let result = search
        .call_blocking(&ctx, json!({"query": "q", "limit": null}))
        .unwrap();
    assert_eq!(result, json!("q None None"));
    let result = search
        .call_blocking(&ctx, json!({"query": "q", "limit": 3, "since": "x"}))
        .unwrap();
    assert_eq!(result, json!("q Some(3) Some(\"x\")"));
}
