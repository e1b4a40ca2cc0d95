use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn get_status(project: String) -> impl std::fmt::Display {
    project
}

fn main() {}
