#[tool(public, colour = "red")]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
