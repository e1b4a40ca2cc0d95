use registry_core::tool;

/// Ping the gateway at 10.0.0.1.
#[tool(
    public,
    allow_description = "only operators' runs see this tool",
    allow_description = "the gateway address is not a secret"
)]
fn ping_gateway() -> String {
    "pong".into()
}

fn main() {}
