use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn get_status(project: String) -> String
where
    String: Clone,
{
    project
}

fn main() {}
