//! A registry's `ArgumentLimits` hold for arguments that arrive as text exactly as for parsed
//! ones: the text is kept by the call and parsed at resolution, under the registry's limits.

use registry_core::{DynamicTool, ErrorKind, Registry, Subject, ToolCall, call::ArgumentLimits};
use serde_json::{Value, json};

/// A tool that takes any object.
fn registry(limits: ArgumentLimits) -> Registry {
    Registry::builder()
        .tool(
            DynamicTool::new("store", "Store a document.")
                .public()
                .parameters(json!({"type": "object"}))
                .handler(|_, args: Value| Ok::<_, String>(json!(args.to_string().len()))),
        )
        .argument_limits(limits)
        .build()
        .unwrap()
}

/// `{"a": {"a": ... {}}}`, `levels` objects deep.
fn nested(levels: usize) -> String {
    let mut text = String::from("{}");
    for _ in 1..levels {
        text = format!("{{\"a\": {text}}}");
    }
    text
}

fn both_ways(registry: &Registry, text: &str) -> [Option<ErrorKind>; 2] {
    let run = registry.open_run("run-1", &Subject::new("acme"));
    let as_text = run.call_blocking(ToolCall::from_json_text("c1", "store", text));
    let value: Value = serde_json::from_str(text).unwrap();
    let as_value = run.call_blocking(ToolCall::new("c2", "store", value));
    if let Some(error) = as_text.error_text() {
        assert!(
            error.contains("deeper than") || error.contains("larger than"),
            "{error}"
        );
    }
    [as_text.error_kind(), as_value.error_kind()]
}

#[test]
fn a_lowered_limit_holds_for_text() {
    let registry = registry(
        ArgumentLimits::default()
            .with_max_depth(3)
            .with_max_bytes(64),
    );
    assert_eq!(both_ways(&registry, &nested(3)), [None, None]);
    let invalid = Some(ErrorKind::InvalidArguments);
    assert_eq!(both_ways(&registry, &nested(4)), [invalid, invalid]);
    let long = format!(r#"{{"text": "{}"}}"#, "x".repeat(80));
    assert_eq!(both_ways(&registry, &long), [invalid, invalid]);

    let run = registry.open_run("run-1", &Subject::new("acme"));
    let deep = run.call_blocking(ToolCall::from_json_text("c1", "store", nested(4)));
    assert!(
        deep.error_text()
            .unwrap()
            .contains("nested deeper than 3 levels"),
        "{deep:?}"
    );
    let large = run.call_blocking(ToolCall::from_json_text("c2", "store", long));
    assert!(
        large.error_text().unwrap().contains("larger than 64 bytes"),
        "{large:?}"
    );
}

#[test]
fn a_raised_limit_holds_for_text() {
    // 80 levels: past the default 64, within serde_json's own recursion limit (128).
    let text = nested(80);
    let default = registry(ArgumentLimits::default());
    let invalid = Some(ErrorKind::InvalidArguments);
    assert_eq!(both_ways(&default, &text), [invalid, invalid]);
    let raised = registry(ArgumentLimits::default().with_max_depth(100));
    assert_eq!(both_ways(&raised, &text), [None, None]);
}

#[test]
fn a_call_keeps_its_text_until_resolved() {
    let call = ToolCall::from_json_text("c1", "store", r#"{"a": 1, "a": 2}"#);
    assert_eq!(call.arguments_text(), Some(r#"{"a": 1, "a": 2}"#));
    assert_eq!(call.arguments(), None, "a repeated key never parses");
    let run = registry(ArgumentLimits::default()).open_run("run-1", &Subject::new("acme"));
    let observation = run.call_blocking(call);
    assert_eq!(observation.error_kind(), Some(ErrorKind::InvalidArguments));
    assert!(
        observation
            .error_text()
            .unwrap()
            .contains(r#"the key "a" is repeated"#)
    );
}

#[test]
fn a_tool_with_65536_tenants_is_restricted_to_them() {
    // 65,536 is where a 16-bit count wraps to 0, and an empty tenant list admits every tenant.
    let tenants: Vec<String> = (0..65_536).map(|index| format!("tenant-{index}")).collect();
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("billing_export", "Export the billing data.")
                .tenants(tenants)
                .handler(|_, _| Ok::<_, String>(json!("exported"))),
        )
        .build()
        .unwrap();
    let outsider = registry.open_run("run-1", &Subject::new("globex"));
    assert!(outsider.allowed().is_empty());
    let call = outsider.call_blocking(ToolCall::new("c1", "billing_export", json!({})));
    assert_eq!(call.error_kind(), Some(ErrorKind::NotAllowed));
    for tenant in ["tenant-0", "tenant-65535"] {
        let member = registry.open_run("run-2", &Subject::new(tenant));
        assert!(member.allowed().permits("billing_export"), "{tenant}");
    }
}
