//! Characters that are invisible or reorder text: what a model reads is then not what a
//! reviewer sees.

use crate::text::excerpt;
use crate::{Finding, Rule};

/// The rule that refuses `c`, if any.
pub(crate) fn rule_of(c: char) -> Option<Rule> {
    match c {
        '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' => Some(Rule::ZeroWidth),
        '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{061C}' => Some(Rule::BidiControl),
        '\u{E0000}'..='\u{E007F}' => Some(Rule::TagCharacter),
        _ => None,
    }
}

/// Characters shown on either side of a run of invisible characters.
const CONTEXT: usize = 12;

/// One finding per run of characters of the same rule, with some text around it to find it
/// by; tag characters also say the ASCII text they spell.
pub(crate) fn check(text: &str, out: &mut Vec<Finding>) {
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let Some(rule) = rule_of(c) else { continue };
        let mut end = start + c.len_utf8();
        while let Some(&(at, next)) = chars.peek() {
            if rule_of(next) != Some(rule) {
                break;
            }
            end = at + next.len_utf8();
            chars.next();
        }
        let before = text[..start]
            .char_indices()
            .rev()
            .nth(CONTEXT - 1)
            .map_or(0, |(at, _)| at);
        let after = text[end..]
            .char_indices()
            .nth(CONTEXT)
            .map_or(text.len(), |(at, _)| end + at);
        let shown = excerpt(text, before..after);
        let what = match rule {
            Rule::ZeroWidth => "a zero-width character in".to_owned(),
            Rule::BidiControl => "a bidirectional control character in".to_owned(),
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
