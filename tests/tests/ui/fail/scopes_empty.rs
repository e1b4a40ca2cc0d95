use registry_core::tool;

/// Read the build status.
#[tool(scopes = "")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
