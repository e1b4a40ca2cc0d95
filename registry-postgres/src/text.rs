//! Untrusted text on its way to a `text` or `jsonb` column, made storable without losing
//! anything: the one place every write of registry-postgres passes its text through.
//!
//! PostgreSQL refuses the NUL character in `text` and in `jsonb` (as `\u0000` in a JSON
//! string, or in a key). A tool name, a request id or a reason that carries one would make
//! the whole statement fail, and with it every event written in the same batch. So NUL is
//! replaced by the six visible characters `\u{0}` (the way Rust's `escape_debug` writes it):
//! the record shows that a NUL was there, and where. Every other character is kept as it
//! is; a value that already held the characters `\u{0}` reads the same, which the record
//! cannot tell apart (an auditor who must tell them apart compares the argument hash, or
//! reads the replica's log, which escapes them differently).
//!
//! [`json`] walks a whole [`Value`], keys and string values, so fields a newer core adds to
//! its events are covered without this crate knowing them.

use std::borrow::Cow;

use serde_json::Value;

/// What a NUL character is written as.
pub(crate) const NUL_MARKER: &str = "\\u{0}";

/// `text` as PostgreSQL can store it: each NUL replaced by [`NUL_MARKER`], nothing else
/// changed. Borrows when there is nothing to replace.
pub(crate) fn text(text: &str) -> Cow<'_, str> {
    if text.contains('\0') {
        Cow::Owned(text.replace('\0', NUL_MARKER))
    } else {
        Cow::Borrowed(text)
    }
}

/// [`text`] of an optional value.
pub(crate) fn opt(value: Option<&str>) -> Option<Cow<'_, str>> {
    value.map(text)
}

/// [`text`], owned.
pub(crate) fn owned(value: String) -> String {
    if value.contains('\0') {
        value.replace('\0', NUL_MARKER)
    } else {
        value
    }
}

/// `value` with every key and every string made storable by [`text`], at any depth.
pub(crate) fn json(value: Value) -> Value {
    match value {
        Value::String(string) => Value::String(owned(string)),
        Value::Array(items) => Value::Array(items.into_iter().map(json).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| (owned(key), json(value)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_is_escaped_visibly_and_nothing_else_changes() {
        assert_eq!(text("a\0b\0"), "a\\u{0}b\\u{0}");
        assert!(matches!(text("plain \u{202e} \n"), Cow::Borrowed(_)));
        assert_eq!(opt(Some("\0")).as_deref(), Some("\\u{0}"));
        assert_eq!(opt(None), None);
    }

    #[test]
    fn every_key_and_string_at_any_depth() {
        let value = json!({
            "to\u{0}ol": "x\u{0}",
            "nested": [{"k\u{0}": ["\u{0}", 1, null, true]}],
            "n": 3
        });
        assert_eq!(
            json(value),
            json!({
                "to\\u{0}ol": "x\\u{0}",
                "nested": [{"k\\u{0}": ["\\u{0}", 1, null, true]}],
                "n": 3
            })
        );
    }
}
