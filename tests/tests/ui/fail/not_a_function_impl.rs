use registry_core::tool;

struct Builds;

/// Read the build status.
#[tool(public)]
impl Builds {
    fn get_status(&self, project: String) -> String {
        project
    }
}

fn main() {}
