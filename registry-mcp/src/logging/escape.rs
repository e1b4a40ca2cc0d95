//! What may not reach a log line as it is, and how it is written instead.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must be written escaped in a log line: a control character (C0, DEL, C1: line
/// breaks, NUL, terminal escapes), a line or paragraph separator, or a character that is
/// invisible or reorders text (bidirectional controls such as U+202E and U+2066–2069,
/// zero-width characters U+200B–200F, the soft hyphen U+00AD, variation selectors, tags and
/// the other default-ignorable code points).
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF0}'..='\u{FFFB}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// `text` fit for one log line: `\n`, `\r` and `\t` written as those two characters, every
/// other character of [`needs_escape`] as `\u{...}` (its code point in hex); the rest as it
/// is. Borrowed when nothing needed escaping.
///
/// ```
/// use registry_mcp::logging::escape;
///
/// assert_eq!(escape("plain text"), "plain text");
/// assert_eq!(
///     escape("x\nFORGED\u{0}\u{202E}"),
///     "x\\nFORGED\\u{0}\\u{202e}"
/// );
/// ```
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if needs_escape(c) => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// A JSON text (as `serde_json` writes it: control characters below U+0020 already escaped)
/// with every other character of [`needs_escape`] written as a JSON escape (`\u202e`, a
/// surrogate pair above U+FFFF). Such characters can only be inside strings, where the
/// escape means the same character: the JSON is the same value, and shows what it holds.
pub(crate) fn escape_json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(needs_escape) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if needs_escape(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_characters_are_escaped_and_plain_text_borrowed() {
        assert!(matches!(escape("héllo wörld = 1"), Cow::Borrowed(_)));
        for hostile in [
            '\n',
            '\r',
            '\0',
            '\u{1b}',
            '\u{7f}',
            '\u{85}',
            '\u{9b}',
            '\u{ad}',
            '\u{200b}',
            '\u{200f}',
            '\u{2028}',
            '\u{2029}',
            '\u{202e}',
            '\u{2066}',
            '\u{2069}',
            '\u{feff}',
            '\u{fe0f}',
            '\u{e0041}',
        ] {
            let escaped = escape(&format!("a{hostile}b")).into_owned();
            assert!(
                escaped.chars().all(|c| !needs_escape(c)),
                "{hostile:?} -> {escaped:?}"
            );
            assert!(
                escaped.starts_with("a\\") && escaped.ends_with('b'),
                "{escaped}"
            );
        }
    }

    #[test]
    fn json_escapes_keep_the_value() {
        let value = serde_json::json!({"id": "x\n\u{0}\u{85}\u{202e}\u{e0041}y"});
        let text = serde_json::to_string(&value).unwrap();
        let escaped = escape_json(&text);
        assert!(escaped.is_ascii(), "{escaped}");
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, value);
    }
}
