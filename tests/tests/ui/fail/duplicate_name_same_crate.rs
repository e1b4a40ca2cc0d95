use registry_core::tool;

/// Read the build status.
#[tool]
fn get_status(project: String) -> String {
    project
}

mod legacy {
    use registry_core::tool;

    /// Read the build status, the old way.
    #[tool(name = "get_status")]
    fn status(project: String) -> String {
        project
    }
}

fn main() {}
