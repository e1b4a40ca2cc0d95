use registry_core::tool;

/// Read the build status of a project.
#[tool(scopes = "build:read", namespace = "build tools")]
fn get_status(project: String) -> String {
    format!("{project}: passed")
}

fn main() {}
