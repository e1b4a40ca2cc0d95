#[tool(public, tenants = "acme")]
/// Read the build status.
fn get_status() -> String {
    "passed".into()
}
