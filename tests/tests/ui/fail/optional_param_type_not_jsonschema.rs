use registry_core::tool;

#[derive(serde::Deserialize)]
struct Branch {
    name: String,
}

/// Read the build status.
#[tool(public)]
fn get_status(project: String, branch: Option<Branch>) -> String {
    branch.map_or(project, |branch| branch.name)
}

fn main() {}
