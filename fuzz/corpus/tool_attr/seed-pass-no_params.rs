#[tool(public)]
/// Tell the time, always noon.
fn now() -> String {
    "12:00".to_owned()
}
