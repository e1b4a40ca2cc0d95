#[tool(public)]
fn get_status(project: String) -> String {
    project
}
