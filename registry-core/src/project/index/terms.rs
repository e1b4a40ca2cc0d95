//! The terms of a text, as the search index and its queries both see them.
//!
//! 1. **Words.** A word is a run of letters, digits and combining marks (Unicode's
//!    alphanumerics, so `é`, `ß` and `Ж` are letters); everything else separates words: white
//!    space, punctuation, `_`, `-`, `.`, `/`. A character of a script written without spaces
//!    (Han, Hiragana, Katakana) is a word of its own.
//! 2. **Case.** A word is split where its case changes, as names are written in camelCase
//!    and PascalCase: `getStatus` → `get`, `status`; `HTTPServer` → `http`, `server`. Digits
//!    stay with their word (`s3`, `base64`, `ipv4`).
//! 3. **Folding.** Each part is lowercased with Unicode's mapping (`Straße` → `straße`,
//!    `ÉTÉ` → `été`); the plural of an acronym is the acronym (`PRs` → `pr`).
//! 4. **Stop words.** Common English function words (`the`, `to`, `with`, ...) are dropped:
//!    they tell no tool from another, and every query has them.
//! 5. **Stems.** A part of ASCII letters is reduced to its English stem (Snowball's Porter 2
//!    algorithm, from the `pagefind_stem` crate): `deploys`, `deploying` and `deployment` are all
//!    `deploy`, `repositories` and `repository` both `repositori`. Other words stay as they are.
//!
//! No step depends on anything but the text: the same text gives the same terms in every
//! process.

use std::borrow::Cow;
use std::collections::HashMap;

use pagefind_stem::{Algorithm, Stemmer};

/// English function words too common to tell tools apart, sorted (binary search). Words
/// that carry meaning in a tool's description (`all`, `not`, `new`, `get`, `list`) are kept.
const STOP_WORDS: &[&str] = &[
    "a", "about", "also", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "do", "does", "e", "eg", "etc", "for", "from", "g", "has", "have", "how", "i", "ie",
    "if", "in", "into", "is", "it", "its", "may", "me", "must", "my", "of", "on", "or", "our",
    "please", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "to", "us", "using", "via", "want", "was", "we",
    "were", "what", "when", "where", "which", "who", "whose", "will", "with", "would", "you",
    "your",
];

/// The longest word that is stemmed; longer ones (identifiers, hashes) are kept whole.
const MAX_STEMMED: usize = 40;

/// Splits texts into terms.
pub(crate) struct Terms {
    stemmer: Stemmer,
}

impl std::fmt::Debug for Terms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Terms")
    }
}

impl Terms {
    pub(crate) fn new() -> Terms {
        Terms {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }

    /// Calls `each` with every term of `text`, in the order they appear.
    pub(crate) fn each(&self, text: &str, each: &mut dyn FnMut(&str)) {
        walk(text, &mut |part| {
            if stemmed(part) {
                each(&self.stemmer.stem(part));
            } else {
                each(part);
            }
        });
    }

    /// [`each`](Self::each), keeping each word's stem in `stems` (a text's vocabulary is
    /// small, and stemming is most of the work of indexing).
    pub(crate) fn each_cached(
        &self,
        text: &str,
        stems: &mut HashMap<String, String>,
        each: &mut dyn FnMut(&str),
    ) {
        walk(text, &mut |part| {
            if !stemmed(part) {
                each(part);
            } else if let Some(stem) = stems.get(part) {
                each(stem);
            } else {
                let stem = self.stemmer.stem(part).into_owned();
                each(&stem);
                stems.insert(part.to_owned(), stem);
            }
        });
    }

    /// Every term of `text`, in order.
    #[cfg(test)]
    pub(crate) fn of(&self, text: &str) -> Vec<String> {
        let mut terms = Vec::new();
        self.each(text, &mut |term| terms.push(term.to_owned()));
        terms
    }
}

/// Whether a folded part is stemmed: ASCII letters only, and not too long.
fn stemmed(part: &str) -> bool {
    part.len() <= MAX_STEMMED && part.bytes().all(|b| b.is_ascii_lowercase())
}

/// Calls `each` with every part of `text`, folded, stop words left out, not stemmed.
fn walk(text: &str, each: &mut dyn FnMut(&str)) {
    let mut start = None;
    for (at, c) in text.char_indices() {
        if is_unspaced(c) {
            if let Some(from) = start.take() {
                word(&text[from..at], each);
            }
            let own: String = c.to_lowercase().collect();
            each(&own);
        } else if is_word_char(c) {
            start.get_or_insert(at);
        } else if let Some(from) = start.take() {
            word(&text[from..at], each);
        }
    }
    if let Some(from) = start {
        word(&text[from..], each);
    }
}

/// One word: split where its case changes, then each part folded and filtered.
///
/// A part starts at an uppercase letter after a lowercase one (`get|Status`), and at the
/// last uppercase letter of a run followed by a lowercase word (`HTTP|Server`), but not
/// before the plural `s` of an acronym (`PRs`, `IDs` stay whole).
fn word(word: &str, each: &mut dyn FnMut(&str)) {
    if word
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return part(word, each);
    }
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut from = 0;
    for index in 1..chars.len() {
        let (at, c) = chars[index];
        let before = chars[index - 1].1;
        let next = chars.get(index + 1).map(|&(_, next)| next);
        let after_next = chars.get(index + 2).map(|&(_, after)| after);
        // A lowercase word follows, not just the plural `s` of an acronym.
        let plural = next == Some('s') && !after_next.is_some_and(char::is_lowercase);
        let lower_word_follows = next.is_some_and(char::is_lowercase) && !plural;
        let boundary = (before.is_lowercase() && c.is_uppercase())
            || ((before.is_uppercase() || before.is_numeric())
                && c.is_uppercase()
                && lower_word_follows);
        if boundary {
            part(&word[from..at], each);
            from = at;
        }
    }
    part(&word[from..], each);
}

