#[tool(public, name = "get_status")]
/// Read the status, with a dash and an underscore apart.
fn status_underscore() -> bool {
    true
}
