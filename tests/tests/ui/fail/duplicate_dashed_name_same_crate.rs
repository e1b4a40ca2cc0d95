use registry_core::tool;

/// Read the build status.
#[tool(public, name = "get-status")]
fn get_status(project: String) -> String {
    project
}

/// Read the build status, the old way.
#[tool(public, name = "get-status")]
fn status(project: String) -> String {
    project
}

fn main() {}
