#[tool(public, crate = "registry_core")]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
