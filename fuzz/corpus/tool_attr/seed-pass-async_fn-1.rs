#[tool(public)]
/// Check the context, eventually.
async fn whoami(ctx: &ToolContext) -> String {
    std::future::ready(()).await;
    ctx.call_id().to_owned()
}
