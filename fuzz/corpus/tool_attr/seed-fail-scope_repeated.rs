#[tool(scopes = "build:read, build:read")]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
