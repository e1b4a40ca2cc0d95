use registry_core::tool;

/// Read the build status.
#[tool(public)]
struct GetStatus {
    project: String,
}

fn main() {}
