#[tool(public)]
/// Context last.
fn context_last(a: String, b: String, ctx: &ToolContext) -> String {
    format!("{a}{b}:{}", ctx.call_id())
}
