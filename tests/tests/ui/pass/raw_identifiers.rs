use registry_core::{Registry, ToolContext, tool};
use serde_json::json;

/// Match a value against a type.
#[tool]
fn r#match(r#type: String, r#async: Option<bool>) -> String {
    format!("{type} {async:?}", type = r#type, async = r#async)
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let tool = registry.get("match").unwrap();
    let parameters = &tool.definition().parameters;
    assert_eq!(parameters["required"], json!(["type"]));
    assert!(parameters["properties"]["async"].is_object());
    let ctx = ToolContext::new("c1", "match");
    let result = tool
        .call_blocking(&ctx, json!({"type": "int", "async": true}))
        .unwrap();
    assert_eq!(result, json!("int Some(true)"));
}
