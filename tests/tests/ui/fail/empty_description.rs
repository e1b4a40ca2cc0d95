use registry_core::tool;

#[tool(public, description = "  ")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
