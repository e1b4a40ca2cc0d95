#[tool(public, name = "x612d62")]
/// A name that spells the dashed one's guard, were it written in hexadecimal.
fn hex_like() {}
