#[tool(public, name = "a-_b")]
/// Dashes elsewhere again.
fn dash_before_underscore() {}
