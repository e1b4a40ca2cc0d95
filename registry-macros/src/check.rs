//! Validates the attribute and the function before anything is generated.

use std::ops::Range;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::{LitStr, Pat, Type};

use crate::attr::ToolAttr;
use crate::ctxt::Ctxt;
use crate::model::{ParamKind, ToolFn, has_impl_trait, ungroup};
use crate::name::{name_problem, scope_problem};

/// Records in `cx` everything that keeps `tool` from being a tool.
pub(crate) fn check(cx: &Ctxt, attr: &ToolAttr, tool: &ToolFn) -> Spec {
    let (name, name_span) = check_name(cx, attr, tool);
    check_texts(cx, attr, tool);
    check_description_lint(cx, attr, tool);
    let scopes = check_scopes(cx, attr);
    let tenants = check_tenants(cx, attr);
    check_public(cx, attr, tool);
    let timeout_ms = check_timeout(cx, attr);
    let rate_limit = check_rate_limit(cx, attr);
    let namespace = check_namespace(cx, attr);
    check_hints(cx, attr);
    check_non_blocking(cx, attr, tool);
    check_signature(cx, tool);
    check_params(cx, tool);
    Spec {
        krate: attr
            .krate
            .clone()
            .unwrap_or_else(|| syn::parse_quote!(::registry_core)),
        name,
        name_span,
        description: attr
            .description
            .as_ref()
            .map(LitStr::value)
            .or_else(|| tool.doc.as_ref().map(|doc| doc.text.clone()))
            .unwrap_or_default(),
        title: attr.title.as_ref().map(LitStr::value),
        allow_description: attr.allow_description.as_ref().map(LitStr::value),
        scopes,
        tenants,
        public: attr.public.is_some(),
        timeout_ms,
        needs_approval: attr.needs_approval.is_some(),
        rate_limit,
        read_only: attr.read_only.is_some(),
        destructive: attr.destructive.is_some(),
        idempotent: attr.idempotent.is_some(),
        open_world: attr.open_world.is_some(),
        namespace,
        always_loaded: attr.always_loaded.is_some(),
        task: attr.task.is_some(),
        task_required: attr.task.is_some_and(|mode| mode.required),
        non_blocking: attr.non_blocking.is_some(),
        blocking: attr.blocking.is_some(),
        attributes: attr.attributes.clone().unwrap_or_default(),
        callable_from_code: attr.callable_from_code.is_some(),
        require_docs: attr.require_docs.is_some(),
    }
}

/// Every value the generated code needs, resolved once by [`check`]: `expand` only writes it.
/// Meaningful only when `check` recorded no error.
pub(crate) struct Spec {
    /// Where `registry_core` is (`crate = path`, default `::registry_core`).
    pub(crate) krate: syn::Path,
    /// The tool's final name: `name = "..."`, or the function's without `r#`.
    pub(crate) name: String,
    /// Where the name was written: the literal, or the function's name.
    pub(crate) name_span: Span,
    /// What the model reads: `description = "..."`, or the doc comment.
    pub(crate) description: String,
    pub(crate) title: Option<String>,
    pub(crate) allow_description: Option<String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) tenants: Vec<String>,
    /// `public`: checked to be given exactly when there are no scopes and no tenants.
    pub(crate) public: bool,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) needs_approval: bool,
    /// Calls and seconds of the period.
    pub(crate) rate_limit: Option<(u32, u64)>,
    pub(crate) read_only: bool,
    pub(crate) destructive: bool,
    pub(crate) idempotent: bool,
    pub(crate) open_world: bool,
    /// `namespace = "..."`; `None`: the registry derives it from the first scope.
    pub(crate) namespace: Option<String>,
    pub(crate) always_loaded: bool,
    /// `task`: the tool may be started as a task.
    pub(crate) task: bool,
    /// `task = "required"`: only as a task.
    pub(crate) task_required: bool,
    /// `non_blocking`: checked to be given only on a synchronous function.
    pub(crate) non_blocking: bool,
    /// `blocking`: checked to be given only on a synchronous function, without `non_blocking`.
    pub(crate) blocking: bool,
    /// `attributes(...)`: each key with its values, checked while parsing.
    pub(crate) attributes: Vec<(String, Vec<String>)>,
    /// `callable_from_code`.
    pub(crate) callable_from_code: bool,
    /// `require_docs`: a parameter without a doc comment gets a warning.
    pub(crate) require_docs: bool,
}

