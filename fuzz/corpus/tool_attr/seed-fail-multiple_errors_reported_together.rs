#[tool(name = "get status", scopes = "build::read", readonly)]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
