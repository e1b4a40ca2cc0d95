#[tool(public)]
/// Only the context.
fn context_only(ctx: &ToolContext) -> String {
    ctx.tool_name().to_owned()
}
