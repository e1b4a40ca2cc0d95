//! A model of the annotated function: its parameters and its return type, read leniently.
//! Whatever the model cannot use is reported by `check`.

use syn::{FnArg, GenericArgument, Ident, ItemFn, Pat, PatType, PathArguments, ReturnType, Type};

use crate::doc::Doc;
use crate::header::Header;

/// The function under `#[tool]`.
pub(crate) struct ToolFn<'a> {
    pub(crate) item: &'a ItemFn,
    pub(crate) doc: Option<Doc>,
    /// A `self` receiver, which a tool cannot have.
    pub(crate) receiver: Option<&'a syn::Receiver>,
    pub(crate) params: Vec<Param<'a>>,
    pub(crate) output: Output<'a>,
}

/// One typed parameter of the function.
pub(crate) struct Param<'a> {
    pub(crate) arg: &'a PatType,
    /// The binding, when the parameter is a plain identifier.
    pub(crate) ident: Option<&'a Ident>,
    pub(crate) ty: &'a Type,
    pub(crate) doc: Option<Doc>,
    pub(crate) kind: ParamKind<'a>,
    /// `#[header("...")]`: the HTTP header it is mirrored into on MCP.
    pub(crate) header: Option<Header>,
}

/// What a parameter is to the tool.
pub(crate) enum ParamKind<'a> {
    /// `&ToolContext`: given by the registry, not part of the schema.
    Context,
    /// An argument the model must give.
    Required,
    /// `Option<T>`: an argument the model may leave out or set to `null`.
    Optional { inner: &'a Type },
}

/// What the function returns.
pub(crate) enum Output<'a> {
    /// Nothing (`()`): the result is `null`.
    Unit,
    /// A value to serialize.
    Value(&'a Type),
    /// A `Result<T, E>` (or an alias named `Result`): `Ok` is serialized, `Err` displayed.
    Result {
        ty: &'a Type,
        /// `T` and `E`, when the type is written `Result<T, E>` rather than as an alias.
        args: Option<(&'a Type, &'a Type)>,
    },
}

impl<'a> ToolFn<'a> {
    /// Models `item`, whose parameter docs and headers were already taken out as
    /// `param_docs` and `param_headers`.
    pub(crate) fn new(
        item: &'a ItemFn,
        param_docs: Vec<Option<Doc>>,
        param_headers: Vec<Option<Header>>,
    ) -> Self {
        let params = item
            .sig
            .inputs
            .iter()
            .zip(param_docs)
            .zip(param_headers)
            .filter_map(|((arg, doc), header)| match arg {
                FnArg::Typed(arg) => Some(Param::new(arg, doc, header)),
                FnArg::Receiver(_) => None,
            })
            .collect();
        let output = match &item.sig.output {
            ReturnType::Default => Output::Unit,
            ReturnType::Type(_, ty) if last_segment_is(ty, "Result") => Output::Result {
                ty,
                args: result_args(ty),
            },
            ReturnType::Type(_, ty) => Output::Value(ty),
        };
        ToolFn {
            item,
            doc: crate::doc::doc(&item.attrs),
            receiver: item.sig.receiver(),
            params,
            output,
        }
    }

    /// Whether the function is `async`.
    pub(crate) fn is_async(&self) -> bool {
        self.item.sig.asyncness.is_some()
    }
}

impl<'a> Param<'a> {
    fn new(arg: &'a PatType, doc: Option<Doc>, header: Option<Header>) -> Self {
        let ident = match &*arg.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => Some(&pat.ident),
            _ => None,
        };
        let ty = &*arg.ty;
        let kind = if is_context(ty) {
            ParamKind::Context
        } else if let Some(inner) = option_inner(ty) {
            ParamKind::Optional { inner }
        } else {
            ParamKind::Required
        };
        Param {
            arg,
            ident,
            ty,
            doc,
            kind,
            header,
        }
    }

    /// The property name in the schema: the identifier without any `r#`.
    pub(crate) fn property_name(&self) -> Option<String> {
        self.ident
            .map(|ident| ident.to_string().trim_start_matches("r#").to_owned())
    }
}

/// `ty` without the invisible groups around a type that a `macro_rules!` passed in as `$ty`.
pub(crate) fn ungroup(mut ty: &Type) -> &Type {
    while let Type::Group(group) = ty {
        ty = &group.elem;
    }
    ty
}

/// Whether `impl Trait` appears anywhere in `ty`, e.g. `Vec<impl Trait>`.
pub(crate) fn has_impl_trait(ty: &Type) -> bool {
    fn any_impl(tokens: proc_macro2::TokenStream) -> bool {
        tokens.into_iter().any(|token| match token {
            proc_macro2::TokenTree::Ident(ident) => ident == "impl",
            proc_macro2::TokenTree::Group(group) => any_impl(group.stream()),
            _ => false,
        })
    }
    any_impl(quote::ToTokens::to_token_stream(ty))
}

/// `&ToolContext` or `&path::to::ToolContext`, shared or `mut`.
fn is_context(ty: &Type) -> bool {
    match ungroup(ty) {
        Type::Reference(reference) => last_segment_is(&reference.elem, "ToolContext"),
        _ => false,
    }
}

fn last_segment_is(ty: &Type, name: &str) -> bool {
    match ungroup(ty) {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == name),
        _ => false,
    }
}

/// `T` when `ty` is `Option<T>` (by any path ending in `Option`).
fn option_inner(ty: &Type) -> Option<&Type> {
    match type_args(ty, "Option")?.as_slice() {
        [inner] => Some(*inner),
        _ => None,
    }
}

/// `T` and `E` when `ty` is `Result<T, E>` (by any path ending in `Result`).
fn result_args(ty: &Type) -> Option<(&Type, &Type)> {
    match type_args(ty, "Result")?.as_slice() {
        [ok, err] => Some((*ok, *err)),
        _ => None,
    }
}

/// The type arguments of `ty` when it is a path ending in `name<...>` with only types
/// between the brackets.
fn type_args<'a>(ty: &'a Type, name: &str) -> Option<Vec<&'a Type>> {
    let Type::Path(path) = ungroup(ty) else {
        return None;
    };
    if path.qself.is_some() {
        return None;
    }
    let segment = path.path.segments.last()?;
    if segment.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    args.args
        .iter()
        .map(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        })
        .collect()
}
