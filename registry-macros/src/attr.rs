//! Parses the arguments of `#[tool(...)]`.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::meta::ParseNestedMeta;
use syn::{LitStr, Path};

use crate::ctxt::Ctxt;
use crate::symbol::*;

/// The parsed arguments of one `#[tool(...)]`.
#[derive(Default)]
pub(crate) struct ToolAttr {
    /// `name = "get_status"`: the tool's name; default: the function's name.
    pub(crate) name: Option<LitStr>,
    /// `description = "..."`: what the model reads; default: the doc comment.
    pub(crate) description: Option<LitStr>,
    /// `title = "Build status"`: a human-readable title.
    pub(crate) title: Option<LitStr>,
    /// `scopes = "deploy:write, build:read"`: scopes a subject needs, all of them.
    pub(crate) scopes: Option<LitStr>,
    /// `tenants = "acme, globex"`: only subjects of these tenants see the tool.
    pub(crate) tenants: Option<LitStr>,
    /// `public`: the tool restricts nothing on purpose (no scopes, no tenants); a tool that
    /// restricts nothing must say so.
    pub(crate) public: Option<Span>,
    /// `timeout = "5s"`: a call that takes longer is answered `TimedOut`.
    pub(crate) timeout: Option<LitStr>,
    /// `needs_approval`: every call waits for a person's approval.
    pub(crate) needs_approval: Option<Span>,
    /// `rate_limit = "10/min"`: at most that many calls per subject and tool.
    pub(crate) rate_limit: Option<LitStr>,
    /// `read_only`: the tool does not modify its environment.
    pub(crate) read_only: Option<Span>,
    /// `destructive`: the tool may destroy or overwrite data.
    pub(crate) destructive: Option<Span>,
    /// `idempotent`: calling it twice with the same arguments does nothing more.
    pub(crate) idempotent: Option<Span>,
    /// `open_world`: the tool reaches outside the system (the web, other services).
    pub(crate) open_world: Option<Span>,
    /// `allow_description = "reason"`: the description lint is overridden, for this reason.
    pub(crate) allow_description: Option<LitStr>,
    /// `require_docs`: every parameter the model fills must have a doc comment; one that has
    /// none gets a compile-time warning, spanned on it.
    pub(crate) require_docs: Option<Span>,
    /// `namespace = "builds"`: the group of deferred tools it is shown in (OpenAI namespaces).
    pub(crate) namespace: Option<LitStr>,
    /// `always_loaded`: in every deferred session's first request, not found by search.
    pub(crate) always_loaded: Option<Span>,
    /// `task`: long-running; a caller may start it as a task and follow it.
    /// `task = "required"`: it runs only as a task.
    pub(crate) task: Option<TaskMode>,
    /// `non_blocking`: a synchronous function that returns at once, run on the caller's task
    /// instead of a thread of the pool.
    pub(crate) non_blocking: Option<Span>,
    /// `blocking`: a synchronous function that may block, always run on a thread of the pool.
    pub(crate) blocking: Option<Span>,
    /// `attributes(data_domain = "finance", environment = ["staging", "production"])`: the
    /// attribute values the tool is for, per key, each checked.
    pub(crate) attributes: Option<Vec<(String, Vec<String>)>>,
    /// `callable_from_code`: code the model wrote may call it though it needs approval.
    pub(crate) callable_from_code: Option<Span>,
    /// `crate = path`: where `registry-core` is, for crates that re-export it.
    pub(crate) krate: Option<Path>,
    /// Parsing stopped early (a syntax error), so keys after the error were not read.
    pub(crate) incomplete: bool,
}

/// Parses `args`, recording every mistake in `cx` and carrying on past it.
pub(crate) fn parse(cx: &Ctxt, args: TokenStream) -> ToolAttr {
    let mut attr = ToolAttr::default();
    let parser = syn::meta::parser(|meta| {
        parse_key(cx, &mut attr, &meta)?;
        if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
            return Err(meta
                .input
                .error("expected `,` here; separate the keys of `#[tool(...)]` with commas"));
        }
        Ok(())
    });
    if let Err(error) = syn::parse::Parser::parse2(parser, take_bare_values(cx, args)) {
        cx.syn_error(error);
        attr.incomplete = true;
    }
    attr
}

