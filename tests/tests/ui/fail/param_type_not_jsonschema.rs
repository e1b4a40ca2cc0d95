use registry_core::tool;

#[derive(serde::Deserialize)]
struct Project {
    id: String,
}

/// Read the build status.
#[tool(public)]
fn get_status(project: Project) -> String {
    project.id
}

fn main() {}
