use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn get_status(project: Option<&str>) -> String {
    project.unwrap_or_default().to_owned()
}

fn main() {}
