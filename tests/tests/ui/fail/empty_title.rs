use registry_core::tool;

/// Read the build status.
#[tool(public, title = "")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
