#[tool(public)]
/// Read the build status.
fn get_status(project: &str) -> String {
    project.to_owned()
}
