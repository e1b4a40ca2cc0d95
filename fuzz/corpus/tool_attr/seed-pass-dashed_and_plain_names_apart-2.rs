#[tool(public, name = "a_b")]
/// A name that spells the dashed one with `_` instead.
fn underscored() {}
