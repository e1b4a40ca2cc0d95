use registry_core::tool;

struct Status {
    green: bool,
}

/// Read the build status.
#[tool(public)]
fn get_status(project: String) -> Status {
    Status {
        green: project.is_empty(),
    }
}

fn main() {}
