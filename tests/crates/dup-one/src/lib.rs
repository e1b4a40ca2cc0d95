//! Tools named like those of `dup-two`: `search` and `lookup` clash, `only_in_one` does not.

use registry_core::tool;

/// Search the first index.
#[tool(public, read_only)]
pub fn search(
    /// What to look for.
    query: String,
) -> String {
    format!("dup-one found {query}")
}

/// Look things up, the first way.
pub mod lookup {
    use registry_core::tool;

    /// Look a key up in the first table.
    #[tool(public)]
    pub fn lookup(key: String) -> String {
        format!("dup-one: {key}")
    }
}

/// A tool only this crate declares.
#[tool(public)]
pub fn only_in_one() -> &'static str {
    "one"
}
