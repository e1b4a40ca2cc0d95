#[tool(public)]
/// Read the build status.
fn get_status(project: String) -> Result<impl serde::Serialize, String> {
    Ok(project)
}
