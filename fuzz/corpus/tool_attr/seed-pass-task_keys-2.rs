#[tool(public)]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
