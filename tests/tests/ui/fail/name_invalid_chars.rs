use registry_core::tool;

/// Read the build status.
#[tool(public, name = "get status")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
