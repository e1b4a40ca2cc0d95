#[tool(public)]
/// Return nothing, spelled out.
#[allow(clippy::unused_unit)] // the form under test
fn unit() -> () {}
