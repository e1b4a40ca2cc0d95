#[tool(public)]
/// Read the build status.
fn get_status((project, branch): (String, String)) -> String {
    project + &branch
}
