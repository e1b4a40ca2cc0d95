//! The rule of attribute keys and values (`#[tool(attributes(...))]`, `Subject::with_attribute`),
//! here so that the macro (at compile time) and the registry (at build and run time) apply the
//! same one.

/// At most this many bytes in one attribute key.
pub const MAX_ATTRIBUTE_KEY: usize = 64;
/// At most this many bytes in one attribute value.
pub const MAX_ATTRIBUTE_VALUE: usize = 256;
/// At most this many attribute keys declared by one tool.
pub const MAX_TOOL_ATTRIBUTES: usize = 16;
/// At most this many values in one set value, or listed for one key by a tool.
pub const MAX_ATTRIBUTE_VALUES: usize = 64;

/// Keys that name something else already: a subject's or a tool's own fields, as policies
/// (Cedar's `Principal` and `Tool`) see them, and Cedar's reserved words.
const RESERVED_KEYS: [&str; 19] = [
    "tenant",
    "scopes",
    "access",
    "agent",
    "principal",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "needs_approval",
    "true",
    "false",
    "if",
    "then",
    "else",
    "in",
    "like",
    "has",
    "is",
];

/// Checks an attribute key: a lowercase ASCII letter, then lowercase ASCII letters, digits
/// and `_`, at most [`MAX_ATTRIBUTE_KEY`] bytes, and not a reserved name.
///
/// ```
/// assert!(registry_lint::check_attribute_key("data_domain").is_ok());
/// assert!(registry_lint::check_attribute_key("tenant").is_err());
/// ```
pub fn check_attribute_key(key: &str) -> Result<(), String> {
    let mut chars = key.chars();
    let Some(first) = chars.next() else {
        return Err("an attribute key is empty; write one such as `environment`".into());
    };
    if key.len() > MAX_ATTRIBUTE_KEY {
        return Err(format!(
            "the attribute key {:?} has {} bytes (at most {MAX_ATTRIBUTE_KEY})",
            crate::escape(&key[..key.floor_char_boundary(MAX_ATTRIBUTE_KEY)]),
            key.len()
        ));
    }
    if !first.is_ascii_lowercase()
        || !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return Err(format!(
            "the attribute key {:?} is not lowercase ASCII letters, digits and `_` starting with a letter (such as `data_domain`)",
            crate::escape(key)
        ));
    }
    if RESERVED_KEYS.contains(&key) {
        return Err(format!(
            "the attribute key `{key}` is reserved: policies read it as the subject's or the tool's own field, or Cedar reserves it; choose another key"
        ));
    }
    Ok(())
}

/// Checks one attribute text: at most [`MAX_ATTRIBUTE_VALUE`] bytes, not empty, and no NUL,
/// control, bidi or format character.
///
/// ```
/// assert!(registry_lint::check_attribute_text("production").is_ok());
/// assert!(registry_lint::check_attribute_text("prod\u{202e}uction").is_err());
/// ```
pub fn check_attribute_text(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("an attribute value is empty".into());
    }
    if text.len() > MAX_ATTRIBUTE_VALUE {
        return Err(format!(
            "an attribute value has {} bytes (at most {MAX_ATTRIBUTE_VALUE})",
            text.len()
        ));
    }
    if let Some(bad) = text.chars().find(|&c| hostile(c)) {
        return Err(format!(
            "the attribute value {:?} contains U+{:04X}, a control, bidi or format character",
            crate::escape(text),
            u32::from(bad)
        ));
    }
    Ok(())
}

/// A NUL, control, bidi or format character, or one that reads as a line break.
fn hostile(c: char) -> bool {
    c.is_control() || crate::is_invisible(c) || matches!(c, '\u{2028}' | '\u{2029}')
}
