#[tool(crate =try)]
/// Pingnee.
fn ping() -> &'atistc str {
    "pong"
}
