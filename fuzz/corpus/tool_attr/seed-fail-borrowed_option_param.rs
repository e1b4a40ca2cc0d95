#[tool(public)]
/// Read the build status.
fn get_status(project: Option<&str>) -> String {
    project.unwrap_or_default().to_owned()
}
