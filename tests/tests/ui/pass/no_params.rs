use registry_core::{ErrorKind, Registry, ToolCall, tool};
use registry_tests::{open_run, success};
use serde_json::json;

/// Tell the time, always noon.
#[tool(public)]
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
    let run = open_run(&registry, &[]);
    assert_eq!(
        success(run.call_blocking(ToolCall::new("call_1", "now", json!({})))),
        json!("12:00")
    );
    let extra = run.call_blocking(ToolCall::new("call_2", "now", json!({"extra": 1})));
    assert_eq!(extra.error_kind(), Some(ErrorKind::InvalidArguments));
}
