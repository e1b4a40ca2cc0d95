use registry_core::tool;

/// Read the build status.
#[tool]
struct GetStatus {
    project: String,
}

fn main() {}
