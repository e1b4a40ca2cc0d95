use registry_core::tool;

/// Read the build status.
#[tool(public, colour = "red")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
