#[tool(public)]
/// Read the current build status of a project.
///
/// Returns the state of the last pipeline run.
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
