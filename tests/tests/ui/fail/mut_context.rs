use registry_core::tool;

use registry_core::ToolContext;

/// Read the build status.
#[tool(public)]
fn get_status(ctx: &mut ToolContext, project: String) -> String {
    format!("{project} {}", ctx.call_id())
}

fn main() {}