/// The tool's final name and where it was written.
fn check_name(cx: &Ctxt, attr: &ToolAttr, tool: &ToolFn) -> (String, Span) {
    match &attr.name {
        Some(literal) => {
            let name = literal.value();
            if let Some(problem) = name_problem(&name) {
                cx.error_spanned_by(literal, problem);
            }
            (name, literal.span())
        }
        None => {
            let ident = &tool.item.sig.ident;
            let name = ident.to_string().trim_start_matches("r#").to_owned();
            if let Some(problem) = name_problem(&name) {
                cx.error_spanned_by(
                    ident,
                    format!(
                        "{problem}; rename the function, or name the tool with `name = \"...\"`"
                    ),
                );
            }
            (name, ident.span())
        }
    }
}

fn check_texts(cx: &Ctxt, attr: &ToolAttr, tool: &ToolFn) {
    let texts = [
        ("description", &attr.description, "write what the tool does"),
        ("title", &attr.title, "write a short title for people"),
    ];
    for (key, text, fix) in texts {
        if let Some(text) = text.as_ref().filter(|text| text.value().trim().is_empty()) {
            cx.error_spanned_by(
                text,
                format!("`{key}` is empty; {fix}, or leave the key out"),
            );
        }
    }
    if attr.description.is_none() && tool.doc.is_none() {
        cx.error_spanned_by(
            &tool.item.sig.ident,
            "this tool has no description, and a model cannot use an undescribed tool; \
             add a `///` doc comment saying what it does, or `description = \"...\"`",
        );
    }
}

/// Runs the description lint (`registry-lint`, the same rules `build()` applies to tools built
/// at run time) on every text the model reads: the description (the doc comment, or
/// `description = "..."`), the title, and each parameter's doc. Each finding is spanned on the
/// comment line or literal that holds it. `allow_description = "reason"` lifts every rule but
/// the secret rules: a secret in a description is never meant to be there. The reason must
/// say something.
fn check_description_lint(cx: &Ctxt, attr: &ToolAttr, tool: &ToolFn) {
    let allowed = match &attr.allow_description {
        Some(reason) if reason.value().trim().is_empty() => {
            cx.error_spanned_by(
                reason,
                "`allow_description` needs a reason, which is kept with the tool for reviewers \
                 (`ToolSettings::allow_description`): write why this text is safe to show to every \
                 model, e.g. `allow_description = \"the address is the public documentation \
                 range\"`, or remove the key",
            );
            false
        }
        Some(_) => true,
        None => false,
    };
    let lint = |site: &str, text: &str, tokens: &dyn Fn(Range<usize>) -> TokenStream| {
        lint(cx, site, text, allowed, tokens);
    };
    match (&attr.description, &tool.doc) {
        (Some(description), _) => lint("description", &description.value(), &|_| {
            description.to_token_stream()
        }),
        (None, Some(doc)) => lint("description", &doc.text, &|range| doc.attrs_holding(range)),
        (None, None) => {}
    }
    if let Some(title) = &attr.title {
        lint("title", &title.value(), &|_| title.to_token_stream());
    }
    for param in &tool.params {
        if let (ParamKind::Required | ParamKind::Optional { .. }, Some(doc), Some(name)) =
            (&param.kind, &param.doc, param.property_name())
        {
            lint(&format!("description of `{name}`"), &doc.text, &|range| {
                doc.attrs_holding(range)
            });
        }
    }
}

