//! Tool names: the consumer's pattern, and the rule every consumer accepts.

use super::*;

/// The consumer's rule for names, then the rule every consumer accepts at once.
pub(super) fn check_name(report: &mut Report, name: Option<&Value>, pointer: &str) {
    let profile = report.profile;
    let Some(Value::String(name)) = name else {
        report.add(
            pointer,
            format!("{}: a tool has a `name`, a string", profile.consumer()),
            "name the tool",
        );
        return;
    };
    let length = name.chars().count();
    let (rule, valid) = match profile {
        Profile::OpenAiChat { .. } | Profile::OpenAiResponses { .. } => (
            "OpenAI: tool names match `^[a-zA-Z0-9_-]{1,64}$`",
            (1..=64).contains(&length)
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c)),
        ),
        Profile::Anthropic => (
            "Anthropic: tool names match `^[a-zA-Z0-9_-]{1,64}$` (128 in the API, 64 in several \
             clients such as Claude Desktop)",
            (1..=64).contains(&length)
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c)),
        ),
        Profile::Gemini => (
            "Gemini: tool names start with a letter or `_`, then letters, digits, `_ . : -`, at \
             most 64 characters (128 in newer documentation)",
            (1..=64).contains(&length)
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c)),
        ),
        Profile::Mcp => (
            "MCP: tool names are 1 to 128 of `A-Za-z0-9_-.`",
            (1..=128).contains(&length)
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)),
        ),
    };
    if !valid {
        report.add(
            pointer,
            format!("{rule}; {name:?} does not"),
            "rename the tool",
        );
        return;
    }
    let portable = length <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c));
    if !portable {
        report.add(
            pointer,
            format!(
                "tool names must be valid for every consumer at once (`{PORTABLE_NAME}`); \
                 {name:?} is not"
            ),
            "rename the tool",
        );
    }
}
