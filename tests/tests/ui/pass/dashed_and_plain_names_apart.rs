use registry_core::{Registry, tool};

/// A name with a dash.
#[tool(public, name = "a-b")]
fn dashed() {}

/// A name that spells the dashed one's guard, were it written in hexadecimal.
#[tool(public, name = "x612d62")]
fn hex_like() {}

/// A name that spells the dashed one with `_` instead.
#[tool(public, name = "a_b")]
fn underscored() {}

/// Dashes elsewhere.
#[tool(public, name = "a_-b")]
fn dash_after_underscore() {}

/// Dashes elsewhere again.
#[tool(public, name = "a-_b")]
fn dash_before_underscore() {}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let names: Vec<&str> = registry.names().collect();
    assert_eq!(names, ["a-_b", "a-b", "a_-b", "a_b", "x612d62"]);
}
