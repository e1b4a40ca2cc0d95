#[tool(public, title = "Build\u{200B} status")]
/// Read the build status of a project.
fn get_status(project: String) -> String {
    project
}
