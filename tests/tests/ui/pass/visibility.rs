use registry_core::{Registry, tool};

/// A public tool.
#[tool(public)]
pub fn public_tool() -> u8 {
    1
}

/// A crate-visible tool.
#[tool(public)]
pub(crate) fn crate_tool() -> u8 {
    2
}

/// A private tool.
#[tool(public)]
fn private_tool() -> u8 {
    3
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let names: Vec<&str> = registry.names().collect();
    assert_eq!(names, ["crate_tool", "private_tool", "public_tool"]);
    // The functions stay callable as plain Rust.
    assert_eq!(public_tool() + crate_tool() + private_tool(), 6);
}
