//! Pinned definitions: the lock text of a registry ([`Registry::lock`](crate::Registry::lock)),
//! the digests it pins, and the check of a lock file against it
//! ([`Registry::assert_lockfile`](crate::Registry::assert_lockfile)).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::execute::tool::Tool;
use crate::present::digest::digest_of;
use crate::shared::profile::{Incompatibility, Profile};
use crate::shared::rate_limit::RateLimit;

/// The environment variable that makes [`Registry::assert_lockfile`](crate::Registry::assert_lockfile)
/// rewrite the lock file instead of checking it, when set to [`LOCK_OVERWRITE`].
pub(crate) const LOCK_ENV: &str = "REGISTRY_LOCK";

/// The value of [`LOCK_ENV`] that rewrites the lock file.
pub(crate) const LOCK_OVERWRITE: &str = "overwrite";

/// The first lines of every lock text.
const HEADER: &str = "\
# Tool definitions pinned by registry_core::Registry::lock (format 2); review every change.
# Digests: SHA-256 of each tool as each profile exports it (keys sorted, compact, no _meta).
# Rewrite: REGISTRY_LOCK=overwrite cargo test; then review the diff before committing it.
";

/// Written where a tool has no scopes, no hints or no gate flags.
const NONE: &str = "(none)";

/// The lock text of `tools`; `default_rate_limit` is the registry's limit for tools without
/// their own.
pub(crate) fn lock_text<'a>(
    tools: impl Iterator<Item = &'a Tool>,
    default_rate_limit: Option<RateLimit>,
) -> String {
    let mut tools: Vec<&Tool> = tools.collect();
    tools.sort_by(|a, b| a.name().cmp(b.name()));
    let mut text = String::from(HEADER);
    for tool in tools {
        text.push('\n');
        tool_block(&mut text, tool, default_rate_limit);
    }
    text
}

/// One tool's block: its name, then one line per fact.
fn tool_block(text: &mut String, tool: &Tool, default_rate_limit: Option<RateLimit>) {
    let policy = tool.settings();
    let _ = writeln!(text, "[{}]", tool.name());

    let scopes: BTreeSet<&str> = policy.scopes.iter().map(|scope| scope.as_str()).collect();
    let _ = writeln!(
        text,
        "scopes = {}",
        list(scopes.into_iter().map(str::to_owned))
    );

    let tenants: BTreeSet<&str> = policy.tenants.iter().map(String::as_str).collect();
    let tenants = if tenants.is_empty() {
        "*".to_owned()
    } else {
        list(tenants.into_iter().map(word))
    };
    let _ = writeln!(text, "tenants = {tenants}");
    // Visible to every subject of every tenant, on purpose (`#[tool(public)]`).
    let _ = writeln!(text, "public = {}", policy.is_public());

    let hints = policy.hints;
    let hints = [
        (hints.read_only, "read_only"),
        (hints.destructive, "destructive"),
        (hints.idempotent, "idempotent"),
        (hints.open_world, "open_world"),
    ];
    let hints = hints
        .iter()
        .filter(|(set, _)| *set)
        .map(|(_, name)| (*name).to_owned());
    let _ = writeln!(text, "hints = {}", list(hints));
    // Only a tool that declares attributes has the line, so that the lockfile of a registry
    // without any reads as it did.
    for (key, values) in &policy.attributes {
        let _ = writeln!(
            text,
            "attribute.{key} = {}",
            list(values.iter().map(|value| word(value)))
        );
    }

    // The reason a tool's texts are exempt from the description lint and the tenant-data
    // rule, so that an exemption shows in review. Only a tool with one has the line: a lock
    // file without it reads as before, as no exemption.
    if let Some(reason) = &policy.allow_description {
        // A string always serializes; as JSON, on one line.
        let reason = serde_json::to_string(reason).unwrap_or_default();
        let _ = writeln!(text, "allow_description = {reason}");
    }

    let mut gate = Vec::new();
    if policy.needs_approval {
        gate.push("needs_approval".to_owned());
    }
    match (policy.rate_limit, default_rate_limit) {
        (Some(limit), _) => gate.push(format!("rate_limit {limit}")),
        (None, Some(limit)) => gate.push(format!("rate_limit {limit} (registry default)")),
        (None, None) => {}
    }
    let _ = writeln!(text, "gate = {}", list(gate.into_iter()));

    let definition = definition_digest(tool.definition_ref(), tool.output_schema());
    let _ = writeln!(text, "definition = {definition}");
    for &profile in Profile::ALL {
        match tool.digest(profile) {
            Ok(digest) => {
                let _ = writeln!(text, "{profile} = {digest}");
            }
            Err(error) => {
                let _ = writeln!(text, "{profile} = {}", unsupported(&error.0));
            }
        }
    }
}

