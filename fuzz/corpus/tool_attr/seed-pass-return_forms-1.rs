#[tool(public)]
/// Return nothing.
fn nothing() {}
