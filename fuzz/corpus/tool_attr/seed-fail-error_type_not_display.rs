#[tool(public)]
/// Read the build status.
fn get_status(project: String) -> Result<String, NotFound> {
    if project.is_empty() {
        return Err(NotFound);
    }
    Ok(project)
}
