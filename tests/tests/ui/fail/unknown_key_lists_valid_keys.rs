use registry_core::tool;

/// Read the build status.
#[tool(colour = "red")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
