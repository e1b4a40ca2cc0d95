use registry_core::{Registry, tool};

/// Tell the server's time.
#[tool(public, read_only)]
fn server_time() -> String {
    "12:00".into()
}

/// Read the build status.
#[tool(scopes = "build:read")]
fn get_status() -> String {
    "passed".into()
}

/// Run the nightly report.
#[tool(tenants = "acme")]
fn nightly_report() -> String {
    "sent".into()
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    assert!(registry.get("server_time").unwrap().settings().is_public());
    assert!(!registry.get("get_status").unwrap().settings().is_public());
    assert!(
        !registry
            .get("nightly_report")
            .unwrap()
            .settings()
            .is_public()
    );
    let lock = registry.lock();
    assert!(
        lock.contains("[server_time]\nscopes = (none)\ntenants = *\npublic = true\n"),
        "{lock}"
    );
    assert!(
        lock.contains("[get_status]\nscopes = build:read\ntenants = *\npublic = false\n"),
        "{lock}"
    );
}
