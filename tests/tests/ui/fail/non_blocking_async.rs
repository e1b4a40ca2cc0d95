use registry_core::tool;

/// Fetch the status of a build.
#[tool(public, non_blocking)]
async fn build_status(id: String) -> String {
    id
}

/// Fetch the logs of a build.
#[tool(public, blocking)]
async fn build_logs(id: String) -> String {
    id
}

/// Fetch the artifacts of a build.
#[tool(public, non_blocking, blocking)]
fn build_artifacts(id: String) -> String {
    id
}

fn main() {}
