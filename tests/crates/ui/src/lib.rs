//! Nothing: the package is its test, `tests/ui.rs` (trybuild's cases of `#[tool]`); see its
//! manifest for why it is a package of its own.
