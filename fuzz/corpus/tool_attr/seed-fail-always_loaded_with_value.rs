#[tool(public, read_only, always_loaded = true)]
/// Read the build status of a project.
fn get_status(project: String) -> String {
    format!("{project}: passed")
}
