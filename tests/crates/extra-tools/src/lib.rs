//! Tools declared in a crate of their own, to test collection across crates.

use registry_core::tool;

/// Count the words of a text.
#[tool(public, read_only, idempotent)]
pub fn count_words(
    /// The text to count.
    text: String,
) -> usize {
    text.split_whitespace().count()
}

/// Tools about text, in a module of their own.
pub mod text {
    use registry_core::tool;

    /// Reverse a text, character by character.
    #[tool(public, title = "Reverse text")]
    pub async fn reverse_text(text: String) -> String {
        text.chars().rev().collect()
    }
}
