#[tool(public)]
/// Say who called.
fn whoami(#[header("Caller")] ctx: &ToolContext) -> String {
    ctx.tool_name().to_owned()
}
