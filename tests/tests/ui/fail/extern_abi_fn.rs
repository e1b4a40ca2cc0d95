use registry_core::tool;

/// Read the build status.
#[tool(public)]
extern "C" fn get_status(project: u32) -> u32 {
    project
}

fn main() {}
