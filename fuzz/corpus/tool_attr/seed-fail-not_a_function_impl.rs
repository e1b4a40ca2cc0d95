#[tool(public)]
/// Read the build status.
impl Builds {
    fn get_status(&self, project: String) -> String {
        project
    }
}
