//! The `#[tool]` attribute macro on token streams: it must answer every input with tokens
//! (the expansion, or the item and `compile_error!`s), never panic.
//!
//! A proc-macro crate exports nothing but its macros, so the macro's own modules are
//! compiled into this binary unchanged with `#[path]`: `registry-macros/src/lib.rs` only
//! converts `proc_macro::TokenStream` to `proc_macro2::TokenStream` and calls
//! `expand::tool`, which is what is called here (proc-macro2 runs on its fallback lexer
//! outside the compiler).
//!
//! Input: UTF-8 Rust source, lexed with `proc_macro2::TokenStream::from_str`. When it starts
//! with `#[tool(ARGS)]` (or `#[tool]`, `#[tool[...]]`, `#[tool{...}]`), ARGS are the
//! attribute's arguments and the rest is the item, as the compiler would pass them;
//! otherwise the arguments are empty and the whole input is the item.
//!
//! Beyond "no panic": an expansion without `compile_error!` must parse as Rust items (unless
//! `crate = ...` names a 2018 keyword, see `crate_path_has_keyword`).

#![no_main]
#![allow(dead_code, unreachable_pub)]

#[path = "../../registry-macros/src/attr.rs"]
mod attr;
#[path = "../../registry-macros/src/check.rs"]
mod check;
#[path = "../../registry-macros/src/ctxt.rs"]
mod ctxt;
#[path = "../../registry-macros/src/doc.rs"]
mod doc;
#[path = "../../registry-macros/src/expand.rs"]
mod expand;
#[path = "../../registry-macros/src/header.rs"]
mod header;
#[path = "../../registry-macros/src/model.rs"]
mod model;
#[path = "../../registry-macros/src/name.rs"]
mod name;
#[path = "../../registry-macros/src/symbol.rs"]
mod symbol;

use std::str::FromStr;

use libfuzzer_sys::fuzz_target;
use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// Splits `#[tool(ARGS)] ITEM` into ARGS and ITEM; `None` for an attribute the compiler would
/// not pass to the macro (`#[tool = ...]`).
fn split(tokens: TokenStream) -> Option<(TokenStream, TokenStream)> {
    let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let attribute = match trees.as_slice() {
        [TokenTree::Punct(pound), TokenTree::Group(group), ..]
            if pound.as_char() == '#' && group.delimiter() == Delimiter::Bracket =>
        {
            group.stream()
        }
        _ => return Some((TokenStream::new(), tokens)),
    };
    let inside: Vec<TokenTree> = attribute.into_iter().collect();
    let args = match inside.as_slice() {
        [TokenTree::Ident(tool)] if tool == "tool" => TokenStream::new(),
        [TokenTree::Ident(tool), TokenTree::Group(args)]
            if tool == "tool" && args.delimiter() != Delimiter::None =>
        {
            args.stream()
        }
        [TokenTree::Ident(tool), ..] if tool == "tool" => return None,
        _ => return Some((TokenStream::new(), tokens)),
    };
    Some((args, trees[2..].iter().cloned().collect()))
}

/// Whether the `crate = ...` path of `args` names a keyword of Rust 2018 and later (`try`,
/// `async`, ...). syn reads such a path, as Rust 2015 allows; the expansion then has
/// `try::__private::...` in type position, which syn (and rustc, in 2018 and later, with an
/// error at the user's `try`) refuses. Not a defect of the macro: see bench/fuzz/README.md.
fn crate_path_has_keyword(args: &TokenStream) -> bool {
    let trees: Vec<TokenTree> = args.clone().into_iter().collect();
    trees.windows(2).enumerate().any(|(at, pair)| match pair {
        [TokenTree::Ident(key), TokenTree::Punct(eq)] if key == "crate" && eq.as_char() == '=' => {
            trees[at + 2..]
                .iter()
                .take_while(|tree| !matches!(tree, TokenTree::Punct(p) if p.as_char() == ','))
                .any(|tree| {
                    matches!(tree, TokenTree::Ident(ident)
                        if ["async", "await", "dyn", "try", "gen"].iter().any(|kw| ident == kw))
                })
        }
        _ => false,
    })
}

fn has_compile_error(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tree| match tree {
        TokenTree::Ident(ident) => ident == "compile_error",
        TokenTree::Group(group) => has_compile_error(group.stream()),
        _ => false,
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(tokens) = TokenStream::from_str(text) else {
        return;
    };
    let Some((args, item)) = split(tokens) else {
        return;
    };
    let keyword_crate = crate_path_has_keyword(&args);
    let expanded = expand::tool(args, item);
    std::hint::black_box(expanded.to_string());
    if !keyword_crate
        && !has_compile_error(expanded.clone())
        && let Err(error) = syn::parse2::<syn::File>(expanded.clone())
    {
        panic!("an expansion without errors is not Rust items ({error}):\n{expanded}");
    }
});
