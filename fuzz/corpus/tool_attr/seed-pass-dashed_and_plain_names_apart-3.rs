#[tool(public, name = "a_-b")]
/// Dashes elsewhere.
fn dash_after_underscore() {}
