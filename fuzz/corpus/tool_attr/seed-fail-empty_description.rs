#[tool(public, description = "  ")]
fn get_status(project: String) -> String {
    project
}
