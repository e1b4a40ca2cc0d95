//! A tool that needs a credential: it is registered always, and shown only when ready.

use registry_core::tool;

/// The variable that holds the chat webhook; without it `notify_chat` is not ready.
pub const WEBHOOK_VARIABLE: &str = "CHAT_WEBHOOK_URL";

/// Post a message to the team's chat channel.
#[tool(scopes = "chat:write", open_world)]
pub fn notify_chat(
    /// The message, in plain text.
    message: String,
) -> Result<String, String> {
    let webhook = std::env::var(WEBHOOK_VARIABLE).map_err(|_| "the chat is not configured")?;
    let host = webhook.split('/').nth(2).unwrap_or("the webhook");
    Ok(format!("posted {} characters to {host}", message.len()))
}

/// The readiness check of `notify_chat`: its webhook is configured.
pub fn ready() -> Result<(), String> {
    match std::env::var(WEBHOOK_VARIABLE) {
        Ok(url) if url.starts_with("https://") => Ok(()),
        Ok(_) => Err(format!("{WEBHOOK_VARIABLE} is not an https:// URL")),
        Err(_) => Err(format!("{WEBHOOK_VARIABLE} is not set")),
    }
}
