use registry_core::tool;

/// Read the build status.
#[tool]
fn get_status(project: impl Into<String>) -> String {
    project.into()
}

fn main() {}
