//! `#[header("Region")]` on a parameter: mirror it into the HTTP header `Mcp-Param-Region`
//! on MCP (SEP-2243). Taken off the parameter (like its doc comment) and checked here: one
//! string literal that is an HTTP token, one header per parameter, no header twice in a
//! tool, on a parameter of a primitive type. The same rules as `DynamicTool::header`
//! (registry-core's `declare::header`).

use proc_macro2::Span;
use syn::{Attribute, FnArg, ItemFn, LitStr, Type};

use crate::ctxt::Ctxt;
use crate::model::{ParamKind, ToolFn, ungroup};

/// The attribute's name.
const HEADER: &str = "header";
/// The longest header name accepted (as registry-core's `MAX_HEADER_NAME`).
const MAX_HEADER_NAME: usize = 64;

/// A parameter's `#[header("...")]`: the name and the literal it was written in.
pub(crate) struct Header {
    pub(crate) name: String,
    pub(crate) literal: LitStr,
    attr: Attribute,
}

/// Removes the `#[header]` attributes of every parameter of `item` and returns them, one
/// entry per parameter in order; a malformed one is reported and left out.
pub(crate) fn take_param_headers(cx: &Ctxt, item: &mut ItemFn) -> Vec<Option<Header>> {
    item.sig
        .inputs
        .iter_mut()
        .map(|input| {
            let attrs = match input {
                FnArg::Typed(arg) => &mut arg.attrs,
                FnArg::Receiver(receiver) => &mut receiver.attrs,
            };
            let (headers, rest): (Vec<Attribute>, Vec<Attribute>) = std::mem::take(attrs)
                .into_iter()
                .partition(|attr| attr.path().is_ident(HEADER));
            *attrs = rest;
            let mut found = None;
            for attr in headers {
                let literal = match attr.parse_args::<LitStr>() {
                    Ok(literal) => literal,
                    Err(_) => {
                        cx.error_spanned_by(
                            &attr,
                            "`#[header]` takes the header's name as one string: `#[header(\"Region\")]` mirrors the parameter into `Mcp-Param-Region`",
                        );
                        continue;
                    }
                };
                if found.is_some() {
                    cx.error_spanned_by(
                        &attr,
                        "a parameter is mirrored into one header; remove this second `#[header]`",
                    );
                    continue;
                }
                found = Some(Header {
                    name: literal.value(),
                    literal,
                    attr,
                });
            }
            found
        })
        .collect()
}

/// Checks the headers of `tool`'s parameters.
pub(crate) fn check(cx: &Ctxt, tool: &ToolFn<'_>) {
    let mut seen: Vec<(String, Span)> = Vec::new();
    for param in &tool.params {
        let Some(header) = &param.header else {
            continue;
        };
        if let Err(reason) = check_name(&header.name) {
            cx.error_spanned_by(&header.literal, reason);
        }
        let lower = header.name.to_ascii_lowercase();
        if seen.iter().any(|(name, _)| *name == lower) {
            cx.error_spanned_by(
                &header.literal,
                format!(
                    "another parameter is mirrored into the header {:?} already (header names are compared without case); give each its own header",
                    header.name
                ),
            );
        }
        seen.push((lower, header.literal.span()));
        match param.kind {
            ParamKind::Context => cx.error_spanned_by(
                &header.attr,
                "the `&ToolContext` parameter is not an argument: it cannot be mirrored into a header",
            ),
            ParamKind::Required if !is_primitive(param.ty) => not_primitive(cx, param.ty),
            ParamKind::Optional { .. } => cx.error_spanned_by(
                param.ty,
                "a parameter mirrored into a header cannot be an `Option`: MCP clients mirror only a string, an integer or a bool (its schema is nullable); make it required",
            ),
            _ => {}
        }
    }
}

fn not_primitive(cx: &Ctxt, ty: &Type) {
    cx.error_spanned_by(
        ty,
        "a parameter mirrored into a header must be a string, an integer or a bool: a header holds one value, and MCP clients mirror only those",
    );
}

/// Whether `ty` is written as a string, number or bool type.
fn is_primitive(ty: &Type) -> bool {
    const PRIMITIVE: [&str; 14] = [
        "String", "bool", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64",
        "u128", "usize",
    ];
    match ungroup(ty) {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last().is_some_and(|last| {
            PRIMITIVE.contains(&last.ident.to_string().as_str()) && last.arguments.is_none()
        }),
        _ => false,
    }
}

/// Why `name` is not a header name (the rules of registry-core's `check_header_name`).
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(
            "the header name is empty; name the header, e.g. `#[header(\"Region\")]`".to_owned(),
        );
    }
    if name.len() > MAX_HEADER_NAME {
        return Err(format!(
            "the header name is {} characters long; the most is {MAX_HEADER_NAME}",
            name.len()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(*c)))
    {
        return Err(format!(
            "the header name {name:?} holds {:?}, which an HTTP header name cannot; use letters, digits and any of !#$%&'*+-.^_`|~",
            bad.to_string()
        ));
    }
    Ok(())
}
