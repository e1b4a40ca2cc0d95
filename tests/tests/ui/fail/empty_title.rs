use registry_core::tool;

/// Read the build status.
#[tool(title = "")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
