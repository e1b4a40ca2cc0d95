#[tool(public)]
/// Read the build status.
fn get_status(ctx: &mut ToolContext, project: String) -> String {
    format!("{project} {}", ctx.call_id())
}
