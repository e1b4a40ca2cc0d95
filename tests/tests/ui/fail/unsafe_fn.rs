use registry_core::tool;

/// Read the build status.
#[tool(public)]
unsafe fn get_status(project: String) -> String {
    project
}

fn main() {}
