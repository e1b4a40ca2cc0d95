#[tool(public, name = "get_status")]
/// Read the build status, the old way.
    fn status(project: String) -> String {
        project
    }
