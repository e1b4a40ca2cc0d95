//! Builds the registry from every `#[tool]` linked into this program (two modules of the
//! examples crate, and the `build-tools` crate) and prints each tool: its name, policy, where
//! it was declared, and the JSON definition a model is shown.
//!
//! Run it with `cargo run -p registry-examples --bin catalog`; with `--cedar-schema`, it
//! prints the registry's Cedar schema instead (the vocabulary Cedar policies are validated
//! against: docs/guide/policies.md), exactly what `registry_cedar::schema(&registry)` gives.

use registry_core::{RegistryError, Tool};

// registry-cedar's schema generator, compiled here by its path: the examples cannot depend on
// registry-cedar (its cedar-policy turns on serde_json's `preserve_order`, which would reach
// every crate of this workspace), and the file needs nothing but registry-core and serde_json.
#[allow(dead_code, unreachable_pub)]
#[path = "../../../registry-cedar/src/schema.rs"]
mod cedar_schema;

fn main() -> Result<(), RegistryError> {
    let registry = registry_examples::registry()
        .require(["get_status", "deploy", "search_docs"])
        .build()?;
    match std::env::args().nth(1).as_deref() {
        None => {}
        Some("--cedar-schema") => {
            print!("{}", cedar_schema::schema(&registry));
            return Ok(());
        }
        Some(other) => {
            eprintln!("catalog: unknown argument {other:?}; usage: catalog [--cedar-schema]");
            std::process::exit(2);
        }
    }
    println!(
        "{} tools registered: {}\n",
        registry.len(),
        registry.names().collect::<Vec<_>>().join(", ")
    );
    for tool in &registry {
        print_tool(&tool);
    }
    Ok(())
}

fn print_tool(tool: &Tool) {
    let policy = tool.settings();
    let scopes = if policy.scopes.is_empty() {
        "none".to_owned()
    } else {
        policy
            .scopes
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let hints = [
        ("read_only", policy.hints.read_only),
        ("destructive", policy.hints.destructive),
        ("idempotent", policy.hints.idempotent),
        ("open_world", policy.hints.open_world),
    ]
    .iter()
    .filter(|(_, set)| *set)
    .map(|(name, _)| *name)
    .collect::<Vec<_>>();
    let hints = if hints.is_empty() {
        "none".to_owned()
    } else {
        hints.join(", ")
    };
    println!("== {}", tool.name());
    println!("   scopes: {scopes}");
    println!("   hints:  {hints}");
    if policy.needs_approval {
        println!("   gate:   every call waits for a person's approval");
    }
    if let Some(limit) = policy.rate_limit {
        println!("   gate:   at most {limit} per subject");
    }
    if let Some(reason) = &policy.allow_description {
        println!("   lint:   description lint overridden: {reason}");
    }
    println!("   source: {}", tool.source());
    let json = serde_json::to_string_pretty(&*tool.definition()).expect("a definition is JSON");
    for line in json.lines() {
        println!("   {line}");
    }
    println!();
}
