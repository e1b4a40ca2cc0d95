#[tool(public, scopes = "build:read")]
/// Read the build status.
fn get_status() -> String {
    "passed".into()
}