/// Records an error for each finding of the lint in `text`, the `site` of the tool it is,
/// spanned on `tokens(range)`; with `allowed` (`allow_description` given a reason), for each
/// secret only.
fn lint(
    cx: &Ctxt,
    site: &str,
    text: &str,
    allowed: bool,
    tokens: &dyn Fn(Range<usize>) -> TokenStream,
) {
    for finding in registry_lint::check(text) {
        let secret = finding.rule.family() == registry_lint::Family::Secret;
        if allowed && !secret {
            continue;
        }
        let fix = if secret {
            "`allow_description` does not lift the secret rules"
        } else {
            "if the text is meant to be there, say why with `allow_description = \"...\"`"
        };
        cx.error_spanned_by(
            tokens(finding.range.clone()),
            format!("the {site} contains {finding}; {fix}"),
        );
    }
}

fn check_scopes(cx: &Ctxt, attr: &ToolAttr) -> Vec<String> {
    let Some(scopes) = &attr.scopes else {
        return Vec::new();
    };
    let value = scopes.value();
    let list = split_list(&value);
    if list.is_empty() {
        cx.error_spanned_by(
            scopes,
            "`scopes` is empty; name at least one scope, e.g. `scopes = \"build:read\"`, \
             or write `public` instead of `scopes` for a tool that anyone may call",
        );
    }
    for (index, scope) in list.iter().enumerate() {
        if let Some(problem) = scope_problem(scope) {
            cx.error_spanned_by(scopes, problem);
        } else if list[..index].contains(scope) {
            cx.error_spanned_by(
                scopes,
                format!("the scope `{scope}` is listed twice; keep one"),
            );
        }
    }
    list.into_iter().map(str::to_owned).collect()
}

fn check_tenants(cx: &Ctxt, attr: &ToolAttr) -> Vec<String> {
    let Some(tenants) = &attr.tenants else {
        return Vec::new();
    };
    let value = tenants.value();
    let list = split_list(&value);
    if list.is_empty() {
        cx.error_spanned_by(
            tenants,
            "`tenants` is empty; name at least one tenant, e.g. `tenants = \"acme\"`, \
             or leave the key out for a tool every tenant may use",
        );
    }
    for (index, tenant) in list.iter().enumerate() {
        if tenant.is_empty() {
            cx.error_spanned_by(
                tenants,
                "`tenants` has an empty entry; separate tenant names with single commas",
            );
        } else if list[..index].contains(tenant) {
            cx.error_spanned_by(
                tenants,
                format!("the tenant `{tenant}` is listed twice; keep one"),
            );
        }
    }
    list.into_iter().map(str::to_owned).collect()
}

/// Least privilege by default: a tool that restricts nothing (no `scopes`, no `tenants`) is
/// seen and called by every subject of every tenant, so it must say `public`; and `public`
/// beside `scopes` or `tenants` would be a lie.
/// An attribute that did not parse to its end is not judged: its unread keys may restrict.
fn check_public(cx: &Ctxt, attr: &ToolAttr, tool: &ToolFn) {
    if attr.incomplete {
        return;
    }
    match (attr.public, &attr.scopes, &attr.tenants) {
        (None, None, None) => {
            let name = tool.item.sig.ident.to_string();
            let name = name.trim_start_matches("r#");
            cx.syn_error(syn::Error::new(
                Span::call_site(),
                format!(
                    "the tool `{name}` restricts nothing, so every subject of every tenant would \
                     see and call it; name the scopes it needs, e.g. `#[tool(scopes = \"build:read\")]`, \
                     or the tenants that may use it, e.g. `#[tool(tenants = \"acme\")]`, or, if \
                     anyone may call it, say so: `#[tool(public)]`"
                ),
            ));
        }
        (Some(public), scopes, tenants) if scopes.is_some() || tenants.is_some() => {
            let key = if scopes.is_some() {
                "scopes"
            } else {
                "tenants"
            };
            cx.syn_error(syn::Error::new(
                public,
                format!(
                    "`public` says every subject of every tenant may use this tool, but `{key}` \
                     restricts it; remove `public`, or remove `{key}` if anyone may call it"
                ),
            ));
        }
        _ => {}
    }
}

