#[tool(public)]
/// Context first.
fn context_first(ctx: &ToolContext, a: String, b: String) -> String {
    format!("{}:{a}{b}", ctx.call_id())
}
