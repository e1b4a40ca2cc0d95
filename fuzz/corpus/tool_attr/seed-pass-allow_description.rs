#[tool(
    public,
    allow_description = "only operators' runs see this tool, and they know the gateway"
)]
/// Ping the gateway at 10.0.0.1.
fn ping_gateway(
    /// How many pings, e.g. 3; the gateway's other address is fd00::1.
    count: Option<u32>,
) -> String {
    format!("pong x{}", count.unwrap_or(1))
}
