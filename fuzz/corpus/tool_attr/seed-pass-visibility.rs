#[tool(public)]
/// A public tool.
pub fn public_tool() -> u8 {
    1
}
