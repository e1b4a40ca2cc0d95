use registry_core::{Registry, tool};
use serde_json::json;

/// Read the current build status of a project.
///
/// Returns the state of the last pipeline run.
#[tool(public)]
fn get_status(
    /// Project identifier, e.g. `web`.
    project: String,
    /// Include the last log lines.
    ///
    /// At most 20.
    verbose: Option<bool>,
    undocumented: u8,
) -> String {
    format!("{project} {verbose:?} {undocumented}")
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let definition = registry.get("get_status").unwrap().definition();
    assert_eq!(
        definition.description,
        "Read the current build status of a project.\n\nReturns the state of the last pipeline run."
    );
    let properties = &definition.parameters["properties"];
    assert_eq!(
        properties["project"]["description"],
        json!("Project identifier, e.g. `web`.")
    );
    assert_eq!(
        properties["verbose"]["description"],
        json!("Include the last log lines.\n\nAt most 20.")
    );
    assert!(properties["undocumented"].get("description").is_none());
}
