//! The compatibility checker: the rules of each profile (`docs/providers.md`),
//! applied to exported JSON.
//!
//! It checks what is exported, independently of how it was produced (it shares with the
//! lowering only the facts, each provider's schema rules in its file of `present/provider/`,
//! and the measures of strict mode's limits), so it can run over golden files as well as over
//! a live registry ([`Registry::check`](crate::Registry::check) runs it on every export). The
//! rules:
//!
//! | rule | checked |
//! | --- | --- |
//! | tool object | the consumer's shape: MCP `name`/`inputSchema`; OpenAI Chat `{type: "function", function: {name, parameters}}`; Responses `{type: "function", name, parameters}`; Anthropic `name`/`input_schema`; Gemini `name`, `parameters?`; OpenAI's `strict` flag matches the profile |
//! | tool names | the consumer's pattern (the stricter where sources disagree: 64 characters for Anthropic and Gemini), and the rule every consumer accepts at once, `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`; unique in a list |
//! | root | `type: "object"`; OpenAI strict: not `anyOf`, not nullable |
//! | `$schema` | MCP only |
//! | `$defs` / `$ref` | local (a JSON pointer or an `$anchor`) and resolvable; OpenAI: no sibling keywords beside a `$ref`; Anthropic: not recursive; Gemini: none at all |
//! | closed objects | OpenAI strict (and Anthropic `strict: true`): every object `additionalProperties: false`; Gemini: no `additionalProperties` anywhere |
//! | `required` | OpenAI strict: every property |
//! | nullable | Gemini: `nullable: true`, no type arrays, no `{type: "null"}` branch, no `null` in an `enum`; the others: no `nullable` keyword |
//! | composition | MCP: any; OpenAI: `anyOf` only; Anthropic: `anyOf` and `allOf`; Gemini: `anyOf` only, no `const` |
//! | `format` | OpenAI: date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid; Anthropic: those and uri; Gemini: `enum`/`date-time` on strings, int32/int64/float/double on numbers |
//! | bounds | OpenAI: minimum, maximum, exclusive*, multipleOf, min/maxItems; Gemini: minimum, maximum, min/maxItems, min/maxLength (and only Gemini's schema fields); Anthropic `strict: true`: none |
//! | limits | OpenAI strict: 5000 properties, 10 levels of nested objects, 1000 enum values, 120,000 characters of names and enum values; OpenAI: 128 tools; Gemini: 512 declarations |
//!
//! Each violation is an [`Incompatibility`] whose `pointer` is a JSON pointer into the tool
//! object as exported (for Gemini, into the function declaration), e.g.
//! `/function/parameters/properties/limit/format`; for rules about the whole list (how many
//! tools), the tool is `(tool list)` and the pointer is empty.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::shared::profile::Profile;

use crate::present::provider::{
    Formats, Holder, Keywords, Null, References, Rules, StrictFlag, ToolList,
};
use crate::present::rules::{BOUNDS, COMPOSITION};
pub use crate::shared::profile::{CompatibilityError, Incompatibility};

mod keywords;
mod limits;
mod name;
mod object;
mod references;
mod schema;

use keywords::*;
use name::check_name;
use object::check_object;
use references::resolve;
use schema::{subschemas, types_of};

/// What a tool name must match for every consumer at once.
pub const PORTABLE_NAME: &str = "^[A-Za-z_][A-Za-z0-9_-]{0,63}$";

/// The tool of list-level rules.
const LIST: &str = "(tool list)";

/// Every rule of `profile` that one exported tool object breaks (an element of the list
/// [`Run::export`](crate::Run::export) returns; for Gemini, one function declaration).
#[must_use = "the incompatibilities found are the result"]
pub fn check_tool(profile: Profile, tool: &Value) -> Vec<Incompatibility> {
    let rules = profile.rules();
    let mut report = Report {
        profile,
        rules,
        tool: tool_name(rules, tool).unwrap_or_default().to_owned(),
        found: Vec::new(),
    };
    check_object(&mut report, tool);
    report.found
}

/// Every rule of `profile` that a whole exported tool list breaks: each tool's, and the
/// rules about the list (how many tools, unique names).
#[must_use = "the incompatibilities found are the result"]
pub fn check_tools(profile: Profile, tools: &Value) -> Vec<Incompatibility> {
    let rules = profile.rules();
    let mut report = Report {
        profile,
        rules,
        tool: LIST.to_owned(),
        found: Vec::new(),
    };
    let Value::Array(list) = tools else {
        report.add(
            "",
            "the tool list must be a JSON array",
            "export with `Run::export`",
        );
        return report.found;
    };
    let mut objects: Vec<&Value> = Vec::new();
    match rules.list {
        ToolList::Objects => objects.extend(list),
        ToolList::Grouped { key } => {
            for (index, entry) in list.iter().enumerate() {
                match entry.get(key) {
                    Some(Value::Array(declarations)) => objects.extend(declarations),
                    _ => report.add(
                        &format!("/{index}"),
                        format!(
                            "{}: each `Tool` of the list holds `{key}`, an array",
                            rules.consumer
                        ),
                        format!("put the function declarations in `{{\"{key}\": [...]}}`"),
                    ),
                }
            }
        }
    }
    if let Some(limit) = rules.max_tools
        && objects.len() > limit
    {
        report.add(
            "",
            format!(
                "{}: at most {limit} tools in a request; this list has {}",
                rules.consumer,
                objects.len()
            ),
            "show each run fewer tools (scopes, an access policy), or split the agent",
        );
    }
    let mut seen = BTreeSet::new();
    let mut found = report.found;
    for object in objects {
        let name = tool_name(rules, object);
        if let Some(name) = name
            && !seen.insert(name)
        {
            found.push(Incompatibility {
                profile,
                tool: name.to_owned(),
                pointer: format!("{}/name", rules.tool.holder.pointer()),
                rule: format!("{}: tool names must be unique in a list", rules.consumer),
                fix: "give each tool its own name".into(),
            });
        }
        found.extend(check_tool(profile, object));
    }
    found
}

/// The tool's name, wherever the profile puts it.
fn tool_name<'v>(rules: &Rules, tool: &'v Value) -> Option<&'v str> {
    let holder = match rules.tool.holder {
        Holder::Tool => tool,
        Holder::Member { key, .. } => tool.get(key)?,
    };
    holder.get("name")?.as_str()
}

/// The incompatibilities found for one tool.
struct Report {
    profile: Profile,
    /// What the profile takes.
    rules: &'static Rules,
    tool: String,
    found: Vec<Incompatibility>,
}

impl Report {
    fn add(&mut self, pointer: &str, rule: impl Into<String>, fix: impl Into<String>) {
        self.found.push(Incompatibility {
            profile: self.profile,
            tool: self.tool.clone(),
            pointer: pointer.to_owned(),
            rule: rule.into(),
            fix: fix.into(),
        });
    }
}

/// Checks one tool's arguments schema.
struct Checker<'r, 'v> {
    report: &'r mut Report,
    root: &'v Value,
    /// Where the schema is in the tool object.
    base: String,
    /// What the profile takes.
    rules: &'static Rules,
    /// The tool said `strict: true` where the flag is optional (Anthropic): every object is
    /// closed and no bound is taken.
    flagged_strict: bool,
    recursive: BTreeSet<String>,
}
