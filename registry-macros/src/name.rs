//! The tool-name and scope grammars, checked at compile time.
//!
//! `registry-core` applies the same rules at run time (`registry_core::name`), for tools
//! that are built without the macro.

/// Why `name` is not a tool name valid for every consumer at once
/// (`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`), or `None` when it is.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    let Some(first) = name.chars().next() else {
        return Some("the tool name is empty".into());
    };
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Some(format!(
            "the tool name `{name}` starts with `{first}`; it must start with an ASCII letter or `_`"
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Some(format!(
            "the tool name `{name}` contains `{bad}`; use only ASCII letters, digits, `_` and `-`"
        ));
    }
    if name.len() > 64 {
        return Some(format!(
            "the tool name `{name}` is {} characters long; providers accept at most 64",
            name.len()
        ));
    }
    None
}

/// Why `scope` is not a scope (non-empty segments of `[A-Za-z0-9_.-]` joined by `:`),
/// or `None` when it is.
pub(crate) fn scope_problem(scope: &str) -> Option<String> {
    if scope.split(':').any(str::is_empty) {
        return Some(format!(
            "the scope `{scope}` has an empty segment; write segments joined by `:`, e.g. `build:read`"
        ));
    }
    let bad = scope
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | ':')))?;
    Some(format!(
        "the scope `{scope}` contains `{bad}`; a scope uses ASCII letters, digits, `_`, `.` and `-`, with `:` between segments"
    ))
}