/// The `definition` line's digest of the provider-neutral definition (name, title,
/// description, the canonical parameters schema) and its output schema.
pub(crate) fn definition_digest(
    definition: &crate::declare::definition::ToolDefinition,
    output_schema: Option<&Value>,
) -> String {
    // A definition is strings and JSON values: it always serializes.
    let mut value = serde_json::to_value(definition).unwrap_or_default();
    if let (Value::Object(object), Some(output)) = (&mut value, output_schema) {
        object.insert("outputSchema".into(), output.clone());
    }
    digest_of(&value)
}

/// The line of a profile that cannot express a tool: every problem, on one line.
fn unsupported(problems: &[Incompatibility]) -> String {
    let mut text = String::from("unsupported:");
    for (index, problem) in problems.iter().enumerate() {
        text.push_str(if index == 0 { " " } else { "; " });
        let pointer = if problem.pointer.is_empty() {
            "/"
        } else {
            &problem.pointer
        };
        let _ = write!(text, "{pointer}: {}", problem.rule);
    }
    one_line(&text)
}

/// `items` separated by `, `, or `(none)`.
fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        NONE.to_owned()
    } else {
        items.join(", ")
    }
}

/// A tenant as written in a list: bare when that is unambiguous, else a JSON string.
fn word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '@' | '-');
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        // A string always serializes.
        serde_json::to_string(text).unwrap_or_default()
    }
}

/// `text` with line breaks and tabs as spaces.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Checks the lock file at `path` against `current` (the registry's lock text), or rewrites
/// it when [`LOCK_ENV`] says so. `Err` is the panic message.
pub(crate) fn check_file(path: &Path, current: &str) -> Result<(), String> {
    let setting = std::env::var(LOCK_ENV).ok();
    let overwrite = setting.as_deref() == Some(LOCK_OVERWRITE);
    let shown = path.display();
    let located = located(path);
    let ignored = match setting.as_deref() {
        Some(value) if value != LOCK_OVERWRITE => format!(
            "\n({LOCK_ENV} is set to {value:?}, which does nothing: only {LOCK_ENV}={LOCK_OVERWRITE} rewrites the file)"
        ),
        _ => String::new(),
    };
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => {
            return Err(format!(
                "{shown}: the lock file cannot be read ({}): {error}",
                located.display()
            ));
        }
    };
    if overwrite {
        if existing.as_deref() == Some(current) {
            return Ok(());
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|error| format!("{shown}: cannot create {}: {error}", parent.display()))?;
        }
        std::fs::write(path, current).map_err(|error| {
            format!(
                "{shown}: the lock file cannot be written ({}): {error}",
                located.display()
            )
        })?;
        eprintln!(
            "{shown}: written by {LOCK_ENV}={LOCK_OVERWRITE}; review it before committing it"
        );
        return Ok(());
    }
    let Some(existing) = existing else {
        return Err(format!(
            "{shown}: there is no lock file (looked for {}).\n\
             Create it: run this test with {LOCK_ENV}={LOCK_OVERWRITE} (e.g. `{LOCK_ENV}={LOCK_OVERWRITE} cargo test`), \
             review the file, and commit it.{ignored}",
            located.display()
        ));
    };
    // Line by line: a file checked out with CRLF line ends still matches.
    if existing.lines().eq(current.lines()) {
        return Ok(());
    }
    Err(format!(
        "{shown}: the registry's tools differ from the lock file{}.\n{}\n\
         Review every change: a changed description, schema, scope, tenant or gate flag is \
         what models and the gate will see from now on (a tool rug pull or a poisoned \
         description looks exactly like this).\n\
         If every change is intended, rewrite the file with {LOCK_ENV}={LOCK_OVERWRITE} \
         (e.g. `{LOCK_ENV}={LOCK_OVERWRITE} cargo test`) and commit it.{ignored}",
        if located == path {
            String::new()
        } else {
            format!(" ({})", located.display())
        },
        diff(&existing, current)
    ))
}

/// Where `path` is, for messages: absolute, through its directory's real path when there is
/// one (so without `..`).
fn located(path: &Path) -> std::path::PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    match (absolute.parent(), absolute.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map(|parent| parent.join(name))
            .unwrap_or(absolute),
        _ => absolute,
    }
}

/// A lock text split into its header (the lines before the first tool) and its tools' blocks,
/// blank lines left out.
struct Blocks<'a> {
    header: Vec<&'a str>,
    tools: Vec<(&'a str, Vec<&'a str>)>,
}

