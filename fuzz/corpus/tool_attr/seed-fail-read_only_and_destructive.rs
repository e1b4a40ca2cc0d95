#[tool(public, read_only, destructive)]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
