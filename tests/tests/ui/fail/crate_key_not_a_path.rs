use registry_core::tool;

/// Read the build status.
#[tool(public, crate = "registry_core")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
