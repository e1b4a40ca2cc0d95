use registry_core::tool;

/// Read the build status of a project.
#[tool(public, title = "Build\u{200B} status")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
