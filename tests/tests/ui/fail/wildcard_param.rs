use registry_core::tool;

/// Read the build status.
#[tool]
fn get_status(_: String) -> String {
    String::new()
}

fn main() {}
