use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn get_status<T: std::fmt::Display>(project: T) -> String {
    project.to_string()
}

fn main() {}
