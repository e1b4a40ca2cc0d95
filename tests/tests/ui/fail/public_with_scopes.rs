// `public` beside `scopes` would be a lie: the tool is not visible to everyone.
use registry_core::tool;

/// Read the build status.
#[tool(public, scopes = "build:read")]
fn get_status() -> String {
    "passed".into()
}

fn main() {}
