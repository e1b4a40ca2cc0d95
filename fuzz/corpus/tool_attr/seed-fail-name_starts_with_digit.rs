#[tool(public, name = "2fa_check")]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
