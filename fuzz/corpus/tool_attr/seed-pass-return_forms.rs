#[tool(public)]
/// Return a plain value.
fn plain() -> Vec<u8> {
    vec![1, 2]
}