fn check_timeout(cx: &Ctxt, attr: &ToolAttr) -> Option<u64> {
    let timeout = attr.timeout.as_ref()?;
    timeout_millis(&timeout.value())
        .map_err(|problem| cx.error_spanned_by(timeout, problem))
        .ok()
}

/// The milliseconds of a `timeout = "..."` value: a positive whole number followed by `ms`,
/// `s` or `m`.
fn timeout_millis(value: &str) -> Result<u64, String> {
    let value = value.trim();
    let split = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let factor = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        _ => 0,
    };
    match number.parse::<u64>() {
        Ok(0) if factor > 0 => Err(format!(
            "the timeout `{value}` is zero, which no call could meet; give a positive duration, e.g. `timeout = \"5s\"`, or leave the key out"
        )),
        Ok(number) if factor > 0 => number
            .checked_mul(factor)
            .ok_or_else(|| format!("the timeout `{value}` is too long")),
        _ => Err(format!(
            "the timeout `{value}` is not a duration; write a positive whole number with `ms`, `s` or `m`, e.g. `timeout = \"5s\"`"
        )),
    }
}

/// `namespace = "..."`: a name by the rule of tool names, since OpenAI shows it to the model.
fn check_namespace(cx: &Ctxt, attr: &ToolAttr) -> Option<String> {
    let literal = attr.namespace.as_ref()?;
    let namespace = literal.value();
    if let Some(problem) = name_problem(&namespace) {
        let problem = problem.replacen("the tool name", "the namespace", 1);
        let problem = problem.replace(
            "; write one, or leave `name` out to use the function's name",
            "; write one, e.g. `namespace = \"builds\"`, or leave the key out to use the first scope's first segment",
        );
        cx.error_spanned_by(literal, problem);
    }
    Some(namespace)
}

fn check_rate_limit(cx: &Ctxt, attr: &ToolAttr) -> Option<(u32, u64)> {
    let rate_limit = attr.rate_limit.as_ref()?;
    rate_limit_parts(&rate_limit.value())
        .map_err(|problem| cx.error_spanned_by(rate_limit, problem))
        .ok()
}

/// The calls and the seconds of a `rate_limit = "10/min"` value: `<calls>/<unit>`, the unit
/// one of `s`, `min`, `h`. The error is the one `registry_core` gives for the same text at run
/// time (`gate::rate_limit::parse` and `RateLimitError`), word for word: keep them in step.
fn rate_limit_parts(value: &str) -> Result<(u32, u64), String> {
    rate_limit_reason(value).map_err(|reason| format!("invalid rate limit {value:?}: {reason}"))
}

fn rate_limit_reason(text: &str) -> Result<(u32, u64), &'static str> {
    let Some((calls, unit)) = text.split_once('/') else {
        return Err("write it as calls per unit, as in \"10/min\"");
    };
    let calls: u32 = calls
        .trim()
        .parse()
        .map_err(|_| "the number of calls must be a whole number, as in \"10/min\"")?;
    if calls == 0 {
        return Err(
            "the number of calls must be at least 1; to forbid a tool, revoke it or deny it in a call policy",
        );
    }
    let seconds = match unit.trim() {
        "s" => 1,
        "min" => 60,
        "h" => 3600,
        _ => return Err("the unit must be `s`, `min` or `h`, as in \"10/min\""),
    };
    Ok((calls, seconds))
}

/// The entries of a `scopes = "a:b, c"` (or `tenants = "..."`) value, without the white
/// space around them.
fn split_list(value: &str) -> Vec<&str> {
    if value.trim().is_empty() {
        return Vec::new();
    }
    value.split(',').map(str::trim).collect()
}

fn check_hints(cx: &Ctxt, attr: &ToolAttr) {
    if let (Some(_), Some(destructive)) = (attr.read_only, attr.destructive) {
        cx.syn_error(syn::Error::new(
            destructive,
            "a tool cannot be both `read_only` and `destructive`; keep the one that is true",
        ));
    }
}

