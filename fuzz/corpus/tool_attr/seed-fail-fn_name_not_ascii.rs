#[tool(public)]
/// Read the build status.
fn état(project: String) -> String {
    project
}
