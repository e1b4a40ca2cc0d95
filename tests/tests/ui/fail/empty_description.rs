use registry_core::tool;

#[tool(description = "  ")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
