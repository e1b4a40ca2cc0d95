use registry_core::tool;

struct Builds;

impl Builds {
    /// Read the build status.
    #[tool(public)]
    fn get_status(&self, project: String) -> String {
        project
    }
}

fn main() {}
