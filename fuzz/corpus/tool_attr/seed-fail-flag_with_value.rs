#[tool(public, read_only = true)]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
