#[tool(public, allow_description = " ")]
/// Ping the gateway at 10.0.0.1.
fn ping_gateway() -> String {
    "pong".into()
}
