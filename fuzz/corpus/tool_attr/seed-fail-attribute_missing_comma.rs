#[tool(public, read_only idempotent)]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
