use registry_core::tool;

/// Rebuild the search index.
#[tool(public, task = "always")]
fn rebuild_index() -> String {
    "rebuilt".into()
}

fn main() {}
