#[tool(scopes = "build:read", namespace = "build tools")]
/// Read the build status of a project.
fn get_status(project: String) -> String {
    format!("{project}: passed")
}
