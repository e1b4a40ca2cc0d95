//! Characters that are invisible, reorder text or control a terminal: what a model reads is
//! then not what a reviewer sees.
//!
//! Refused: every character of general category `Cc` (control) except the tab and the line
//! feed, which descriptions use for layout (a carriage return is refused: on a terminal it
//! moves back over what was written, so that later text hides earlier text); every character
//! of general category `Cf` (format); every `Default_Ignorable_Code_Point`. The general
//! categories come from `unicode-properties`; the default-ignorable code points from
//! [`DEFAULT_IGNORABLE`], a copy of Unicode's `DerivedCoreProperties.txt`.
//!
//! One exception: a single text or emoji presentation selector (U+FE0E, U+FE0F) right after
//! an emoji, as in `⚠️`, is how emoji are written. It is not refused, and, like every other
//! invisible character, it is taken out of the text the other rules read.

use unicode_properties::{GeneralCategory, UnicodeEmoji, UnicodeGeneralCategory};

use crate::text::excerpt;
use crate::{Finding, Rule};

/// The code points with the Unicode property `Default_Ignorable_Code_Point`, as ranges, from
/// `DerivedCoreProperties.txt` of Unicode 16.0.0
/// (<https://www.unicode.org/Public/16.0.0/ucd/DerivedCoreProperties.txt>). The property is
/// stable: reserved code points that may become default-ignorable are listed already.
pub(crate) const DEFAULT_IGNORABLE: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),   // SOFT HYPHEN
    ('\u{034F}', '\u{034F}'),   // COMBINING GRAPHEME JOINER
    ('\u{061C}', '\u{061C}'),   // ARABIC LETTER MARK
    ('\u{115F}', '\u{1160}'),   // HANGUL CHOSEONG FILLER..HANGUL JUNGSEONG FILLER
    ('\u{17B4}', '\u{17B5}'),   // KHMER VOWEL INHERENT AQ..KHMER VOWEL INHERENT AA
    ('\u{180B}', '\u{180F}'),   // MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
    ('\u{200B}', '\u{200F}'),   // ZERO WIDTH SPACE..RIGHT-TO-LEFT MARK
    ('\u{202A}', '\u{202E}'),   // LEFT-TO-RIGHT EMBEDDING..RIGHT-TO-LEFT OVERRIDE
    ('\u{2060}', '\u{206F}'),   // WORD JOINER..NOMINAL DIGIT SHAPES (U+2065 reserved)
    ('\u{3164}', '\u{3164}'),   // HANGUL FILLER
    ('\u{FE00}', '\u{FE0F}'),   // VARIATION SELECTOR-1..VARIATION SELECTOR-16
    ('\u{FEFF}', '\u{FEFF}'),   // ZERO WIDTH NO-BREAK SPACE
    ('\u{FFA0}', '\u{FFA0}'),   // HALFWIDTH HANGUL FILLER
    ('\u{FFF0}', '\u{FFF8}'),   // reserved
    ('\u{1BCA0}', '\u{1BCA3}'), // SHORTHAND FORMAT LETTER OVERLAP..UP STEP
    ('\u{1D173}', '\u{1D17A}'), // MUSICAL SYMBOL BEGIN BEAM..END PHRASE
    ('\u{E0000}', '\u{E0FFF}'), // tags, VARIATION SELECTOR-17..256, reserved
];

