use registry_core::tool;

/// Ping the gateway at 10.0.0.1.
#[tool(public, allow_description = " ")]
fn ping_gateway() -> String {
    "pong".into()
}

fn main() {}
