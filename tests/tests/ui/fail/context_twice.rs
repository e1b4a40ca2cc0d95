use registry_core::tool;

use registry_core::ToolContext;

/// Read the build status.
#[tool(public)]
fn get_status(ctx: &ToolContext, project: String, again: &ToolContext) -> String {
    format!("{project} {} {}", ctx.call_id(), again.call_id())
}

fn main() {}
