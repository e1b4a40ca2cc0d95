//! Builds the registry from every `#[tool]` linked into this program (two modules of the
//! examples crate, and the `build-tools` crate) and prints each tool: its name, policy, where
//! it was declared, and the JSON definition a model is shown.
//!
//! Run it with `cargo run -p registry-examples --bin catalog`.

use registry_core::{RegistryError, Tool};

fn main() -> Result<(), RegistryError> {
    let registry = registry_examples::registry()
        .require(["get_status", "deploy", "search_docs"])
        .build()?;
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
