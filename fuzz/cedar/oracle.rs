//! The oracle of the fuzz target `cedar_context` (cedar_context.rs): what must hold for any
//! input. Also compiled, by its path, into registry-cedar's tests (tests/fuzz_corpus.rs), which
//! replay the committed inputs (fuzz/corpus/cedar_context) through it on every test run.
//!
//! Input (bytes): `DATA_DOMAIN \n ARGUMENT_TEXT`; see cedar_context.rs.

use std::sync::OnceLock;

use registry_cedar::CedarPolicies;
use registry_core::call::Caller;
use registry_core::{DynamicTool, Registry, Subject, ToolCall};
use serde_json::{Value, json};

const POLICIES: &str = r#"
@id("finance") permit(principal, action, resource)
when { principal has data_domain && principal.data_domain == "finance" };
@id("large") forbid(principal, action == Action::"call", resource)
when { context.arguments has cents && context.arguments.cents > 100000 };
@id("blocked") forbid(principal, action == Action::"call", resource)
when { context.arguments has tags && context.arguments.tags.contains("blocked") };
@id("deep") forbid(principal, action == Action::"call", resource)
when { context.arguments has meta && context.arguments.meta has depth && context.arguments.meta.depth > 8 };
@id("stop") forbid(principal, action == Action::"call", resource)
when { context.arguments has meta && context.arguments.meta has inner && context.arguments.meta.inner has tag && context.arguments.meta.inner.tag == "stop" };
"#;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        Registry::builder()
            .tool(
                DynamicTool::new("refund", "Refund an order.")
                    .scopes(["use"])
                    .attribute("data_domain", ["finance", "ops"])
                    .parameters(json!({
                        "type": "object",
                        "properties": {
                            "cents": {"type": "integer"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                            "meta": {
                                "type": "object",
                                "properties": {
                                    "depth": {"type": "integer"},
                                    "inner": {"type": "object", "properties": {"tag": {"type": "string"}}},
                                },
                            },
                        },
                    }))
                    .handler(|_, args| Ok::<_, String>(args)),
            )
            .policies(CedarPolicies::parse(POLICIES).expect("the policies parse"))
            .build()
            .expect("the registry builds")
    })
}

/// Whether the arguments, read from the JSON, meet none of the forbids (and Cedar could be
/// shown what the forbids read).
fn none_forbidden(arguments: &Value) -> bool {
    let Some(object) = arguments.as_object() else {
        return arguments.is_null();
    };
    let cents = match object.get("cents") {
        None | Some(Value::Null) => true,
        Some(value) => value.as_i64().is_some_and(|cents| cents <= 100_000),
    };
    let tags = match object.get("tags") {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items
            .iter()
            .all(|item| item.as_str().is_some_and(|tag| tag != "blocked")),
        Some(_) => false,
    };
    let meta = match object.get("meta") {
        None | Some(Value::Null) => true,
        Some(Value::Object(meta)) => {
            let depth = match meta.get("depth") {
                None | Some(Value::Null) => true,
                Some(value) => value.as_i64().is_some_and(|depth| depth <= 8),
            };
            let inner = match meta.get("inner") {
                None | Some(Value::Null) => true,
                Some(Value::Object(inner)) => match inner.get("tag") {
                    None | Some(Value::Null) => true,
                    Some(tag) => tag.as_str().is_some_and(|tag| tag != "stop"),
                },
                Some(_) => false,
            };
            depth && inner
        }
        Some(_) => false,
    };
    cents && tags && meta
}

/// Checks one input: panics if a call ran that the policies refuse.
pub(crate) fn check(data: &[u8]) {
    let (domain, text) = match data.iter().position(|&byte| byte == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let caller = if domain.first().is_some_and(|byte| byte & 1 == 1) {
        Caller::Code
    } else {
        Caller::Model
    };
    let domain = String::from_utf8_lossy(domain);
    let Ok(arguments) = serde_json::from_slice::<Value>(text) else {
        return;
    };
    let subject = Subject::new("acme")
        .with_scopes(["use"])
        .with_attribute("data_domain", domain.as_ref());
    let run = registry().open_run("fuzz", &subject);
    let observation =
        run.call_blocking(ToolCall::new("c", "refund", arguments.clone()).with_caller(caller));
    if !observation.is_error() {
        assert_eq!(domain, "finance", "a call ran for another data domain");
        assert!(
            none_forbidden(&arguments),
            "a call ran that a forbid should have refused: {arguments}"
        );
    }
}
