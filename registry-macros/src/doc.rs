//! Reads `///` doc comments: the tool's, and the parameters' (which are then removed, since
//! rustc rejects doc comments on parameters after expansion).

use std::ops::Range;

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Attribute, Expr, ExprLit, FnArg, ItemFn, Lit, Meta};

/// The text of some doc attributes, and which attribute each of its lines came from, so that
/// an error about part of the text points at the comment that holds it.
#[derive(Clone)]
pub(crate) struct Doc {
    /// The text: the common indentation removed, blank lines at either end dropped.
    pub(crate) text: String,
    /// Each line of `text`: where it starts, and the index in `attrs` of its attribute.
    lines: Vec<(usize, usize)>,
    /// The `#[doc = "..."]` attributes, in order.
    attrs: Vec<Attribute>,
}

impl Doc {
    /// The attributes that hold `range` of the text: one `///` line, or the lines a match
    /// spans.
    pub(crate) fn attrs_holding(&self, range: Range<usize>) -> TokenStream {
        let attr_at = |offset: usize| {
            let line = self.lines.partition_point(|(start, _)| *start <= offset);
            self.lines[line.saturating_sub(1)].1
        };
        let first = attr_at(range.start);
        let last = attr_at(range.end.saturating_sub(1).max(range.start));
        self.attrs[first..=last.max(first)]
            .iter()
            .map(ToTokens::to_token_stream)
            .collect()
    }
}

/// The `#[doc = "..."]` attributes among `attrs`, read as one text with the common
/// indentation removed and blank lines at either end dropped; `None` when there is none.
pub(crate) fn doc(attrs: &[Attribute]) -> Option<Doc> {
    let docs: Vec<(&Attribute, String)> = attrs
        .iter()
        .filter_map(|attr| doc_line(attr).map(|text| (attr, text)))
        .collect();
    let lines: Vec<(usize, &str)> = docs
        .iter()
        .enumerate()
        .flat_map(|(index, (_, chunk))| chunk.split('\n').map(move |line| (index, line)))
        .collect();
    let indent = lines
        .iter()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(_, line)| line.len() - line.trim_start().len())
        .min()?;
    let lines: Vec<(usize, &str)> = lines
        .iter()
        .map(|(index, line)| (*index, line.get(indent..).unwrap_or("").trim_end()))
        .collect();
    let first = lines.iter().position(|(_, line)| !line.is_empty())?;
    let last = lines.iter().rposition(|(_, line)| !line.is_empty())?;
    let mut text = String::new();
    let mut starts = Vec::with_capacity(last + 1 - first);
    for (index, line) in &lines[first..=last] {
        if !starts.is_empty() {
            text.push('\n');
        }
        starts.push((text.len(), *index));
        text.push_str(line);
    }
    Some(Doc {
        text,
        lines: starts,
        attrs: docs.into_iter().map(|(attr, _)| attr.clone()).collect(),
    })
}

/// The text of the doc attributes among `attrs`; `None` when there is none.
#[cfg(test)]
fn doc_text(attrs: &[Attribute]) -> Option<String> {
    doc(attrs).map(|doc| doc.text)
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
pub(crate) fn take_param_docs(item: &mut ItemFn) -> Vec<Option<Doc>> {
    item.sig
        .inputs
        .iter_mut()
        .map(|input| {
            let attrs = match input {
                FnArg::Typed(arg) => &mut arg.attrs,
                FnArg::Receiver(receiver) => &mut receiver.attrs,
            };
            let text = doc(attrs);
            attrs.retain(|attr| !attr.path().is_ident("doc"));
            text
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::{doc, doc_text};

    #[test]
    fn indentation_and_blank_lines_at_the_ends_go() {
        let item: syn::ItemFn = parse_quote! {
            #[doc = ""]
            #[doc = "   Read the status."]
            #[doc = ""]
            #[doc = "     Indented.  "]
            #[doc = "   Last.\n   Lines."]
            #[doc = "  "]
            fn f() {}
        };
        assert_eq!(
            doc_text(&item.attrs).unwrap(),
            "Read the status.\n\n  Indented.\nLast.\nLines."
        );
        let empty: syn::ItemFn = parse_quote! {
            #[doc = "  "]
            fn f() {}
        };
        assert!(doc_text(&empty.attrs).is_none());
    }

    #[test]
    fn each_range_maps_to_the_attributes_holding_it() {
        let item: syn::ItemFn = parse_quote! {
            #[doc = " One."]
            #[inline]
            #[doc = ""]
            #[doc = " Two.\n Three."]
            #[doc = " Four."]
            fn f() {}
        };
        let doc = doc(&item.attrs).unwrap();
        assert_eq!(doc.text, "One.\n\nTwo.\nThree.\nFour.");
        let holding = |needle: &str| {
            let start = doc.text.find(needle).unwrap();
            doc.attrs_holding(start..start + needle.len()).to_string()
        };
        assert_eq!(holding("One"), r#"# [doc = " One."]"#);
        assert_eq!(holding("Three"), r#"# [doc = " Two.\n Three."]"#);
        assert_eq!(holding("Four"), r#"# [doc = " Four."]"#);
        assert_eq!(
            holding("Three.\nFour"),
            r#"# [doc = " Two.\n Three."] # [doc = " Four."]"#
        );
    }
}