fn blocks(text: &str) -> Blocks<'_> {
    let mut parsed = Blocks {
        header: Vec::new(),
        tools: Vec::new(),
    };
    for line in text.lines().map(str::trim_end) {
        if line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            parsed.tools.push((name, Vec::new()));
        } else if let Some((_, lines)) = parsed.tools.last_mut() {
            lines.push(line);
        } else {
            parsed.header.push(line);
        }
    }
    parsed
}

/// What differs between the lock file (`-`) and the registry (`+`), tool by tool.
fn diff(file: &str, current: &str) -> String {
    let old = blocks(file);
    let new = blocks(current);
    let mut out = String::new();
    let (mut changed, mut added, mut removed) = (0, 0, 0);
    if old.header != new.header {
        out.push_str("\nheader:\n");
        lines_diff(&mut out, &old.header, &new.header);
    }
    let names: BTreeSet<&str> = old
        .tools
        .iter()
        .chain(&new.tools)
        .map(|(name, _)| *name)
        .collect();
    for name in names {
        let before = lines_of(&old.tools, name);
        let after = lines_of(&new.tools, name);
        match (before, after) {
            (Some(before), Some(after)) => {
                if before != after {
                    changed += 1;
                    let _ = writeln!(out, "\n[{name}] changed:");
                    lines_diff(&mut out, before, after);
                }
            }
            (None, Some(after)) => {
                added += 1;
                let _ = writeln!(out, "\n[{name}] added:");
                for line in after {
                    let _ = writeln!(out, "  + {line}");
                }
            }
            (Some(before), None) => {
                removed += 1;
                let _ = writeln!(out, "\n[{name}] removed:");
                for line in before {
                    let _ = writeln!(out, "  - {line}");
                }
            }
            (None, None) => {}
        }
    }
    let duplicates = |blocks: &Blocks<'_>| {
        let unique: BTreeSet<&str> = blocks.tools.iter().map(|(name, _)| *name).collect();
        unique.len() != blocks.tools.len()
    };
    if duplicates(&old) {
        out.push_str("\nthe lock file names a tool more than once\n");
    }
    let summary = format!(
        "{changed} tool{} changed, {added} added, {removed} removed; - is the file, + the registry",
        if changed == 1 { "" } else { "s" }
    );
    if out.is_empty() {
        return format!("{summary}\nthe lines differ only in blank lines or trailing spaces\n");
    }
    format!("{summary}\n{out}")
}

/// The lines of the block of the tool named `name`.
fn lines_of<'a, 'b>(tools: &'b [(&'a str, Vec<&'a str>)], name: &str) -> Option<&'b [&'a str]> {
    tools
        .iter()
        .find(|(tool, _)| *tool == name)
        .map(|(_, lines)| lines.as_slice())
}

/// The key of a `key = value` line (the whole line if it has no ` = `).
fn key(line: &str) -> &str {
    line.split_once(" = ").map_or(line, |(key, _)| key)
}

/// The lines that differ between `before` and `after`, matched by key: a changed value is
/// its old line (`-`) followed by its new one (`+`).
fn lines_diff(out: &mut String, before: &[&str], after: &[&str]) {
    let mut done = vec![false; after.len()];
    for line in before {
        match after.iter().position(|other| key(other) == key(line)) {
            Some(index) => {
                done[index] = true;
                if after[index] != *line {
                    let _ = writeln!(out, "  - {line}");
                    let _ = writeln!(out, "  + {}", after[index]);
                }
            }
            None => {
                let _ = writeln!(out, "  - {line}");
            }
        }
    }
    for (line, done) in after.iter().zip(done) {
        if !done {
            let _ = writeln!(out, "  + {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_names_each_tool_and_each_line() {
        let file = "# h\n\n[a]\nx = 1\ny = 2\n\n[b]\nx = 1\n";
        let now = "# h\n\n[a]\nx = 1\ny = 3\nz = 4\n\n[c]\nx = 1\n";
        assert_eq!(
            diff(file, now),
            "1 tool changed, 1 added, 1 removed; - is the file, + the registry\n\
             \n[a] changed:\n  - y = 2\n  + y = 3\n  + z = 4\n\
             \n[b] removed:\n  - x = 1\n\
             \n[c] added:\n  + x = 1\n"
        );
    }

    #[test]
    fn tenants_that_could_be_misread_are_quoted() {
        assert_eq!(word("acme"), "acme");
        assert_eq!(word("*"), "\"*\"");
        assert_eq!(word("a, b"), "\"a, b\"");
        assert_eq!(word(""), "\"\"");
    }
}
