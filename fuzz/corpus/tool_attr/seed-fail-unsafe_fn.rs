#[tool(public)]
/// Read the build status.
unsafe fn get_status(project: String) -> String {
    project
}
