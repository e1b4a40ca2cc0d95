#[tool(public)]
/// Return nothing, spelled out.
fn unit() -> () {}
