#[tool(public, rate_limit = "3/s", read_only)]
/// Look a word up.
fn define(word: String) -> String {
    word
}
