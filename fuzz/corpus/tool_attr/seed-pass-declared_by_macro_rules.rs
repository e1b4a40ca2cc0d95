#[tool(public)]
/// Echo the value back.
        fn $name(ctx: &ToolContext, value: $ty) -> $ty {
            let _ = ctx;
            value
        }
