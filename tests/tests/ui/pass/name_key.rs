use registry_core::{Registry, tool};

/// Read the status.
#[tool(public, name = "get-status")]
fn status() -> bool {
    true
}

/// Read the status, with a dash and an underscore apart.
#[tool(public, name = "get_status")]
fn status_underscore() -> bool {
    true
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let names: Vec<&str> = registry.names().collect();
    assert_eq!(names, ["get-status", "get_status"]);
    assert!(!registry.contains("status"));
}
