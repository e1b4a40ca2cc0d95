use registry_core::tool;

/// Read the build status of a project.
#[tool(public, read_only, always_loaded = true)]
fn get_status(project: String) -> String {
    format!("{project}: passed")
}

fn main() {}
