use registry_core::{Registry, ToolCall, ToolContext, tool};
use registry_tests::{open_run, success};
use serde_json::json;

/// Declares an echo tool whose parameter type comes from the caller.
macro_rules! echo_tool {
    ($name:ident, $ty:ty) => {
        /// Echo the value back.
        #[tool(public)]
        fn $name(ctx: &ToolContext, value: $ty) -> $ty {
            let _ = ctx;
            value
        }
    };
}

echo_tool!(echo_number, u32);
echo_tool!(echo_maybe, Option<String>);

/// Declares a tool whose context parameter type comes from the caller.
macro_rules! context_tool {
    ($ctx:ty) => {
        /// Name the tool.
        #[tool(public)]
        fn context_from_macro(ctx: $ctx) -> String {
            ctx.tool_name().to_owned()
        }
    };
}

context_tool!(&ToolContext);

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let run = open_run(&registry, &[]);
    let call = |name: &str, args| success(run.call_blocking(ToolCall::new("c1", name, args)));
    let number = registry.get("echo_number").unwrap();
    assert_eq!(number.definition().parameters["required"], json!(["value"]));
    assert_eq!(call("echo_number", json!({"value": 7})), json!(7));
    let maybe = registry.get("echo_maybe").unwrap();
    // `Option<String>` passed as `$ty` is still an optional argument.
    assert!(
        maybe
            .definition()
            .parameters
            .get("required")
            .is_none_or(|r| r == &json!([]))
    );
    assert_eq!(call("echo_maybe", json!({})), json!(null));
    assert_eq!(
        call("context_from_macro", json!({})),
        json!("context_from_macro")
    );
}
