use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn get_status(project: String) -> Result<impl serde::Serialize, String> {
    Ok(project)
}

fn main() {}
