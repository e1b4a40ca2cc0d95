use registry_core::{Registry, tool};

/// Read a page of the web.
#[tool(
    name = "fetch_page",
    description = "Fetch a web page and return its text.",
    title = "Fetch page",
    scopes = "web:read, net.outbound:http",
    tenants = "acme, globex",
    timeout = "1500ms",
    read_only,
    idempotent,
    open_world,
    allow_description = "reviewed: the text names no host",
    namespace = "web_tools",
    always_loaded,
    non_blocking,
    crate = registry_core,
)]
fn fetch(url: String) -> String {
    url
}

/// Delete a file.
#[tool(public, destructive, blocking)]
fn delete_file(path: String) -> bool {
    path.is_empty()
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let fetch = registry.get("fetch_page").unwrap();
    let definition = fetch.definition();
    // `description` wins over the doc comment.
    assert_eq!(
        definition.description,
        "Fetch a web page and return its text."
    );
    assert_eq!(definition.title.as_deref(), Some("Fetch page"));
    let policy = fetch.settings();
    let scopes: Vec<&str> = policy.scopes.iter().map(|s| s.as_str()).collect();
    assert_eq!(scopes, ["web:read", "net.outbound:http"]);
    assert_eq!(policy.tenants, ["acme", "globex"]);
    assert_eq!(policy.timeout, Some(std::time::Duration::from_millis(1500)));
    let hints = policy.hints;
    assert!(hints.read_only && hints.idempotent && hints.open_world && !hints.destructive);
    assert_eq!(
        policy.allow_description.as_deref(),
        Some("reviewed: the text names no host")
    );

    assert_eq!(policy.namespace.as_deref(), Some("web_tools"));
    assert!(policy.always_loaded);
    assert!(policy.non_blocking);
    assert!(!policy.blocking);

    let hints = registry.get("delete_file").unwrap().settings().hints;
    assert!(hints.destructive && !hints.read_only && !hints.idempotent && !hints.open_world);
    // No namespace and no scope: none; not always loaded unless said.
    let policy = registry.get("delete_file").unwrap().settings().clone();
    assert_eq!(policy.namespace, None);
    assert!(!policy.always_loaded);
    assert!(!policy.non_blocking);
    assert!(policy.blocking);
}
