use registry_core::tool;

/// Read the build status.
#[tool(public, readonly)]
fn get_status(
    /// The project to read.
    project: String,
) -> String {
    project
}

fn main() {}
