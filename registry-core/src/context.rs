//! What a running tool knows about the call it serves.

use std::sync::Arc;

/// The context of one call, given to any tool that takes a `&ToolContext` parameter.
///
/// It is left out of the tool's schema: the model never sees or sets it.
///
/// ```
/// use registry_core::{tool, ToolContext};
///
/// /// Say which call this is.
/// #[tool]
/// fn whoami(ctx: &ToolContext) -> String {
///     format!("{} in call {}", ctx.tool_name(), ctx.call_id())
/// }
/// ```
#[derive(Debug, Clone)]
pub struct ToolContext {
    call_id: Arc<str>,
    tool_name: Arc<str>,
}

impl ToolContext {
    /// The context of call `call_id` to the tool `tool_name`.
    pub fn new(call_id: impl Into<Arc<str>>, tool_name: impl Into<Arc<str>>) -> Self {
        ToolContext {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
        }
    }

    /// The id the model gave the call (OpenAI `tool_call_id`, Anthropic `tool_use_id`, ...).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The name of the tool being called.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }
}
