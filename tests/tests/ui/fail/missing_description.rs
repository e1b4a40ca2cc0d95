use registry_core::tool;

#[tool]
fn get_status(project: String) -> String {
    project
}

fn main() {}
