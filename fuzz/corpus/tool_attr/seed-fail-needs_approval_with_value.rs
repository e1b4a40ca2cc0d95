#[tool(public, needs_approval = true)]
/// Send a message to a channel.
fn send_message(channel: String, text: String) -> bool {
    channel.is_empty() || text.is_empty()
}
