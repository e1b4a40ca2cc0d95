use registry_core::tool;

#[derive(Debug)]
struct NotFound;

/// Read the build status.
#[tool(public)]
fn get_status(project: String) -> Result<String, NotFound> {
    if project.is_empty() {
        return Err(NotFound);
    }
    Ok(project)
}

fn main() {}
