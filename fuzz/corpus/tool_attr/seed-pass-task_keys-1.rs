#[tool(public, task = "required")]
/// Rebuild the search index from scratch.
fn rebuild_index() -> String {
    "rebuilt".into()
}
