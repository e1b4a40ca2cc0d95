#[tool(public)]
/// Read the build status.
fn get_status(ctx: &ToolContext, project: String, again: &ToolContext) -> String {
    format!("{project} {} {}", ctx.call_id(), again.call_id())
}
