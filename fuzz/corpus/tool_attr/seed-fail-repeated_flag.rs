#[tool(public, idempotent, idempotent)]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
