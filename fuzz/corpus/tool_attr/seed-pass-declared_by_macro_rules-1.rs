#[tool(public)]
/// Name the tool.
        fn context_from_macro(ctx: $ctx) -> String {
            ctx.tool_name().to_owned()
        }
