#[tool(public)]
/// Read the build status.
fn get_status(project: impl Into<String>) -> String {
    project.into()
}
