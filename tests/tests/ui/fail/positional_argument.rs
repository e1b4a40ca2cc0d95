use registry_core::tool;

/// Read the build status.
#[tool(public, "get_status")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
