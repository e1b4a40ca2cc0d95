use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn get_status(project: String) -> String {
    project
}

mod legacy {
    use registry_core::tool;

    /// Read the build status, the old way.
    #[tool(public, name = "get_status")]
    fn status(project: String) -> String {
        project
    }
}

fn main() {}
