#[tool(public)]
/// Search the logs.
fn search(query: String, limit: Option<u32>, since: std::option::Option<String>) -> String {
    format!("{query} {limit:?} {since:?}")
}
