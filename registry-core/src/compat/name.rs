//! Tool names: the consumer's pattern, and the rule every consumer accepts.

use super::*;

/// The consumer's rule for names, then the rule every consumer accepts at once.
pub(super) fn check_name(report: &mut Report, name: Option<&Value>, pointer: &str) {
    let Some(Value::String(name)) = name else {
        report.add(
            pointer,
            format!("{}: a tool has a `name`, a string", report.rules.consumer),
            "name the tool",
        );
        return;
    };
    let names = &report.rules.names;
    if !names.allows(name) {
        report.add(
            pointer,
            format!("{}; {name:?} does not", names.rule),
            "rename the tool",
        );
        return;
    }
    let portable = name.chars().count() <= 64
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
