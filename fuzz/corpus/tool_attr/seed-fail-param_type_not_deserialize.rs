#[tool(public)]
/// Read the build status.
fn get_status(project: Project) -> String {
    project.id
}
