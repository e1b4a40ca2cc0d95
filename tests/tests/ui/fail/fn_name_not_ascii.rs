use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn état(project: String) -> String {
    project
}

fn main() {}
