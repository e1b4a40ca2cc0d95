//! Small helpers on text: neighbours of a position, escaping, excerpts.

use std::fmt::Write;

/// The longest excerpt shown, in characters.
const EXCERPT_CHARS: usize = 60;

/// The character before byte `at`, if any.
pub(crate) fn prev_char(text: &str, at: usize) -> Option<char> {
    text[..at].chars().next_back()
}

/// The character at byte `at`, if any.
pub(crate) fn next_char(text: &str, at: usize) -> Option<char> {
    text[at..].chars().next()
}

/// Letters, digits and `_`: the characters a word or identifier is made of.
pub(crate) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether no word character touches byte `at` from the left.
pub(crate) fn starts_word(text: &str, at: usize) -> bool {
    prev_char(text, at).is_none_or(|c| !is_word_char(c))
}

/// The end of the run of characters meeting `accept` that starts at byte `at`.
pub(crate) fn run_end(text: &str, at: usize, accept: impl Fn(char) -> bool) -> usize {
    text[at..]
        .char_indices()
        .find(|(_, c)| !accept(*c))
        .map_or(text.len(), |(offset, _)| at + offset)
}

/// The start of the run of characters meeting `accept` that ends at byte `at`.
pub(crate) fn run_start(text: &str, at: usize, accept: impl Fn(char) -> bool) -> usize {
    text[..at]
        .char_indices()
        .rev()
        .take_while(|(_, c)| accept(*c))
        .last()
        .map_or(at, |(offset, _)| offset)
}

/// Whether `c` is invisible, reorders text, or is a control character other than a tab or a
/// line break, so that it must be shown escaped.
pub(crate) fn needs_escape(c: char) -> bool {
    crate::invisible::rule_of(c).is_some()
}

/// `text` with every invisible, reordering or control character written as `\u{...}` (a line
/// feed as `\n`, a carriage return as `\r`, NUL as `\0`), so that what is shown is what is
/// there.
///
/// ```
/// assert_eq!(registry_lint::escape("a\u{200B}b\nc"), "a\\u{200b}b\\nc");
/// ```
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out
}

fn push_escaped(out: &mut String, c: char) {
    if c == '\n' {
        out.push_str("\\n");
    } else if c == '\r' {
        out.push_str("\\r");
    } else if c == '\0' {
        out.push_str("\\0");
    } else if needs_escape(c) {
        let _ = write!(out, "\\u{{{:x}}}", c as u32);
    } else {
        out.push(c);
    }
}

/// `text[range]`, escaped, shortened in the middle when long.
pub(crate) fn excerpt(text: &str, range: std::ops::Range<usize>) -> String {
    let found = &text[range];
    let count = found.chars().count();
    if count <= EXCERPT_CHARS {
        return escape(found);
    }
    let head: String = found.chars().take(EXCERPT_CHARS - 15).collect();
    let tail: String = found.chars().skip(count - 14).collect();
    format!("{}…{}", escape(&head), escape(&tail))
}

/// The first `keep` bytes of `text[range]` (on a character boundary), escaped, then `…`:
/// enough to find a secret, not enough to use it.
pub(crate) fn redacted(text: &str, range: std::ops::Range<usize>, keep: usize) -> String {
    let found = &text[range];
    let mut cut = keep.min(found.len());
    while !found.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", escape(&found[..cut]))
}
