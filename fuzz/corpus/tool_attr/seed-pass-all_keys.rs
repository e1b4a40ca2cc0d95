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
/// Read a page of the web.
fn fetch(url: String) -> String {
    url
}
