// `require_docs` on a tool whose every parameter is described: no warning (warnings are errors
// here), and the registry's `require_documented_parameters` takes it.
#![deny(warnings)]

use registry_core::{Registry, ToolContext, tool};

/// A filter on the builds listed.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Filter {
    /// Only builds of this branch.
    branch: Option<String>,
}

/// List the builds of a project.
#[tool(public, read_only, require_docs)]
fn list_builds(
    /// The project's id, e.g. `web`.
    project: String,
    /// At most this many.
    limit: Option<u32>,
    /// Which builds.
    filter: Filter,
    // The context is not a parameter the model fills: it needs no doc comment.
    _ctx: &ToolContext,
) -> String {
    format!("{project}: {limit:?} {:?}", filter.branch)
}

fn main() {
    let registry = Registry::builder()
        .declared()
        .require_documented_parameters()
        .build()
        .unwrap();
    let definition = registry.get("list_builds").unwrap().definition();
    assert_eq!(
        definition.parameters["properties"]["limit"]["description"],
        "At most this many."
    );
}
