#[tool(public, rate_limit = "10 per minute")]
/// Send a message to a channel.
fn send_message(channel: String, text: String) -> bool {
    channel.is_empty() || text.is_empty()
}
