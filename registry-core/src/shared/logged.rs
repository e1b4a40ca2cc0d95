//! A text from outside, written safely into a log line.

/// A text from outside (a tool name, a call id, a reason) as a log field: as it is when it is
/// a plain word (letters, digits, `_ - . : / @ +`), quoted otherwise, with `"`, `\`, line
/// breaks, NUL and every other control character escaped, and every character the
/// description lint calls invisible (soft hyphen, bidi controls, variation selectors...)
/// written `\u{...}`, so that it can neither start a line, nor forge a field, nor read
/// differently from what it is.
pub(crate) struct Logged<'a>(pub(crate) &'a str);

impl Logged<'_> {
    /// `text` as a field value, for an optional field.
    pub(crate) fn field(text: &str) -> tracing::field::DisplayValue<Logged<'_>> {
        tracing::field::display(Logged(text))
    }
}

impl std::fmt::Display for Logged<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write;
        let plain = !self.0.is_empty()
            && self.0.chars().all(|c| {
                (c.is_alphanumeric() || "_-.:/@+".contains(c)) && !registry_lint::is_invisible(c)
            });
        if plain {
            return f.write_str(self.0);
        }
        f.write_char('"')?;
        for c in self.0.chars() {
            if c == '\'' {
                f.write_char(c)?;
            } else if registry_lint::is_invisible(c) && !c.is_ascii() {
                write!(f, "\\u{{{:x}}}", u32::from(c))?;
            } else {
                write!(f, "{}", c.escape_debug())?;
            }
        }
        f.write_char('"')
    }
}

#[cfg(test)]
mod tests {
    use super::Logged;

    #[test]
    fn plain_words_stay_and_the_rest_is_quoted() {
        assert_eq!(Logged("run-1").to_string(), "run-1");
        assert_eq!(Logged("a\nb").to_string(), "\"a\\nb\"");
        assert_eq!(Logged("x outcome=ok").to_string(), "\"x outcome=ok\"");
        assert_eq!(Logged("n\0").to_string(), "\"n\\0\"");
        assert_eq!(Logged("").to_string(), "\"\"");
        assert_eq!(Logged("a\rb").to_string(), "\"a\\rb\"");
        assert_eq!(Logged("say \"hi\"").to_string(), "\"say \\\"hi\\\"\"");
        assert_eq!(Logged("it's").to_string(), "\"it's\"");
        // Invisible characters are never written as they are, not even in letters.
        assert_eq!(
            Logged("get\u{3164}status").to_string(),
            "\"get\\u{3164}status\""
        );
        assert_eq!(Logged("a\u{AD}b").to_string(), "\"a\\u{ad}b\"");
        assert_eq!(Logged("a\u{FE0F}b").to_string(), "\"a\\u{fe0f}b\"");
        assert_eq!(Logged("a\u{202E}b").to_string(), "\"a\\u{202e}b\"");
        assert_eq!(Logged("a\u{2066}b").to_string(), "\"a\\u{2066}b\"");
        assert_eq!(Logged("a\u{85}b").to_string(), "\"a\\u{85}b\"");
        assert_eq!(Logged("é").to_string(), "é");
    }
}
