//! Reads `///` doc comments: the tool's, and the parameters' (which are then removed, since
//! rustc rejects doc comments on parameters after expansion).

use syn::{Attribute, Expr, ExprLit, FnArg, ItemFn, Lit, Meta};

/// The text of the `#[doc = "..."]` attributes among `attrs`, with the common indentation
/// removed and blank lines at either end dropped; `None` when there is none.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter_map(doc_line)
        .flat_map(|chunk| chunk.split('\n').map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let indent = lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()?;
    let text = lines
        .iter()
        .map(|line| line.get(indent..).unwrap_or("").trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim_matches('\n').to_owned();
    (!text.is_empty()).then_some(text)
}

fn doc_line(attr: &Attribute) -> Option<String> {
    let Meta::NameValue(meta) = &attr.meta else {
        return None;
    };
    if !meta.path.is_ident("doc") {
        return None;
    }
    match &meta.value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => Some(text.value()),
        _ => None,
    }
}

/// Removes the doc attributes of every parameter of `item` and returns their texts, one per
/// parameter in order.
pub(crate) fn take_param_docs(item: &mut ItemFn) -> Vec<Option<String>> {
    item.sig
        .inputs
        .iter_mut()
        .map(|input| {
            let attrs = match input {
                FnArg::Typed(arg) => &mut arg.attrs,
                FnArg::Receiver(receiver) => &mut receiver.attrs,
            };
            let text = doc_text(attrs);
            attrs.retain(|attr| !attr.path().is_ident("doc"));
            text
        })
        .collect()
}
