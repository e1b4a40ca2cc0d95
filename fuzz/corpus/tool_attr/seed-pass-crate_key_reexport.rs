#[tool(public, crate = crate::runtime::registry)]
/// Ping through a re-exported runtime.
fn ping() -> &'static str {
    "pong"
}
