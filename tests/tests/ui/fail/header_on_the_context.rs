use registry_core::{ToolContext, tool};

/// Say who called.
#[tool(public)]
fn whoami(#[header("Caller")] ctx: &ToolContext) -> String {
    ctx.tool_name().to_owned()
}

fn main() {}
