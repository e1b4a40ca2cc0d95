#[tool(public, name = "get-status")]
/// Read the status.
fn status() -> bool {
    true
}
