//! The `#[tool]` attribute macro.
//!
//! This crate is an implementation detail of `registry-core`, which re-exports [`macro@tool`]
//! and documents it. Depend on `registry-core` instead.
//!
//! The macro works in three steps, one file each: `attr` and `model` parse the attribute
//! (its keys spelled once, in `symbol`) and the function, `check` validates them and resolves
//! every value into a typed `Spec`, and `expand` only writes the code of that spec. Every mistake
//! found on the way is collected in a `ctxt::Ctxt` and reported at once, spanned on the
//! offending token. `header` reads and checks the parameters' `#[header("...")]`.

// docs.rs only (it sets `--cfg docsrs`): show beside each feature-gated item the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Library code reports failures; it does not unwrap them (tests may). Set here, not in
// [workspace.lints]: see the root Cargo.toml.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod attr;
mod check;
mod ctxt;
mod doc;
mod expand;
mod header;
mod model;
mod name;
mod symbol;

use proc_macro::TokenStream;

/// Declares a function as a tool; documented in `registry-core`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::tool(args.into(), input.into()).into()
}
