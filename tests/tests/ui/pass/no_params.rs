use registry_core::{Registry, ToolContext, tool};
use serde_json::json;

/// Tell the time, always noon.
#[tool]
fn now() -> String {
    "12:00".to_owned()
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let now = registry.get("now").unwrap();
    let parameters = &now.definition().parameters;
    assert_eq!(parameters["type"], json!("object"));
    assert!(
        parameters
            .get("required")
            .is_none_or(|required| required == &json!([]))
    );
    let ctx = ToolContext::new("call_1", "now");
    assert_eq!(now.call_blocking(&ctx, json!({})).unwrap(), json!("12:00"));
    assert!(now.call_blocking(&ctx, json!({"extra": 1})).is_err());
}
