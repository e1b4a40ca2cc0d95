//! Tools named like those of `dup-one`: `search` and `lookup` clash, `only_in_two` does not.

use registry_core::tool;

/// A search engine.
pub mod engine {
    use registry_core::tool;

    /// Search the second index.
    #[tool(public, read_only)]
    pub fn search(
        /// What to look for.
        query: String,
    ) -> String {
        format!("dup-two found {query}")
    }
}

/// Look a key up in the second table.
#[tool(public)]
pub fn lookup(key: String) -> String {
    format!("dup-two: {key}")
}

/// A tool only this crate declares.
#[tool(public)]
pub fn only_in_two() -> &'static str {
    "two"
}
