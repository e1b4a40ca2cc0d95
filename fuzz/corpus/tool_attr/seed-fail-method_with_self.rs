#[tool(public)]
/// Read the build status.
    fn get_status(&self, project: String) -> String {
        project
    }