/// `non_blocking` moves a synchronous function off the pool; an `async fn` is never on it.
fn check_non_blocking(cx: &Ctxt, attr: &ToolAttr, tool: &ToolFn) {
    if let (Some(span), true) = (attr.non_blocking, tool.is_async()) {
        cx.syn_error(syn::Error::new(
            span,
            "`non_blocking` is for a synchronous function, which otherwise runs on a thread of \
             the pool; an `async fn` already runs on the caller's task: remove `non_blocking`",
        ));
    }
    if let (Some(span), true) = (attr.blocking, tool.is_async()) {
        cx.syn_error(syn::Error::new(
            span,
            "`blocking` is for a synchronous function, which it keeps on a thread of the pool; \
             an `async fn` runs on the caller's task and must not block: remove `blocking`, \
             and wrap what blocks in `tokio::task::spawn_blocking`",
        ));
    }
    if let (Some(_), Some(span)) = (attr.non_blocking, attr.blocking) {
        cx.syn_error(syn::Error::new(
            span,
            "a tool cannot be both `non_blocking` and `blocking`; keep `blocking` if it may \
             ever wait (I/O, a lock, a sleep), else `non_blocking`",
        ));
    }
}

fn check_signature(cx: &Ctxt, tool: &ToolFn) {
    let sig = &tool.item.sig;
    if let Some(receiver) = tool.receiver {
        cx.error_spanned_by(
            receiver,
            "a tool cannot take `self`; make it a free function and reach shared state \
             through a `&ToolContext` parameter",
        );
    }
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            "a tool cannot be generic; the registry must know every parameter's concrete type \
             to write its JSON Schema; use concrete types",
        );
    } else if let Some(clause) = &sig.generics.where_clause {
        cx.error_spanned_by(
            clause,
            "a tool cannot have a `where` clause; use concrete types",
        );
    }
    if let syn::Safety::Unsafe(token) = &sig.safety {
        cx.error_spanned_by(
            token,
            "a tool cannot be `unsafe`: the model calls it with any arguments it likes; \
             make it safe and check the arguments inside",
        );
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(abi, "a tool cannot have an `extern` ABI; remove it");
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "a tool cannot be variadic");
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output
        && has_impl_trait(ty)
    {
        cx.error_spanned_by(
            ty,
            "a tool cannot return `impl Trait`; name the returned type, which must \
             implement `Serialize`",
        );
    }
}

fn check_params(cx: &Ctxt, tool: &ToolFn) {
    let mut context_seen = false;
    for param in &tool.params {
        if param.ident.is_none() {
            let message = match &*param.arg.pat {
                Pat::Wild(_) => {
                    "a tool parameter needs a name, which becomes the argument's name in the \
                     schema; write `name: Type` instead of `_`"
                }
                _ => {
                    "a tool parameter must be a plain name, which becomes the argument's name \
                     in the schema; destructure inside the function instead"
                }
            };
            cx.error_spanned_by(&param.arg.pat, message);
        }
        match param.kind {
            ParamKind::Context => {
                if let Type::Reference(reference) = ungroup(param.ty)
                    && let Some(mutability) = reference.mutability
                {
                    cx.error_spanned_by(
                        mutability,
                        "the tool context is shared; take it as `&ToolContext`",
                    );
                }
                if context_seen {
                    cx.error_spanned_by(
                        param.ty,
                        "a tool takes `&ToolContext` at most once; remove this parameter",
                    );
                }
                context_seen = true;
            }
            ParamKind::Required => check_owned(cx, param.ty),
            ParamKind::Optional { inner } => check_owned(cx, inner),
        }
    }
}

