#[tool(public, name = "get-status")]
/// Read the build status, the old way.
fn status(project: String) -> String {
    project
}
