#[tool(public, name = "a-b")]
/// A name with a dash.
fn dashed() {}