/// Reports and takes out every bare value, such as the literal of `#[tool("get_status")]`, so
/// that the keys around it are still read.
fn take_bare_values(cx: &Ctxt, args: TokenStream) -> TokenStream {
    let mut kept = Vec::new();
    let mut entry: Vec<TokenTree> = Vec::new();
    let mut tokens = args.into_iter().peekable();
    while let Some(token) = tokens.next() {
        let ends_entry = matches!(&token, TokenTree::Punct(p) if p.as_char() == ',');
        entry.push(token);
        if ends_entry || tokens.peek().is_none() {
            match entry.first() {
                Some(TokenTree::Literal(value)) => cx.error_spanned_by(
                    value,
                    format!(
                        "`{value}` is a value without a key; write `key = value`, \
                         e.g. `name = {value}` or `description = {value}`"
                    ),
                ),
                _ => kept.append(&mut entry),
            }
            entry.clear();
        }
    }
    kept.into_iter().collect()
}

fn parse_key(cx: &Ctxt, attr: &mut ToolAttr, meta: &ParseNestedMeta) -> syn::Result<()> {
    let path = &meta.path;
    let key = path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_else(|| quote::quote!(#path).to_string().replace(' ', ""));
    match key.as_str() {
        NAME => set(cx, meta, &mut attr.name, string(meta)?),
        DESCRIPTION => set(cx, meta, &mut attr.description, string(meta)?),
        TITLE => set(cx, meta, &mut attr.title, string(meta)?),
        SCOPES => set(cx, meta, &mut attr.scopes, string(meta)?),
        TENANTS => set(cx, meta, &mut attr.tenants, string(meta)?),
        PUBLIC => set(cx, meta, &mut attr.public, flag(cx, meta)?),
        TIMEOUT => set(cx, meta, &mut attr.timeout, string(meta)?),
        NEEDS_APPROVAL => set(cx, meta, &mut attr.needs_approval, flag(cx, meta)?),
        RATE_LIMIT => set(cx, meta, &mut attr.rate_limit, string(meta)?),
        READ_ONLY => set(cx, meta, &mut attr.read_only, flag(cx, meta)?),
        DESTRUCTIVE => set(cx, meta, &mut attr.destructive, flag(cx, meta)?),
        IDEMPOTENT => set(cx, meta, &mut attr.idempotent, flag(cx, meta)?),
        OPEN_WORLD => set(cx, meta, &mut attr.open_world, flag(cx, meta)?),
        ALLOW_DESCRIPTION => set(cx, meta, &mut attr.allow_description, string(meta)?),
        REQUIRE_DOCS => set(cx, meta, &mut attr.require_docs, flag(cx, meta)?),
        NAMESPACE => set(cx, meta, &mut attr.namespace, string(meta)?),
        ALWAYS_LOADED => set(cx, meta, &mut attr.always_loaded, flag(cx, meta)?),
        TASK => set(cx, meta, &mut attr.task, task_mode(cx, meta)?),
        NON_BLOCKING => set(cx, meta, &mut attr.non_blocking, flag(cx, meta)?),
        BLOCKING => set(cx, meta, &mut attr.blocking, flag(cx, meta)?),
        ATTRIBUTES => set(cx, meta, &mut attr.attributes, attributes(cx, meta)?),
        CALLABLE_FROM_CODE => set(cx, meta, &mut attr.callable_from_code, flag(cx, meta)?),
        CRATE => set(cx, meta, &mut attr.krate, krate(meta)?),
        _ => {
            cx.error_spanned_by(path, unknown_key_message(&key));
            skip_value(meta)?;
        }
    }
    Ok(())
}

/// Stores `value` unless the key was given before, which is an error.
fn set<T>(cx: &Ctxt, meta: &ParseNestedMeta, slot: &mut Option<T>, value: T) {
    if slot.is_some() {
        let path = &meta.path;
        let key = quote::quote!(#path).to_string();
        cx.error_spanned_by(path, format!("`{key}` is given twice; keep one"));
    } else {
        *slot = Some(value);
    }
}

fn string(meta: &ParseNestedMeta) -> syn::Result<LitStr> {
    let path = &meta.path;
    let key = quote::quote!(#path).to_string();
    let Ok(value) = meta.value() else {
        return Err(meta.error(format!(
            "`{key}` takes a string value; write `{key} = \"...\"`"
        )));
    };
    value.parse::<LitStr>().map_err(|error| {
        syn::Error::new(
            error.span(),
            format!("`{key}` takes a string literal; write `{key} = \"...\"`"),
        )
    })
}

fn krate(meta: &ParseNestedMeta) -> syn::Result<Path> {
    const USAGE: &str = "`crate` takes the path of `registry_core`, not in quotes; \
                         write `crate = path::to::registry_core`";
    let Ok(value) = meta.value() else {
        return Err(meta.error(USAGE));
    };
    if value.peek(LitStr) {
        return Err(value.error(USAGE));
    }
    value
        .parse::<Path>()
        .map_err(|error| syn::Error::new(error.span(), USAGE))
}

fn flag(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Span> {
    let path = &meta.path;
    if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
        let key = quote::quote!(#path).to_string();
        cx.error_spanned_by(
            path,
            format!("`{key}` is a flag and takes no value; write `{key}` alone, or leave it out"),
        );
        skip_value(meta)?;
    }
    Ok(syn::spanned::Spanned::span(path))
}

/// How `task` was given: alone, or `task = "required"`.
#[derive(Clone, Copy)]
pub(crate) struct TaskMode {
    /// `task = "required"`.
    pub(crate) required: bool,
}

/// `task` alone (it may run as a task), or `task = "required"` (only as a task); any other
/// value is an error on the value.
fn task_mode(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<TaskMode> {
    const HOW: &str = "write `task` alone (a caller may start it as a task) or `task = \"required\"` (it runs only as a task)";
    if meta.input.peek(syn::token::Paren) {
        cx.error_spanned_by(&meta.path, format!("`task` takes no list; {HOW}"));
        skip_value(meta)?;
        return Ok(TaskMode { required: false });
    }
    if !meta.input.peek(syn::Token![=]) {
        return Ok(TaskMode { required: false });
    }
    let value: syn::Expr = meta.value()?.parse()?;
    match &value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(mode),
            ..
        }) if mode.value() == "required" => Ok(TaskMode { required: true }),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(mode),
            ..
        }) => {
            cx.error_spanned_by(
                mode,
                format!("`task = {:?}` is not a mode of `task`; {HOW}", mode.value()),
            );
            Ok(TaskMode { required: false })
        }
        other => {
            cx.error_spanned_by(other, format!("`task` takes a string or nothing; {HOW}"));
            Ok(TaskMode { required: false })
        }
    }
}

/// Consumes whatever follows an unknown key, so parsing can go on to the next one.
/// `attributes(key = "value", key = ["value", ...])`: every key and value checked by the
/// rule the registry applies (`registry_lint::check_attribute_key`/`check_attribute_text`),
/// each mistake spanned on its token.
fn attributes(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Vec<(String, Vec<String>)>> {
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(
            "`attributes` takes a list; write `attributes(data_domain = \"finance\", environment = [\"staging\", \"production\"])`",
        ));
    }
    let mut declared: Vec<(String, Vec<String>)> = Vec::new();
    meta.parse_nested_meta(|inner| {
        let path = &inner.path;
        let key = match path.get_ident() {
            Some(ident) => ident.to_string(),
            None => {
                cx.error_spanned_by(path, "an attribute key is one word, such as `environment`");
                String::new()
            }
        };
        if !key.is_empty() {
            if let Err(reason) = registry_lint::check_attribute_key(&key) {
                cx.error_spanned_by(path, reason);
            }
            if declared.iter().any(|(other, _)| *other == key) {
                cx.error_spanned_by(
                    path,
                    format!("the attribute `{key}` is declared twice; list all its values once"),
                );
            }
        }
        let Ok(value) = inner.value() else {
            return Err(inner.error(format!(
                "write `{key} = \"value\"` or `{key} = [\"value\", ...]`"
            )));
        };
        let mut literals = Vec::new();
        if value.peek(syn::token::Bracket) {
            let content;
            syn::bracketed!(content in value);
            let list =
                syn::punctuated::Punctuated::<syn::Lit, syn::Token![,]>::parse_terminated(&content)?;
            literals.extend(list);
        } else {
            literals.push(value.parse::<syn::Lit>()?);
        }
        let mut values: Vec<String> = Vec::new();
        for literal in &literals {
            let syn::Lit::Str(text) = literal else {
                cx.error_spanned_by(literal, "an attribute value is a string literal, such as `\"finance\"`");
                continue;
            };
            let text_value = text.value();
            if let Err(reason) = registry_lint::check_attribute_text(&text_value) {
                cx.error_spanned_by(text, reason);
            } else if values.contains(&text_value) {
                cx.error_spanned_by(text, format!("{text_value:?} is listed twice; list each value once"));
            }
            values.push(text_value);
        }
        if literals.is_empty() {
            cx.error_spanned_by(path, format!("the attribute `{key}` lists no value, so no subject could see the tool; list the values it is for"));
        }
        if values.len() > registry_lint::MAX_ATTRIBUTE_VALUES {
            cx.error_spanned_by(path, format!("the attribute `{key}` lists {} values (at most {})", values.len(), registry_lint::MAX_ATTRIBUTE_VALUES));
        }
        declared.push((key, values));
        Ok(())
    })?;
    if declared.len() > registry_lint::MAX_TOOL_ATTRIBUTES {
        cx.error_spanned_by(
            &meta.path,
            format!(
                "{} attribute keys (at most {})",
                declared.len(),
                registry_lint::MAX_TOOL_ATTRIBUTES
            ),
        );
    }
    Ok(declared)
}

fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}

fn unknown_key_message(key: &str) -> String {
    let nearest = KEYS
        .iter()
        .map(|candidate| (strsim::jaro_winkler(key, candidate), candidate))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| format!("; did you mean `{candidate}`?"))
        .unwrap_or_default();
    format!(
        "unknown key `{key}`{nearest} (valid keys: {})",
        KEYS.iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::unknown_key_message;

    /// The list of keys and the parser's match arms are the same constants; this checks that
    /// no listed key falls through to "unknown key".
    #[test]
    fn every_listed_key_is_parsed() {
        for key in crate::symbol::KEYS {
            let ident = proc_macro2::Ident::new(key, proc_macro2::Span::call_site());
            let cx = crate::ctxt::Ctxt::default();
            super::parse(&cx, quote::quote!(#ident = "x"));
            let errors = cx.check().err().map(|e| e.to_string()).unwrap_or_default();
            assert!(!errors.contains("unknown key"), "{key}: {errors}");
        }
    }

    #[test]
    fn misspelled_keys_suggest_the_nearest() {
        for (typed, meant) in [
            ("ratelimit", "rate_limit"),
            ("rate_limt", "rate_limit"),
            ("needs_aproval", "needs_approval"),
            ("needsapproval", "needs_approval"),
            ("readonly", "read_only"),
            ("allow_descriptions", "allow_description"),
            ("allow_desc", "allow_description"),
            ("allowdescription", "allow_description"),
            ("always_load", "always_loaded"),
            ("pubic", "public"),
            ("publc", "public"),
            ("alwaysloaded", "always_loaded"),
            ("name_space", "namespace"),
            ("tasks", "task"),
            ("nonblocking", "non_blocking"),
            ("non_blockng", "non_blocking"),
            ("require_doc", "require_docs"),
            ("requires_docs", "require_docs"),
        ] {
            let message = unknown_key_message(typed);
            assert!(
                message.contains(&format!("; did you mean `{meant}`?")),
                "{message}"
            );
        }
    }
}
