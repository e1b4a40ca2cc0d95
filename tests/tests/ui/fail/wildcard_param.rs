use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn get_status(_: String) -> String {
    String::new()
}

fn main() {}
