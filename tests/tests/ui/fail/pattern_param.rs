use registry_core::tool;

/// Read the build status.
#[tool]
fn get_status((project, branch): (String, String)) -> String {
    project + &branch
}

fn main() {}
