#[tool]
/// Return nothing, spelled out.
fn unit() -> () {}
