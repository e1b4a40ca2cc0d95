//! Fields written as text, `name=value`, every value escaped.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

use super::escape::{escape, needs_escape};

/// The fields of events and spans as `tracing_subscriber`'s default text format writes them
/// (the message first, then `name=value` separated by spaces, strings quoted), but with every
/// name and value passed through [`escape`](super::escape): a field can never end a line, nor
/// hide or reorder what follows it. A value written with `%` or `?` is quoted too unless it is
/// one bare word (a number, `true`, `POST`) or already one whole quoted string, so that a
/// value holding ` outcome=ok` cannot pass for a field of its own. Give it to a
/// `tracing_subscriber::fmt` layer with `fmt_fields` (as [`layer`](super::layer) does).
///
/// ```
/// use registry_mcp::logging::EscapedFields;
///
/// let layer = tracing_subscriber::fmt::layer::<tracing_subscriber::Registry>()
///     .fmt_fields(EscapedFields);
/// # let _ = layer;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct EscapedFields;

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = Visitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct Visitor<'writer> {
    writer: Writer<'writer>,
    first: bool,
    result: fmt::Result,
}

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.write(field, value);
        } else {
            self.write(field, &format!("{value:?}"));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        // A value written with `%` (Display) or `?` (Debug) is whatever its type makes of
        // it: one that is not a single bare word, nor a whole quoted string, is quoted, so
        // that `x outcome=ok` reads as one value and never as a field of its own.
        if field.name() == "message" || is_bare(&text) || is_quoted(&text) {
            self.write(field, &text);
        } else {
            self.write(field, &format!("{text:?}"));
        }
    }
}

impl Visitor<'_> {
    /// Writes `name=text` (or the message's text alone), escaped.
    fn write(&mut self, field: &Field, text: &str) {
        if self.result.is_err() {
            return;
        }
        let separator = if self.first { "" } else { " " };
        self.first = false;
        let name = field.name();
        self.result = if name == "message" {
            write!(self.writer, "{separator}{}", escape(text))
        } else {
            let name = name.strip_prefix("r#").unwrap_or(name);
            write!(self.writer, "{separator}{}={}", escape(name), escape(text))
        };
    }
}

/// Whether `text` reads as one value unquoted: a number, `true`, a method, a word; nothing
/// that separates fields (a space), makes one (`=`), quotes, or would be escaped.
fn is_bare(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| !c.is_whitespace() && !matches!(c, '=' | '"' | '\\') && !needs_escape(c))
}

/// Whether `text` is one whole quoted string as `Debug` writes a string: a quote, then
/// characters where every quote and backslash is escaped, then the closing quote, last.
fn is_quoted(text: &str) -> bool {
    let Some(inner) = text
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
    else {
        return false;
    };
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            // A backslash escapes the next character, which the guard skips; with none left,
            // it escaped the closing quote.
            '\\' if chars.next().is_none() => return false,
            '\\' => {}
            '"' => return false,
            c if needs_escape(c) || (c.is_whitespace() && c != ' ') => return false,
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_words_and_whole_quoted_strings_are_kept_and_nothing_else() {
        for bare in ["200", "true", "POST", "-1.5", "token:alice", "a/b"] {
            assert!(is_bare(bare), "{bare}");
        }
        for not_bare in ["", "a b", "a=b", "\"a\"", "a\\b", "a\nb", "a\u{202e}"] {
            assert!(!is_bare(not_bare), "{not_bare:?}");
        }
        for quoted in [r#""""#, r#""a b=c""#, r#""say \"hi\"""#, r#""back\\""#] {
            assert!(is_quoted(quoted), "{quoted}");
        }
        for not_quoted in [
            r#"""#,
            r#""a" outcome="ok""#,
            r#""a\""#,
            "\"a\nb\"",
            r#"x="a""#,
            r#""a"b""#,
        ] {
            assert!(!is_quoted(not_quoted), "{not_quoted}");
        }
    }
}
