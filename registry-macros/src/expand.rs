//! Writes the code for a checked `#[tool]`: the user's function, unchanged but for its
//! parameter docs, then, inside `const _: () = { ... };`, an executor and the static record
//! submitted to the registration list.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::Item;
use syn::spanned::Spanned;

use crate::attr;
use crate::check::{Spec, check};
use crate::ctxt::Ctxt;
use crate::model::{Output, Param, ParamKind, ToolFn};

/// The whole macro: parse, check, expand. On any error the user's item is emitted as it
/// was (less its parameter docs) beside the errors, so only the real mistakes show.
pub(crate) fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut item = match syn::parse2::<Item>(input.clone()) {
        Ok(Item::Fn(item)) => item,
        Ok(other) => return not_a_function(&other, input),
        Err(error) => {
            let error = error.to_compile_error();
            return quote!(#input #error);
        }
    };
    let param_docs = crate::doc::take_param_docs(&mut item);
    let cx = Ctxt::default();
    let param_headers = crate::header::take_param_headers(&cx, &mut item);
    let attr = attr::parse(&cx, args);
    let tool = ToolFn::new(&item, param_docs, param_headers);
    let spec = check(&cx, &attr, &tool);
    crate::header::check(&cx, &tool);
    match cx.check() {
        Ok(()) => {
            let registration = registration(&spec, &tool);
            let warnings = undocumented_warnings(&spec, &tool);
            quote!(#item #registration #warnings)
        }
        Err(errors) => quote!(#item #errors),
    }
}

fn not_a_function(item: &Item, input: TokenStream) -> TokenStream {
    let what = match item {
        Item::Struct(_) => "a struct",
        Item::Enum(_) => "an enum",
        Item::Impl(_) => "an impl block",
        Item::Mod(_) => "a module",
        Item::Trait(_) => "a trait",
        Item::Const(_) | Item::Static(_) => "a constant",
        _ => "this item",
    };
    let error = syn::Error::new(
        keyword_span(item),
        format!(
            "`#[tool]` goes on a free function, not on {what}; \
             write `#[tool] fn name(...) -> ... {{ ... }}`"
        ),
    )
    .to_compile_error();
    quote!(#input #error)
}

/// The keyword that says what `item` is (`struct`, `impl`, ...), or its first token after
/// its attributes.
fn keyword_span(item: &Item) -> Span {
    match item {
        Item::Struct(item) => item.struct_token.span,
        Item::Enum(item) => item.enum_token.span,
        Item::Union(item) => item.union_token.span,
        Item::Impl(item) => item.impl_token.span,
        Item::Mod(item) => item.mod_token.span,
        Item::Trait(item) => item.trait_token.span,
        Item::Const(item) => item.const_token.span,
        Item::Static(item) => item.static_token.span,
        Item::Type(item) => item.type_token.span,
        Item::Use(item) => item.use_token.span,
        _ => {
            let mut item = item.clone();
            if let Some(attrs) = item_attrs(&mut item) {
                attrs.clear();
            }
            quote!(#item)
                .into_iter()
                .next()
                .map_or_else(Span::call_site, |token| token.span())
        }
    }
}

fn item_attrs(item: &mut Item) -> Option<&mut Vec<syn::Attribute>> {
    match item {
        Item::ExternCrate(item) => Some(&mut item.attrs),
        Item::ForeignMod(item) => Some(&mut item.attrs),
        Item::Macro(item) => Some(&mut item.attrs),
        Item::TraitAlias(item) => Some(&mut item.attrs),
        _ => None,
    }
}

/// The hidden items that register `tool`.
fn registration(spec: &Spec, tool: &ToolFn) -> TokenStream {
    let krate = &spec.krate;
    let rc = quote!(#krate::__private);
    let ident = &tool.item.sig.ident;
    let Spec {
        name,
        description,
        scopes,
        tenants,
        public,
        needs_approval,
        read_only,
        destructive,
        idempotent,
        open_world,
        always_loaded,
        task,
        task_required,
        non_blocking,
        blocking,
        callable_from_code,
        ..
    } = spec;
    let attribute_keys = spec.attributes.iter().map(|(key, _)| key);
    let attribute_values = spec.attributes.iter().map(|(_, values)| values);
    let namespace = option_str(spec.namespace.as_deref());
    let title = option_str(spec.title.as_deref());
    let allow_description = option_str(spec.allow_description.as_deref());
    let timeout = match spec.timeout_ms {
        Some(millis) => {
            quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#millis)))
        }
        None => quote!(::core::option::Option::None),
    };
    let rate_limit = match spec.rate_limit {
        Some((calls, seconds)) => {
            quote!(::core::option::Option::Some(#rc::RateLimit::checked(#calls, #seconds)))
        }
        None => quote!(::core::option::Option::None),
    };
    let params = tool
        .params
        .iter()
        .filter_map(|param| param_record(&rc, param));
    let executor = executor(&rc, tool);
    let output = output_schema(&rc, tool);
    let execute = if tool.is_async() {
        quote!(#rc::Execute::Async(__execute))
    } else {
        quote!(#rc::Execute::Sync(__execute))
    };
    let context = tool
        .params
        .iter()
        .any(|param| matches!(param.kind, ParamKind::Context));
    let location = quote_spanned!(ident.span()=> ::core::line!(), ::core::column!());
    let once = same_crate_guard(name, spec.name_span);
    quote! {
        #[doc(hidden)]
        const _: () = {
            #executor
            #output
            #once
            #rc::inventory::submit! {
                #rc::Declaration {
                    name: #name,
                    description: #description,
                    title: #title,
                    allow_description: #allow_description,
                    scopes: &[#(#scopes),*],
                    tenants: &[#(#tenants),*],
                    public: #public,
                    timeout: #timeout,
                    needs_approval: #needs_approval,
                    rate_limit: #rate_limit,
                    hints: #rc::Hints::new()
                        .with_read_only(#read_only)
                        .with_destructive(#destructive)
                        .with_idempotent(#idempotent)
                        .with_open_world(#open_world),
                    namespace: #namespace,
                    always_loaded: #always_loaded,
                    task: #task,
                    task_required: #task_required,
                    non_blocking: #non_blocking,
                    blocking: #blocking,
                    attributes: &[#((#attribute_keys, &[#(#attribute_values),*])),*],
                    callable_from_code: #callable_from_code,
                    params: &[#(#params),*],
                    context: #context,
                    output: __output,
                    execute: #execute,
                    location: #rc::Source::declared(
                        ::core::module_path!(),
                        ::core::file!(),
                        #location,
                    ),
                }
            }
        };
    }
}

/// With `require_docs`, a warning on each parameter the model fills that has no doc comment.
/// A stable proc macro cannot emit a warning, so each is the use of a deprecated constant,
/// spanned on the parameter: the compiler's `deprecated` lint shows the note there (and a
/// crate that denies warnings refuses it).
fn undocumented_warnings(spec: &Spec, tool: &ToolFn) -> TokenStream {
    if !spec.require_docs {
        return TokenStream::new();
    }
    tool.params
        .iter()
        .filter(|param| !matches!(param.kind, ParamKind::Context))
        .filter(|param| {
            param
                .doc
                .as_ref()
                .is_none_or(|doc| doc.text.trim().is_empty())
        })
        .map(|param| {
            let name = param.property_name().unwrap_or_default();
            let note = format!(
                "the parameter `{name}` of the tool `{}` has no doc comment, and a model reads \
                 a parameter's description to know what to pass: describe it with `/// ...` \
                 above it (`#[tool(require_docs)]` asks for this)",
                spec.name
            );
            quote_spanned! {param.arg.span()=>
                #[doc(hidden)]
                const _: () = {
                    #[deprecated(note = #note)]
                    #[allow(non_upper_case_globals)]
                    const undocumented_parameter: () = ();
                    undocumented_parameter
                };
            }
        })
        .collect()
}

/// One entry of the parameter list; none for the context.
fn param_record(rc: &TokenStream, param: &Param) -> Option<TokenStream> {
    let name = param.property_name()?;
    let description = option_str(param.doc.as_ref().map(|doc| doc.text.as_str()));
    let ty = param.ty;
    let (required, schema) = match param.kind {
        ParamKind::Context => return None,
        ParamKind::Required => (true, checked(quote!(#rc::schema), ty)),
        ParamKind::Optional { .. } => (false, checked(quote!(#rc::schema), ty)),
    };
    let header = option_str(param.header.as_ref().map(|header| header.name.as_str()));
    Some(quote! {
        #rc::Param {
            name: #name,
            description: #description,
            required: #required,
            schema: #schema,
            header: #header,
        }
    })
}

/// `fn __output`: the schema of the result type, if it has one (a type without `JsonSchema`
/// is fine: it just has no output schema; content has none; `ToolOutput<T>` has `T`'s).
fn output_schema(rc: &TokenStream, tool: &ToolFn) -> TokenStream {
    let ty = match &tool.output {
        Output::Unit => quote!(()),
        Output::Value(ty) => quote!(#ty),
        Output::Result {
            args: Some((ok, _)),
            ..
        } => quote!(#ok),
        Output::Result { ty, args: None } => quote!(<#ty as #rc::OkType>::Ok),
    };
    quote! {
        fn __output(
            __generator: &mut #rc::SchemaGenerator,
        ) -> ::core::option::Option<#rc::Schema> {
            #[allow(unused_imports)]
            use #rc::{
                OutputWithSchema as _, OutputWithoutSchema as _, StructuredOutputSchema as _,
            };
            (&&&#rc::OutputProbe::<#ty>::new()).output_schema(__generator)
        }
    }
}

/// `fn __execute`: takes the JSON arguments apart, calls the function, converts its result
/// (content kept, anything else serialized). It takes a `RunToken`, which only registry-core
/// can make, so nothing but a run can call it.
fn executor(rc: &TokenStream, tool: &ToolFn) -> TokenStream {
    let ident = &tool.item.sig.ident;
    let mut bindings = Vec::new();
    let mut call_args = Vec::new();
    for (index, param) in tool.params.iter().enumerate() {
        let binding = format_ident!("__arg{}", index);
        let name = param.property_name().unwrap_or_default();
        match param.kind {
            ParamKind::Context => {
                call_args.push(quote!(&__ctx));
                continue;
            }
            ParamKind::Required => {
                let required = checked(quote!(#rc::Arguments::required), param.ty);
                bindings.push(quote!(let #binding = #required(&mut __args, #name)?;));
            }
            ParamKind::Optional { inner } => {
                let optional = checked(quote!(#rc::Arguments::optional), inner);
                bindings.push(quote!(let #binding = #optional(&mut __args, #name)?;));
            }
        }
        call_args.push(quote!(#binding));
    }
    let call = quote!(#ident(#(#call_args),*));
    let call = if tool.is_async() {
        quote!(#call.await)
    } else {
        call
    };
    let output = match &tool.output {
        Output::Unit => quote!({ #call; #rc::output(()) }),
        Output::Value(ty) => {
            let value = convert(rc, &quote!(#ty), ty.span());
            quote!({
                let __value = #call;
                #value
            })
        }
        Output::Result { ty, args } => {
            let (ok_value, failed) = match args {
                Some((ok, err)) => (
                    convert(rc, &quote!(#ok), ok.span()),
                    checked(quote!(#rc::failed), err),
                ),
                None => (
                    convert(rc, &quote!(<#ty as #rc::OkType>::Ok), ty.span()),
                    respan(quote!(#rc::failed), ty.span()),
                ),
            };
            quote! {
                match #call {
                    ::core::result::Result::Ok(__value) => #ok_value,
                    ::core::result::Result::Err(__error) => #failed(__error),
                }
            }
        }
    };
    let body = quote! {
        #(#bindings)*
        __args.finish()?;
        #output
    };
    if tool.is_async() {
        let inner = quote! {
            let __ctx = __ctx;
            #body
        };
        // An error about the future (not `Send`) points at the user's `async`.
        let span = tool.item.sig.asyncness.span();
        let boxed = respan(quote!(#rc::boxed), span);
        let boxed = quote_spanned! {span=>
            #boxed(async move { #inner })
        };
        quote! {
            fn __execute(
                __ctx: #rc::ToolContext,
                mut __args: #rc::Arguments,
                _: #rc::RunToken<'_>,
            ) -> #rc::BoxFuture<'static, #rc::Outcome> {
                #boxed
            }
        }
    } else {
        quote! {
            fn __execute(
                __ctx: &#rc::ToolContext,
                mut __args: #rc::Arguments,
                _: #rc::RunToken<'_>,
            ) -> #rc::Outcome {
                let _ = __ctx;
                #body
            }
        }
    }
}

/// `__value` (of type `ty`) as an `Outcome`: content as it is, anything else serialized;
/// chosen by autoref specialization on `ty`, and spanned (the call, as if the user wrote it)
/// so that an unmet bound points at `ty`.
fn convert(rc: &TokenStream, ty: &TokenStream, span: Span) -> TokenStream {
    let outcome = quote_spanned!(span=> (&&#rc::OutputProbe::<#ty>::new()).outcome(__value));
    quote! {
        {
            #[allow(unused_imports)]
            use #rc::{ContentOutput as _, JsonOutput as _};
            #outcome
        }
    }
}

/// A macro named after the tool, exported at the crate root: a second tool of the same name
/// in the same crate then fails to compile (E0428). Across crates the registry catches it.
fn same_crate_guard(name: &str, span: Span) -> TokenStream {
    let guard = if name.contains('-') {
        // No `-` in an identifier: the name with `_` for each dash and where the dashes were,
        // under a prefix of its own, so that it reads well and meets no other name.
        let dashes: Vec<String> = name
            .match_indices('-')
            .map(|(at, _)| at.to_string())
            .collect();
        format_ident!(
            "__tool_name_must_be_unique_with_dashes__{}__at_{}",
            name.replace('-', "_"),
            dashes.join("_"),
            span = span
        )
    } else {
        format_ident!("__tool_name_must_be_unique__{}", name, span = span)
    };
    // Spanned as a whole on the name, which is where rustc points to show both definitions.
    // A tool in a function body puts the macro there, which is intended: it is exported only
    // to be unique.
    quote_spanned! {span=>
        #[doc(hidden)]
        #[macro_export]
        #[allow(non_local_definitions)]
        macro_rules! #guard { () => {}; }
    }
}

/// `function::<ty>`, spanned so that an unmet bound on `ty` points at the user's `ty`.
fn checked(function: TokenStream, ty: &syn::Type) -> TokenStream {
    let function = respan(function, ty.span());
    quote!(#function::<#ty>)
}

/// `tokens`, moved to `span`'s place in the user's code, each keeping its own hygiene.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(group) => {
                let mut moved = Group::new(group.delimiter(), respan(group.stream(), span));
                moved.set_span(group.span().located_at(span));
                TokenTree::Group(moved)
            }
            mut token => {
                token.set_span(token.span().located_at(span));
                token
            }
        })
        .collect()
}

fn option_str(text: Option<&str>) -> TokenStream {
    match text {
        Some(text) => quote!(::core::option::Option::Some(#text)),
        None => quote!(::core::option::Option::None),
    }
}
