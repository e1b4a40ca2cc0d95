#[tool(public)]
/// A crate-visible tool.
pub(crate) fn crate_tool() -> u8 {
    2
}
