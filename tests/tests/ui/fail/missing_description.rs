use registry_core::tool;

#[tool(public)]
fn get_status(project: String) -> String {
    project
}

fn main() {}
