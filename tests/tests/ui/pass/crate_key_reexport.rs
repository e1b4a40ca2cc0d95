mod runtime {
    pub use registry_core as registry;
}

use runtime::registry::{Registry, tool};

/// Ping through a re-exported runtime.
#[tool(public, crate = crate::runtime::registry)]
fn ping() -> &'static str {
    "pong"
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    assert!(registry.contains("ping"));
}
