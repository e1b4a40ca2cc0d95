use registry_core::tool;

/// Read the build status.
#[tool]
fn get_status(project: &str) -> String {
    project.to_owned()
}

fn main() {}
