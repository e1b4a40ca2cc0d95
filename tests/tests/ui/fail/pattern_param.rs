use registry_core::tool;

/// Read the build status.
#[tool(public)]
fn get_status((project, branch): (String, String)) -> String {
    project + &branch
}

fn main() {}
