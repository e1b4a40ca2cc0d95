#[tool("get_status")]
/// Doc.
fn get_status() -> String { String::new() }
