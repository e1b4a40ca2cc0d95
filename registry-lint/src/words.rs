//! The words of a text, lowercased, with where sentences and clauses begin: what the
//! injection rules match phrases on, whatever the spacing, case and line breaks.

use std::ops::Range;

use crate::text::{is_word_char, next_char, prev_char};

/// One word: letters, digits and `_`, with inner apostrophes (`don't`).
pub(crate) struct Word {
    pub(crate) range: Range<usize>,
    /// Lowercased, with `’` written `'`.
    pub(crate) lower: String,
    /// A sentence ends between the word before and this one (or this is the first word).
    pub(crate) sentence_start: bool,
    /// A clause begins here: a sentence does, or punctuation such as `,` or `:` comes before.
    pub(crate) clause_start: bool,
    /// The word is a whole code span: `` `name` ``.
    pub(crate) code: bool,
}

impl Word {
    /// Whether the word is one of `options`.
    pub(crate) fn is(&self, options: &[&str]) -> bool {
        options.contains(&self.lower.as_str())
    }

    /// `snake_case`: an identifier with an inner `_`, which prose does not have.
    pub(crate) fn is_snake(&self) -> bool {
        let w = self.lower.as_str();
        w.contains('_')
            && !w.starts_with('_')
            && !w.ends_with('_')
            && w.chars().any(|c| c.is_alphabetic())
    }
}

fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '\u{2019}'
}

pub(crate) fn words(text: &str) -> Vec<Word> {
    let mut words: Vec<Word> = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut previous_end = 0;
    while let Some((start, c)) = chars.next() {
        if !is_word_char(c) {
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(at, next)) = chars.peek() {
            let inner_apostrophe = is_apostrophe(next)
                && next_char(text, at + next.len_utf8()).is_some_and(char::is_alphanumeric);
            if !(is_word_char(next) || inner_apostrophe) {
                break;
            }
            end = at + next.len_utf8();
            chars.next();
        }
        let gap = &text[previous_end..start];
        let sentence_start = words.is_empty()
            || gap.contains(['.', '!', '?', ';'])
            || gap.contains("\n\n")
            || gap.contains("\n\r\n");
        let clause_start = sentence_start
            || gap.contains([
                ',', ':', '(', ')', '[', ']', '<', '>', '"', '*', '-', '\u{2014}', '\u{2013}', '\n',
            ]);
        let code = prev_char(text, start) == Some('`') && next_char(text, end) == Some('`');
        words.push(Word {
            range: start..end,
            lower: text[start..end].to_lowercase().replace('\u{2019}', "'"),
            sentence_start,
            clause_start,
            code,
        });
        previous_end = end;
    }
    words
}
