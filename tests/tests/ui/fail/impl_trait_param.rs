use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn get_status(project: impl Into<String>) -> String {
    project.into()
}

fn main() {}
