#[tool(public)]
/// Tag a build.
fn tag(#[header("Tags")] tags: Vec<String>) -> usize {
    tags.len()
}
