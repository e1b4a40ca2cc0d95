#[tool(public, read_only)]
/// Tell the server's time.
fn server_time() -> String {
    "12:00".into()
}
