#[tool(public)]
/// Read the build status.
fn get_status(_: String) -> String {
    String::new()
}
