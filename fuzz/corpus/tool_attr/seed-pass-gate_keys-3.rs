#[tool(public, name = "reindex", rate_limit = "1/h")]
/// Rebuild the search index.
fn rebuild_index() {}
