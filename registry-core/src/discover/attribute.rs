//! The attributes a run is judged by beside its tenant and scopes (`environment`,
//! `data_domain`, `workspace`...), and the one rule their keys and values follow.
//!
//! A subject carries attribute values ([`Subject::with_attribute`]); a tool declares, per key,
//! the values it is for (`#[tool(attributes(data_domain = "finance"))]`,
//! [`DynamicTool::attribute`](crate::DynamicTool::attribute)). A tool is visible to a subject
//! only if, for every key the tool declares, the subject's value is one of the listed values
//! (for a set value: one of its members is).
//!
//! [`Subject::with_attribute`]: crate::Subject::with_attribute

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;

/// At most this many attributes on one subject; past it, the further ones are refused (and
/// match nothing).
pub const MAX_SUBJECT_ATTRIBUTES: usize = 32;
/// At most this many attribute keys declared by one tool.
pub const MAX_TOOL_ATTRIBUTES: usize = 16;
/// At most this many values in one set value, or listed for one key by a tool.
pub const MAX_ATTRIBUTE_VALUES: usize = 64;
/// At most this many bytes in one key.
pub const MAX_ATTRIBUTE_KEY: usize = 64;
/// At most this many bytes in one string value (or one member of a set).
pub const MAX_ATTRIBUTE_VALUE: usize = 256;

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

/// The value of one attribute of a subject: a string, a whole number, a bool, or a set of
/// strings.
///
/// ```
/// use registry_core::access::AttributeValue;
///
/// assert_eq!(AttributeValue::from("finance"), AttributeValue::String("finance".into()));
/// assert_eq!(AttributeValue::from(3), AttributeValue::Number(3));
/// assert_eq!(AttributeValue::from(["eu", "us"]).to_string(), r#"["eu", "us"]"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum AttributeValue {
    /// A string, such as `"production"`.
    String(String),
    /// A whole number.
    Number(i64),
    /// A bool.
    Bool(bool),
    /// A set of strings, such as the workspaces a person belongs to.
    Set(BTreeSet<String>),
}

impl AttributeValue {
    /// Whether this value is one of `listed` (a tool's values for its key): a string equal to
    /// one of them, a set with a member equal to one, a number or a bool written as one
    /// (`3`, `true`). Compared exactly, byte for byte: nothing is trimmed, folded or
    /// normalised.
    pub fn is_one_of<S: AsRef<str>>(&self, listed: &[S]) -> bool {
        let listed = |value: &str| listed.iter().any(|item| item.as_ref() == value);
        match self {
            AttributeValue::String(value) => listed(value),
            AttributeValue::Number(value) => listed(&value.to_string()),
            AttributeValue::Bool(value) => listed(if *value { "true" } else { "false" }),
            AttributeValue::Set(values) => values.iter().any(|value| listed(value)),
        }
    }

    /// Why this value may not be a subject's attribute, if it may not: too long, too many
    /// members, or a character that is not shown as itself ([`check_attribute_text`]).
    pub fn problem(&self) -> Option<String> {
        match self {
            AttributeValue::String(value) => check_attribute_text(value).err(),
            AttributeValue::Number(_) | AttributeValue::Bool(_) => None,
            AttributeValue::Set(values) if values.len() > MAX_ATTRIBUTE_VALUES => Some(format!(
                "a set of {} values (at most {MAX_ATTRIBUTE_VALUES})",
                values.len()
            )),
            AttributeValue::Set(values) => values
                .iter()
                .find_map(|value| check_attribute_text(value).err()),
        }
    }
}

impl fmt::Display for AttributeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttributeValue::String(value) => write!(f, "{value:?}"),
            AttributeValue::Number(value) => write!(f, "{value}"),
            AttributeValue::Bool(value) => write!(f, "{value}"),
            AttributeValue::Set(values) => {
                f.write_str("[")?;
                for (i, value) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{value:?}")?;
                }
                f.write_str("]")
            }
        }
    }
}

impl From<&str> for AttributeValue {
    fn from(value: &str) -> Self {
        AttributeValue::String(value.to_owned())
    }
}

impl From<String> for AttributeValue {
    fn from(value: String) -> Self {
        AttributeValue::String(value)
    }
}

impl From<i64> for AttributeValue {
    fn from(value: i64) -> Self {
        AttributeValue::Number(value)
    }
}

impl From<i32> for AttributeValue {
    fn from(value: i32) -> Self {
        AttributeValue::Number(value.into())
    }
}

impl From<u32> for AttributeValue {
    fn from(value: u32) -> Self {
        AttributeValue::Number(value.into())
    }
}

