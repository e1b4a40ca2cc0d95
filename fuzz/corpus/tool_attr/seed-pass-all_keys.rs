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
    crate = registry_core,
)]
/// Read a page of the web.
fn fetch(url: String) -> String {
    url
}
