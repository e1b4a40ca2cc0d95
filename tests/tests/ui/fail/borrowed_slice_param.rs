use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn get_status(projects: &[String]) -> usize {
    projects.len()
}

fn main() {}
