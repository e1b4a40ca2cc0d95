use registry_core::tool;

#[derive(schemars::JsonSchema)]
struct Project {
    id: String,
}

/// Read the build status.
#[tool(public)]
fn get_status(project: Project) -> String {
    project.id
}

fn main() {}
