use registry_core::tool;

/// Ping the gateway at 10.0.0.1.
///
/// Authenticate with sk-proj-4fG7hJ2kL9mN3pQ8rS1tU6vW when the cache is cold.
#[tool(
    scopes = "ops:read",
    allow_description = "only operators' runs see this tool, and they know the gateway"
)]
fn ping_gateway(
    /// The gateway's token, ghp_1A2b3C4d5E6f7G8h9I0j1K2l3M4n5O6p7Q8r; the other one is fd00::1.
    count: Option<u32>,
) -> String {
    format!("pong x{}", count.unwrap_or(1))
}

fn main() {}