impl From<bool> for AttributeValue {
    fn from(value: bool) -> Self {
        AttributeValue::Bool(value)
    }
}

impl<S: Into<String>, const N: usize> From<[S; N]> for AttributeValue {
    fn from(values: [S; N]) -> Self {
        AttributeValue::Set(values.into_iter().map(Into::into).collect())
    }
}

impl From<Vec<String>> for AttributeValue {
    fn from(values: Vec<String>) -> Self {
        AttributeValue::Set(values.into_iter().collect())
    }
}

impl From<BTreeSet<String>> for AttributeValue {
    fn from(values: BTreeSet<String>) -> Self {
        AttributeValue::Set(values)
    }
}

/// Checks an attribute key: a lowercase ASCII letter, then lowercase ASCII letters, digits
/// and `_`, at most [`MAX_ATTRIBUTE_KEY`] bytes (`environment`, `data_domain`), and not one
/// of the names a policy reads already (`tenant`, `scopes`, `access`, `agent`, `principal`,
/// the hints `read_only`, `destructive`, `idempotent`, `open_world`, `needs_approval`) nor a
/// word Cedar reserves (`true`, `false`, `if`, `then`, `else`, `in`, `like`, `has`, `is`).
///
/// ```
/// use registry_core::access::check_attribute_key;
///
/// assert!(check_attribute_key("data_domain").is_ok());
/// assert!(check_attribute_key("Environment").is_err());
/// assert!(check_attribute_key("scopes").is_err());
/// ```
pub fn check_attribute_key(key: &str) -> Result<(), String> {
    let mut chars = key.chars();
    let Some(first) = chars.next() else {
        return Err("an attribute key is empty; write one such as `environment`".into());
    };
    if key.len() > MAX_ATTRIBUTE_KEY {
        return Err(format!(
            "the attribute key {:?} has {} bytes (at most {MAX_ATTRIBUTE_KEY})",
            registry_lint::escape(&key[..key.floor_char_boundary(MAX_ATTRIBUTE_KEY)]),
            key.len()
        ));
    }
    if !first.is_ascii_lowercase()
        || !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return Err(format!(
            "the attribute key {:?} is not lowercase ASCII letters, digits and `_` starting with a letter (such as `data_domain`)",
            registry_lint::escape(key)
        ));
    }
    if RESERVED_KEYS.contains(&key) {
        return Err(format!(
            "the attribute key `{key}` is reserved: policies read it as the subject's or the tool's own field, or Cedar reserves it; choose another key"
        ));
    }
    Ok(())
}

/// Checks one attribute text (a string value, a set member, or a value a tool lists): at
/// most [`MAX_ATTRIBUTE_VALUE`] bytes, not empty, and no NUL, control, bidi or format
/// character (`Cc`, `Cf`, line and paragraph separators), which would show as something else
/// than it is in an audit row or an operator's output.
///
/// ```
/// use registry_core::access::check_attribute_text;
///
/// assert!(check_attribute_text("production").is_ok());
/// assert!(check_attribute_text("prod\u{202e}uction").is_err());
/// assert!(check_attribute_text("a\0b").is_err());
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
            registry_lint::escape(text),
            u32::from(bad)
        ));
    }
    Ok(())
}

/// A NUL, control, bidi or format character, or one that reads as a line break.
fn hostile(c: char) -> bool {
    c.is_control() || registry_lint::is_invisible(c) || matches!(c, '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_match_exactly() {
        let listed = ["staging", "production"];
        assert!(AttributeValue::from("staging").is_one_of(&listed));
        assert!(!AttributeValue::from("Staging").is_one_of(&listed));
        assert!(!AttributeValue::from("staging ").is_one_of(&listed));
        assert!(AttributeValue::from(["dev", "production"]).is_one_of(&listed));
        assert!(!AttributeValue::from(["dev"]).is_one_of(&listed));
        assert!(AttributeValue::from(3).is_one_of(&["3"]));
        assert!(AttributeValue::from(true).is_one_of(&["true"]));
    }

    #[test]
    fn hostile_texts_are_refused() {
        for text in ["a\0b", "a\nb", "a\u{202e}b", "a\u{200b}b", "a\u{2028}b", ""] {
            assert!(check_attribute_text(text).is_err(), "{text:?}");
        }
        assert!(check_attribute_text(&"x".repeat(MAX_ATTRIBUTE_VALUE + 1)).is_err());
        assert!(check_attribute_text("finance-eu_1.2").is_ok());
    }
}
