// `require_docs`: a parameter without a doc comment is warned about, on the parameter (made an
// error here by `deny`, so that the case shows the warning).
#![deny(deprecated)]

use registry_core::{tool, ToolContext};

/// List the builds of a project.
#[tool(public, read_only, require_docs)]
fn list_builds(
    /// The project's id, e.g. `web`.
    project: String,
    limit: u32,
    _ctx: &ToolContext,
) -> String {
    format!("{project}: {limit}")
}

fn main() {}