/// One part of a word: folded, unless it is a stop word.
fn part(part: &str, each: &mut dyn FnMut(&str)) {
    // The plural of an acronym (`PRs`, `IDs`, `URLs`) is the acronym.
    let part = match part.strip_suffix('s') {
        Some(acronym) if acronym.len() >= 2 && acronym.chars().all(char::is_uppercase) => acronym,
        _ => part,
    };
    if part.is_empty() {
        return;
    }
    let folded: Cow<'_, str> = if part
        .bytes()
        .any(|b| b.is_ascii_uppercase() || !b.is_ascii())
    {
        Cow::Owned(part.to_lowercase())
    } else {
        Cow::Borrowed(part)
    };
    if STOP_WORDS.binary_search(&&*folded).is_err() {
        each(&folded);
    }
}

/// Whether `c` belongs to a word: a letter, a digit, or a combining mark (so that a letter
/// written with a separate accent stays one word).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(c,
            '\u{0300}'..='\u{036F}'
            | '\u{1AB0}'..='\u{1AFF}'
            | '\u{1DC0}'..='\u{1DFF}'
            | '\u{20D0}'..='\u{20FF}'
            | '\u{FE20}'..='\u{FE2F}')
}

/// Whether `c` is of a script written without spaces between words, so that each character
/// is a term of its own: Han (CJK ideographs), Hiragana and Katakana.
fn is_unspaced(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2FA1F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        Terms::new().of(text)
    }

    #[test]
    fn stop_words_are_sorted() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn names_split_on_underscores_dashes_and_case() {
        assert_eq!(terms("get_status"), ["get", "status"]);
        assert_eq!(terms("list-open-PRs"), ["list", "open", "pr"]);
        assert_eq!(terms("userIDs URLs"), ["user", "id", "url"]);
        assert_eq!(terms("getBuildStatus"), ["get", "build", "status"]);
        assert_eq!(terms("HTTPServerError"), ["http", "server", "error"]);
        assert_eq!(
            terms("s3Bucket base64Encode ipv4"),
            ["s3", "bucket", "base64", "encod", "ipv4"]
        );
    }

    #[test]
    fn words_are_folded_filtered_and_stemmed() {
        assert_eq!(
            terms("Deploys the project to the Repositories"),
            ["deploy", "project", "repositori"]
        );
        assert_eq!(terms("deploying deployment"), ["deploy", "deploy"]);
    }

    #[test]
    fn unicode_is_folded_and_kept_whole() {
        assert_eq!(terms("Straße ÉTÉ Ёлка"), ["straße", "été", "ёлка"]);
        // A letter and its separate accent are one word.
        assert_eq!(terms("cafe\u{301} au lait"), ["cafe\u{301}", "au", "lait"]);
        // Scripts without spaces: one term per character.
        assert_eq!(terms("検索ツール"), ["検", "索", "ツ", "ー", "ル"]);
        assert_eq!(terms("api検索"), ["api", "検", "索"]);
    }

    #[test]
    fn anything_goes_in() {
        for text in [
            "",
            " ",
            "__",
            "-",
            "\u{301}",
            "A",
            "ΣΑΣ",
            "\u{0}x\u{7f}",
            "🙂 ok",
            "İstanbul",
        ] {
            let _ = terms(text);
        }
        assert_eq!(terms("x".repeat(100).as_str()), ["x".repeat(100)]);
    }
}
