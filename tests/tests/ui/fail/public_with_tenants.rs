// `public` beside `tenants` would be a lie: the tool is not visible to every tenant.
use registry_core::tool;

/// Read the build status.
#[tool(public, tenants = "acme")]
fn get_status() -> String {
    "passed".into()
}

fn main() {}
