#[tool(scopes = "build::read")]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