/// Arguments are deserialized from the model's JSON, so they must own their data.
fn check_owned(cx: &Ctxt, ty: &Type) {
    match ungroup(ty) {
        Type::Reference(reference) => {
            let suggestion = match &*reference.elem {
                Type::Path(path) if path.path.is_ident("str") => "`String`".to_owned(),
                Type::Slice(slice) => {
                    let elem = &slice.elem;
                    format!("`Vec<{}>`", quote::quote!(#elem))
                }
                elem => format!("`{}`", quote::quote!(#elem)),
            };
            cx.error_spanned_by(
                ty,
                format!(
                    "a tool parameter cannot be borrowed: arguments are deserialized from the \
                     model's JSON into owned values; use {suggestion}"
                ),
            );
        }
        _ if has_impl_trait(ty) => cx.error_spanned_by(
            ty,
            "a tool parameter cannot use `impl Trait`; the schema needs a concrete type",
        ),
        Type::Infer(_) | Type::Never(_) => {
            cx.error_spanned_by(ty, "a tool parameter needs a concrete type")
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::rate_limit_parts;

    /// The expansion of `#[tool(args)] item`, as text.
    fn expanded(args: &str, item: &str) -> String {
        crate::expand::tool(args.parse().unwrap(), item.parse().unwrap()).to_string()
    }

    #[test]
    fn allow_description_needs_a_reason_and_never_lifts_the_secret_rules() {
        let empty = expanded(
            r#"scopes = "ops:read", allow_description = " ""#,
            "/// Ping the gateway at 10.0.0.1.\nfn ping() -> String { String::new() }",
        );
        assert!(empty.contains("needs a reason"), "{empty}");
        assert!(empty.contains("address/private-ip"), "{empty}");
        let allowed = expanded(
            r#"scopes = "ops:read", allow_description = "operators know the gateway""#,
            "/// Ping 10.0.0.1 with sk-proj-4fG7hJ2kL9mN3pQ8rS1tU6vW.\nfn ping(\n/// Token ghp_1A2b3C4d5E6f7G8h9I0j1K2l3M4n5O6p7Q8r, host fd00::1.\nt: String) -> String { t }",
        );
        assert!(!allowed.contains("address/private-ip"), "{allowed}");
        assert_eq!(
            allowed.matches("does not lift the secret rules").count(),
            2,
            "{allowed}"
        );
        assert!(allowed.contains("an API token"), "{allowed}");
        assert!(allowed.contains("a GitHub token"), "{allowed}");
        let fine = expanded(
            r#"scopes = "ops:read", allow_description = "operators know the gateway""#,
            "/// Ping the gateway at 10.0.0.1.\nfn ping() -> String { String::new() }",
        );
        assert!(!fine.contains("compile_error"), "{fine}");
    }

    #[test]
    fn rate_limits_in_every_unit() {
        assert_eq!(rate_limit_parts("3/s"), Ok((3, 1)));
        assert_eq!(rate_limit_parts("10/min"), Ok((10, 60)));
        assert_eq!(rate_limit_parts(" 1 / h "), Ok((1, 3600)));
        assert_eq!(rate_limit_parts("4294967295/s"), Ok((u32::MAX, 1)));
    }

    #[test]
    fn malformed_rate_limits_say_why_as_the_core_does() {
        assert_eq!(
            rate_limit_parts("10/week").unwrap_err(),
            r#"invalid rate limit "10/week": the unit must be `s`, `min` or `h`, as in "10/min""#
        );
        assert_eq!(
            rate_limit_parts("10 per minute").unwrap_err(),
            r#"invalid rate limit "10 per minute": write it as calls per unit, as in "10/min""#
        );
        for text in ["ten/min", "-1/min", "1.5/min", "4294967296/s", "/min"] {
            assert!(
                rate_limit_parts(text)
                    .unwrap_err()
                    .ends_with(r#"the number of calls must be a whole number, as in "10/min""#),
                "{text}"
            );
        }
        assert!(
            rate_limit_parts("0/min")
                .unwrap_err()
                .ends_with("the number of calls must be at least 1; to forbid a tool, revoke it or deny it in a call policy")
        );
    }
}
