use registry_core::tool;

/// Read the build status.
#[tool]
fn get_status<T: std::fmt::Display>(project: T) -> String {
    project.to_string()
}

fn main() {}
