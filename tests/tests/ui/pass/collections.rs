use std::collections::HashMap;

use registry_core::{Registry, ToolCall, tool};
use registry_tests::{open_run, success};
use serde_json::json;

/// Sum the values, per key and of the list.
#[tool(public)]
fn total(values: Vec<i64>, weights: HashMap<String, i64>, tags: Option<Vec<String>>) -> i64 {
    values.iter().sum::<i64>() + weights.values().sum::<i64>() + tags.map_or(0, |t| t.len() as i64)
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let total = registry.get("total").unwrap();
    let parameters = &total.definition().parameters;
    assert_eq!(parameters["required"], json!(["values", "weights"]));
    assert_eq!(parameters["properties"]["values"]["type"], json!("array"));
    assert_eq!(parameters["properties"]["weights"]["type"], json!("object"));
    let run = open_run(&registry, &[]);
    let args = json!({"values": [1, 2], "weights": {"a": 10}, "tags": ["x"]});
    assert_eq!(
        success(run.call_blocking(ToolCall::new("c1", "total", args))),
        json!(14)
    );
}
