use registry_core::tool;

/// Send a message to a channel.
#[tool(public, rate_limit = "ten/min")]
fn send_message(channel: String, text: String) -> bool {
    channel.is_empty() || text.is_empty()
}

fn main() {}
