#[tool(public)]
/// Read the build status.
fn get_status(project: String) -> Status {
    Status {
        green: project.is_empty(),
    }
}
