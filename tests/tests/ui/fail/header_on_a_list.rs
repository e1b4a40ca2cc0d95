use registry_core::tool;

/// Tag a build.
#[tool(public)]
fn tag(#[header("Tags")] tags: Vec<String>) -> usize {
    tags.len()
}

fn main() {}
