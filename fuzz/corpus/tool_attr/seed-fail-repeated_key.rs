#[tool(public, name = "status", name = "get_status")]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
