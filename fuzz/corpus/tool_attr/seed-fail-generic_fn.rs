#[tool(public)]
/// Read the build status.
fn get_status<T: std::fmt::Display>(project: T) -> String {
    project.to_string()
}