/// Whether `c` has the Unicode property `Default_Ignorable_Code_Point`.
fn is_default_ignorable(c: char) -> bool {
    DEFAULT_IGNORABLE
        .binary_search_by(|&(low, high)| {
            if high < c {
                std::cmp::Ordering::Less
            } else if low > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// The rule that refuses `c`, if any: every character that is invisible, reorders text or
/// is a control character other than a tab or a line feed.
pub(crate) fn rule_of(c: char) -> Option<Rule> {
    match c {
        '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' => Some(Rule::ZeroWidth),
        '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{061C}' => Some(Rule::BidiControl),
        '\u{E0000}'..='\u{E007F}' => Some(Rule::TagCharacter),
        '\t' | '\n' => None,
        c if c.is_control() => Some(Rule::ControlCharacter),
        c if c.is_ascii() => None,
        c if is_default_ignorable(c) || c.general_category() == GeneralCategory::Format => {
            Some(Rule::FormatCharacter)
        }
        _ => None,
    }
}

/// Whether `c`, found right after `before`, is the one presentation selector of an emoji
/// (`⚠️` is U+26A0 U+FE0F): how emoji are written, not refused.
fn is_emoji_presentation(before: Option<char>, c: char) -> bool {
    matches!(c, '\u{FE0E}' | '\u{FE0F}')
        && before.is_some_and(|before| {
            !before.is_ascii() && before.is_emoji_char() && rule_of(before).is_none()
        })
}

/// The rule that refuses `c` found right after `before`, if any.
fn rule_in_context(before: Option<char>, c: char) -> Option<Rule> {
    if is_emoji_presentation(before, c) {
        None
    } else {
        rule_of(c)
    }
}

/// Characters shown on either side of a run of invisible characters.
const CONTEXT: usize = 12;

/// One finding per run of characters of the same rule, with some text around it to find it
/// by; tag characters also say the ASCII text they spell.
pub(crate) fn check(text: &str, out: &mut Vec<Finding>) {
    let mut chars = text.char_indices().peekable();
    let mut before = None;
    while let Some((start, c)) = chars.next() {
        let Some(rule) = rule_in_context(before, c) else {
            before = Some(c);
            continue;
        };
        let mut end = start + c.len_utf8();
        let mut last = c;
        while let Some(&(at, next)) = chars.peek() {
            if rule_in_context(Some(last), next) != Some(rule) {
                break;
            }
            end = at + next.len_utf8();
            last = next;
            chars.next();
        }
        before = Some(last);
        let context_start = text[..start]
            .char_indices()
            .rev()
            .nth(CONTEXT - 1)
            .map_or(0, |(at, _)| at);
        let context_end = text[end..]
            .char_indices()
            .nth(CONTEXT)
            .map_or(text.len(), |(at, _)| end + at);
        let shown = excerpt(text, context_start..context_end);
        let what = match rule {
            Rule::ZeroWidth => "a zero-width character in".to_owned(),
            Rule::BidiControl => "a bidirectional control character in".to_owned(),
            Rule::FormatCharacter => {
                "an invisible format character (a soft hyphen, variation selector or the like) in"
                    .to_owned()
            }
            Rule::ControlCharacter => "a control character in".to_owned(),
            _ => {
                let hidden: String = text[start..end]
                    .chars()
                    .filter_map(|c| char::from_u32(c as u32 - 0xE0000))
                    .filter(|c| c.is_ascii_graphic() || *c == ' ')
                    .collect();
                if hidden.is_empty() {
                    "Unicode tag characters in".to_owned()
                } else {
                    let spelled = excerpt(&hidden, 0..hidden.len());
                    format!("Unicode tag characters spelling hidden text \"{spelled}\" in")
                }
            }
        };
        out.push(Finding::new(rule, start..end, &what, shown));
    }
}

/// Whether the other rules read `text` through a [`View`]: it holds a character that
/// [`rule_of`] refuses.
pub(crate) fn has_hidden(text: &str) -> bool {
    text.chars().any(|c| rule_of(c).is_some())
}

/// `text` as the other rules read it: every character [`rule_of`] refuses taken out
/// (`joined`, so that `ig\u{AD}nore` reads `ignore`) or replaced by a space (so that
/// `ignore\u{0}previous` reads as two words), with where each byte came from.
pub(crate) struct View {
    pub(crate) text: String,
    /// For each byte of `text`, the start and end of the character of the original it is.
    from: Vec<(usize, usize)>,
    original_len: usize,
}

impl View {
    pub(crate) fn new(original: &str, joined: bool) -> View {
        let mut text = String::with_capacity(original.len());
        let mut from = Vec::with_capacity(original.len());
        for (at, c) in original.char_indices() {
            let end = at + c.len_utf8();
            if rule_of(c).is_some() {
                if !joined {
                    text.push(' ');
                    from.push((at, end));
                }
                continue;
            }
            text.push(c);
            from.extend(std::iter::repeat_n((at, end), c.len_utf8()));
        }
        View {
            text,
            from,
            original_len: original.len(),
        }
    }

    /// The byte range of the original that `range` of the view was read from.
    pub(crate) fn original(&self, range: std::ops::Range<usize>) -> std::ops::Range<usize> {
        let start = self
            .from
            .get(range.start)
            .map_or(self.original_len, |(start, _)| *start);
        if range.is_empty() {
            return start..start;
        }
        let end = range
            .end
            .checked_sub(1)
            .and_then(|last| self.from.get(last))
            .map_or(self.original_len, |(_, end)| *end);
        start..end.max(start)
    }
}
