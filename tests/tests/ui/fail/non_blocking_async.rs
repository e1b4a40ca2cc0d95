use registry_core::tool;

/// Fetch the status of a build.
#[tool(public, non_blocking)]
async fn build_status(id: String) -> String {
    id
}

fn main() {}
