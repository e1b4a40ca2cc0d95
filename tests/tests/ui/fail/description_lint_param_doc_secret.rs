use registry_core::tool;

/// Read the build status of a project.
#[tool(public, read_only)]
fn get_status(
    /// The project, e.g. `web`.
    project: String,
    /// The CI token; the default is ghp_1A2b3C4d5E6f7G8h9I0j1K2l3M4n5O6p7Q8r.
    token: Option<String>,
) -> String {
    format!("{project}{token:?}")
}

fn main() {}
