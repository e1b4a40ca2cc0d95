//! The rule for tool names: one that every consumer (OpenAI, Anthropic, Gemini, MCP) accepts.

/// The longest tool name every consumer accepts.
pub const MAX_NAME_LEN: usize = 64;

/// Checks that `name` is valid for every consumer at once: `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
///
/// `#[tool]` applies this rule at compile time; the registry applies it again to tools built
/// at run time. The error says what is wrong and how to fix it.
///
/// ```
/// use registry_core::{definition::NameError, definition::check_tool_name};
///
/// assert!(check_tool_name("get_status").is_ok());
/// assert_eq!(check_tool_name("1st"), Err(NameError::BadStart { name: "1st".into(), found: '1' }));
/// assert_eq!(
///     check_tool_name("get.status").unwrap_err().to_string(),
///     "the tool name \"get.status\" contains `.`; use only ASCII letters, digits, `_` and `-`"
/// );
/// ```
pub fn check_tool_name(name: &str) -> Result<(), NameError> {
    let mut chars = name.chars();
    match chars.next() {
        None => return Err(NameError::Empty),
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        Some(found) => {
            return Err(NameError::BadStart {
                name: name.to_owned(),
                found,
            });
        }
    }
    if let Some(found) = chars.find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))) {
        return Err(NameError::BadCharacter {
            name: name.to_owned(),
            found,
        });
    }
    if name.len() > MAX_NAME_LEN {
        return Err(NameError::TooLong {
            name: name.to_owned(),
            length: name.len(),
        });
    }
    Ok(())
}

/// Why a tool name is not valid for every consumer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name is empty.
    #[error("the tool name is empty")]
    Empty,
    /// The name does not start with an ASCII letter or `_`.
    #[error(
        "the tool name {name:?} starts with `{}`; it must start with an ASCII letter or `_`",
        shown(*found)
    )]
    BadStart {
        /// The name.
        name: String,
        /// Its first character.
        found: char,
    },
    /// The name holds a character outside `[A-Za-z0-9_-]`.
    #[error(
        "the tool name {name:?} contains `{}`; use only ASCII letters, digits, `_` and `-`",
        shown(*found)
    )]
    BadCharacter {
        /// The name.
        name: String,
        /// The first such character.
        found: char,
    },
    /// The name is longer than [`MAX_NAME_LEN`].
    #[error(
        "the tool name {name:?} is {length} characters long; providers accept at most {MAX_NAME_LEN}"
    )]
    TooLong {
        /// The name.
        name: String,
        /// Its length in bytes.
        length: usize,
    },
}

/// A character of a refused name as an error shows it: escaped when it is invisible or a
/// control character (`\0`, `\n`, `\u{202e}`), so that the message reads as one line and
/// shows what is there.
fn shown(found: char) -> String {
    registry_lint::escape(found.encode_utf8(&mut [0; 4]))
}
