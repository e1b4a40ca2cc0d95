#[tool(public)]
/// Context in the middle.
fn context_middle(a: String, ctx: &registry_core::ToolContext, b: String) -> String {
    format!("{a}:{}:{b}", ctx.call_id())
}
