use registry_core::{Registry, ToolCall, ToolContext, tool};
use registry_tests::{open_run, success};
use serde_json::json;

/// Only the context.
#[tool(public)]
fn context_only(ctx: &ToolContext) -> String {
    ctx.tool_name().to_owned()
}

/// Context first.
#[tool(public)]
fn context_first(ctx: &ToolContext, a: String, b: String) -> String {
    format!("{}:{a}{b}", ctx.call_id())
}

/// Context in the middle.
#[tool(public)]
fn context_middle(a: String, ctx: &registry_core::ToolContext, b: String) -> String {
    format!("{a}:{}:{b}", ctx.call_id())
}

/// Context last.
#[tool(public)]
fn context_last(a: String, b: String, ctx: &ToolContext) -> String {
    format!("{a}{b}:{}", ctx.call_id())
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let run = open_run(&registry, &[]);
    let only = registry.get("context_only").unwrap();
    assert!(
        only.definition()
            .parameters
            .get("properties")
            .is_none_or(|p| p == &json!({}))
    );
    assert_eq!(
        success(run.call_blocking(ToolCall::new("c1", "context_only", json!({})))),
        json!("context_only")
    );

    let args = json!({"a": "x", "b": "y"});
    for (name, expected) in [
        ("context_first", "c1:xy"),
        ("context_middle", "x:c1:y"),
        ("context_last", "xy:c1"),
    ] {
        let tool = registry.get(name).unwrap();
        // The context is not part of the schema.
        assert_eq!(
            tool.definition().parameters["required"],
            json!(["a", "b"]),
            "{name}"
        );
        assert_eq!(
            success(run.call_blocking(ToolCall::new("c1", name, args.clone()))),
            json!(expected),
            "{name}"
        );
    }
}
