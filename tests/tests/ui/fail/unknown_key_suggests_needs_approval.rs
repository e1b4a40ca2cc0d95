use registry_core::tool;

/// Send a message to a channel.
#[tool(public, needs_aproval)]
fn send_message(channel: String, text: String) -> bool {
    channel.is_empty() || text.is_empty()
}

fn main() {}
