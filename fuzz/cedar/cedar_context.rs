//! Cedar's view of a call built from hostile input: the subject's `data_domain` and the call's
//! arguments come from the fuzzer (deep nesting, integers outside 64 bits, floats, NUL and
//! format characters in keys and values, keys the schema does not know, wrong types).
//!
//! Input (bytes): `DATA_DOMAIN \n ARGUMENT_TEXT`, each part UTF-8 with invalid sequences
//! replaced; the first byte of the domain part also picks the caller (its lowest bit: code).
//!
//! The registry's one tool takes an integer `cents`, a nested object `meta` (`depth`, an
//! integer, and `inner.tag`, a string), and `tags`, an array of strings; its schema lets
//! unknown keys through, so hostile shapes reach the gate. The policies permit only the
//! `finance` data domain and forbid, each by reading the arguments, large refunds, a `blocked`
//! tag, a deep `meta.depth` and an `inner.tag` of `stop`. Whatever the input:
//!
//! - nothing panics, and every decision is made (allowed, or refused with an error observation);
//! - a call that runs was made by a subject whose data domain is exactly `finance`, and its
//!   arguments, read independently here from the JSON, meet none of the forbids: `cents` an
//!   integer within 64 bits and at most 100,000 (or absent), no `blocked` tag, `meta.depth`
//!   at most 8, `meta.inner.tag` not `stop`. A value Cedar cannot be shown (a float, an
//!   integer beyond 64 bits, nesting deeper than 16) can never slip a call past a forbid.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
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
        Some(Value::Array(items)) => items.iter().all(|item| item.as_str().is_some_and(|tag| tag != "blocked")),
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

fuzz_target!(|data: &[u8]| {
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
});
