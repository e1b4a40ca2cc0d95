#[tool]
/// Return nothing.
fn nothing() {}
