#[tool(public, readonly)]
/// Read the build status.
fn get_status(
    /// The project to read.
    project: String,
) -> String {
    project
}
