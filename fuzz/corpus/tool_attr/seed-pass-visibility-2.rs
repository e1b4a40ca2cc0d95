#[tool(public)]
/// A private tool.
fn private_tool() -> u8 {
    3
}
