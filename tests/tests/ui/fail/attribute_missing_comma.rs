use registry_core::tool;

/// Read the build status.
#[tool(public, read_only idempotent)]
fn get_status(project: String) -> String {
    project
}

fn main() {}
