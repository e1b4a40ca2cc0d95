#[tool(public)]
/// Read the build status.
fn get_status(project: String) -> Result<Status, String> {
    Ok(Status {
        green: project.is_empty(),
    })
}
