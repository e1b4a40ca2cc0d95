#[tool(public)]
/// Read the build status.
fn get_status(project: String, branch: Option<Branch>) -> String {
    branch.map_or(project, |branch| branch.name)
}
