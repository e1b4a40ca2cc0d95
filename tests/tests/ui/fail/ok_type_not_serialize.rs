use registry_core::tool;

struct Status {
    green: bool,
}

/// Read the build status.
#[tool(public)]
fn get_status(project: String) -> Result<Status, String> {
    Ok(Status {
        green: project.is_empty(),
    })
}

fn main() {}
