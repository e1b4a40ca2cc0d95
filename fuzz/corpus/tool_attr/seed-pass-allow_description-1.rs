#[tool(public)]
/// Read the build status of a project.
fn get_status(project: String) -> String {
    project
}
