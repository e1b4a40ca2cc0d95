#[tool(public, description = "Read the build status from the CI server at http://10.0.3.7:8080.")]
fn get_status(project: String) -> String {
    project
}
