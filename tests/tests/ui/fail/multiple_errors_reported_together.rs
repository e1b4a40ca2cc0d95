use registry_core::tool;

/// Read the build status.
#[tool(name = "get status", scopes = "build::read", readonly)]
fn get_status(project: String) -> String {
    project
}

fn main() {}
