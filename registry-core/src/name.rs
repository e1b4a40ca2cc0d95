//! The rule for tool names: one that every consumer (OpenAI, Anthropic, Gemini, MCP) accepts.

/// The longest tool name every consumer accepts.
pub const MAX_NAME_LEN: usize = 64;

/// Checks that `name` is valid for every consumer at once: `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
///
/// `#[tool]` applies this rule at compile time; the registry applies it again to tools built
/// at run time. The error says what is wrong.
///
/// ```
/// use registry_core::check_tool_name;
///
/// assert!(check_tool_name("get_status").is_ok());
/// assert!(check_tool_name("1st").is_err());
/// assert!(check_tool_name("get.status").is_err());
/// ```
pub fn check_tool_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    match chars.next() {
        None => return Err("the tool name is empty".into()),
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        Some(c) => {
            return Err(format!(
                "the tool name {name:?} starts with `{c}`; it must start with an ASCII letter or `_`"
            ));
        }
    }
    if let Some(c) = chars.find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))) {
        return Err(format!(
            "the tool name {name:?} contains `{c}`; use only ASCII letters, digits, `_` and `-`"
        ));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "the tool name {name:?} is {} characters long; providers accept at most {MAX_NAME_LEN}",
            name.len()
        ));
    }
    Ok(())
}
