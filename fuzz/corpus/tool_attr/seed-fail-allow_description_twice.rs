#[tool(
    public,
    allow_description = "only operators' runs see this tool",
    allow_description = "the gateway address is not a secret"
)]
/// Ping the gateway at 10.0.0.1.
fn ping_gateway() -> String {
    "pong".into()
}
