use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn get_status(project: &str) -> String {
    project.to_owned()
}

fn main() {}
