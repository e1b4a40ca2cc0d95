#[tool(public, task = "always")]
/// Rebuild the search index.
fn rebuild_index() -> String {
    "rebuilt".into()
}
