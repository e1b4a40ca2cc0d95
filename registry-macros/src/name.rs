//! The tool-name and scope grammars, checked at compile time.
//!
//! `registry-core` applies the same rules at run time (`registry_core::name`), for tools
//! that are built without the macro.

/// Why `name` is not a tool name valid for every consumer at once
/// (`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`), or `None` when it is.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    let Some(first) = name.chars().next() else {
        return Some(
            "the tool name is empty; write one, or leave `name` out to use the function's name"
                .into(),
        );
    };
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Some(format!(
            "the tool name `{name}` starts with {}; it must start with an ASCII letter or `_`",
            describe(first)
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Some(format!(
            "the tool name `{name}` contains {}; use only ASCII letters, digits, `_` and `-`",
            describe(bad)
        ));
    }
    if name.len() > 64 {
        return Some(format!(
            "the tool name `{name}` is {} characters long; providers accept at most 64, so shorten it",
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
        "the scope `{scope}` contains {}; a scope uses ASCII letters, digits, `_`, `.` and `-`, with `:` between segments",
        describe(bad)
    ))
}

/// `c` as a message shows it: white space by name, anything else in backticks.
fn describe(c: char) -> String {
    match c {
        ' ' => "a space".to_owned(),
        c if c.is_whitespace() => format!("the white space {c:?}"),
        c => format!("`{c}`"),
    }
}
