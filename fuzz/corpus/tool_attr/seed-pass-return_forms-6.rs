#[tool(public)]
/// Fail with an `io::Result` alias.
fn alias_error() -> std::io::Result<()> {
    Err(std::io::Error::other("disk full"))
}
