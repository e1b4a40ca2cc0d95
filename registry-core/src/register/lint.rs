//! The description lint (`registry-lint`) over every text of a tool that a model reads, at
//! `build()`: its description and title, and the texts of its parameters and output schemas,
//! where the doc comments of parameter and result types (their fields and variants) arrive
//! through `JsonSchema`, which the `#[tool]` macro does not see.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::declare::error::BuildProblem;
use crate::declare::source::Source;
use crate::execute::tool::Tool;

/// The texts of a tool that a model reads.
pub(crate) struct Texts<'a> {
    pub(crate) description: &'a str,
    pub(crate) title: Option<&'a str>,
    pub(crate) parameters: &'a Value,
    pub(crate) output_schema: Option<&'a Value>,
}

/// The keys of a schema whose string values a model reads as text.
const TEXT_KEYS: &[&str] = &["description", "title", "$comment"];

/// The keys of a schema whose whole value (every string in it, and every key of an object in
/// it) a model reads: values the arguments may or should take.
const VALUE_KEYS: &[&str] = &["enum", "const", "default", "examples"];

impl Texts<'_> {
    /// Runs the description lint on each text: the description, the title, and in each
    /// schema every `description`, `title` and `$comment`, every string of an `enum`, `const`,
    /// `default` or `examples`, and every property name. Each finding is a problem naming the
    /// tool and, for a schema, the JSON pointer of the text in it. With `allowed`
    /// (`allow_description` given a reason), only the secret rules apply: a secret is never
    /// meant to be shown.
    pub(crate) fn lint(
        &self,
        tool: &str,
        site: Source,
        allowed: bool,
        problems: &mut Vec<BuildProblem>,
    ) {
        let lint = Lint {
            tool,
            site,
            allowed,
        };
        lint.text("description", None, self.description, problems);
        if let Some(title) = self.title {
            lint.text("title", None, title, problems);
        }
        lint.schema("parameters schema", self.parameters, problems);
        if let Some(output) = self.output_schema {
            lint.schema("output schema", output, problems);
        }
    }
}

/// The description lint of one tool's texts, one by one (see [`Texts::lint`]).
#[derive(Clone, Copy)]
pub(crate) struct Lint<'a> {
    pub(crate) tool: &'a str,
    pub(crate) site: Source,
    /// `allow_description` given a reason: only the secret rules apply.
    pub(crate) allowed: bool,
}

impl Lint<'_> {
    /// Lints `text`, the tool's `field` (at `pointer` in it, for a schema).
    pub(crate) fn text(
        self,
        field: &str,
        pointer: Option<&str>,
        text: &str,
        problems: &mut Vec<BuildProblem>,
    ) {
        for finding in registry_lint::check(text) {
            if self.allowed && finding.rule.family() != registry_lint::Family::Secret {
                continue;
            }
            problems.push(BuildProblem::UnsafeDescription {
                tool: self.tool.to_owned(),
                site: self.site,
                field: field.to_owned(),
                pointer: pointer.map(str::to_owned),
                rule: finding.rule.id(),
                excerpt: finding.excerpt.clone(),
                finding: finding.to_string(),
            });
        }
    }

    /// Lints every text of `schema`, the tool's `field` (`parameters schema` or `output
    /// schema`).
    pub(crate) fn schema(self, field: &str, schema: &Value, problems: &mut Vec<BuildProblem>) {
        schema_texts(schema, &mut String::new(), &mut |pointer, text| {
            self.text(field, Some(pointer), text, problems);
        });
    }
}

/// The tenant-data rule, over every tool of a registry: a tenant that some tool names in its
/// `tenants` may appear (as a word, case-insensitively) in the texts of a tool, its name
/// included, only when that tool is restricted to that tenant alone; anywhere else the
/// subjects of other tenants would read it. Each finding is a
/// [`BuildProblem::TenantInText`]. A tool with `allow_description` is not checked: its
/// reason, in the lock file, says why its texts may be shown.
pub(crate) fn tenant_data<'a>(
    tools: impl Iterator<Item = &'a Tool> + Clone,
    problems: &mut Vec<BuildProblem>,
) {
    let tenants = TenantWords::new(
        tools
            .clone()
            .flat_map(|tool| tool.settings().tenants.iter()),
    );
    if tenants.by_lowered.is_empty() {
        return;
    }
    for tool in tools {
        let settings = tool.settings();
        if settings.allow_description.is_some() {
            continue;
        }
        let mut found = |field: &str, pointer: Option<&str>, text: &str| {
            for tenant in tenants.in_text(text) {
                let alone = !settings.tenants.is_empty()
                    && settings.tenants.iter().all(|own| own == tenant);
                if alone {
                    continue;
                }
                let problem = BuildProblem::TenantInText {
                    tool: tool.name().to_owned(),
                    site: tool.source(),
                    field: field.to_owned(),
                    pointer: pointer.map(str::to_owned),
                    tenant: tenant.to_owned(),
                };
                if !problems.contains(&problem) {
                    problems.push(problem);
                }
            }
        };
        let definition = tool.definition_ref();
        found("name", None, &definition.name);
        found("description", None, &definition.description);
        if let Some(title) = &definition.title {
            found("title", None, title);
        }
        schema_texts(
            &definition.parameters,
            &mut String::new(),
            &mut |pointer, text| {
                found("parameters schema", Some(pointer), text);
            },
        );
        if let Some(output) = tool.output_schema() {
            schema_texts(output, &mut String::new(), &mut |pointer, text| {
                found("output schema", Some(pointer), text);
            });
        }
    }
}

/// The opt-in rule of [`RegistryBuilder::require_documented_parameters`](crate::RegistryBuilder::require_documented_parameters):
/// every parameter of `tool`, and every field of its parameters schema, nested objects,
/// array items and `$ref`s followed, has a description. One
/// [`BuildProblem::UndocumentedParameters`] lists every path that has none.
pub(crate) fn documented_parameters(tool: &Tool, problems: &mut Vec<BuildProblem>) {
    let schema = &tool.definition_ref().parameters;
    let mut paths = Vec::new();
    undocumented(schema, schema, "", &mut Vec::new(), &mut paths);
    // Sorted, so that the problem reads the same whatever order the schema's keys are in.
    paths.sort_unstable();
    paths.dedup();
    if !paths.is_empty() {
        problems.push(BuildProblem::UndocumentedParameters {
            tool: tool.name().to_owned(),
            site: tool.source(),
            paths,
        });
    }
}

/// Adds to `found` the path of every property under `schema` (at `path`) with no
/// description; `refs` are the `$ref`s being followed, so that a recursive type ends.
fn undocumented<'a>(
    root: &'a Value,
    schema: &'a Value,
    path: &str,
    refs: &mut Vec<&'a str>,
    found: &mut Vec<String>,
) {
    if let Some(target) = reference(root, schema, refs) {
        undocumented(root, target, path, refs, found);
        refs.pop();
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let path = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            if !described(root, property) {
                found.push(path.clone());
            }
            undocumented(root, property, &path, refs, found);
        }
    }
    if let Some(items) = schema.get("items") {
        undocumented(root, items, &format!("{path}[]"), refs, found);
    }
    if let Some(values) = schema.get("additionalProperties") {
        undocumented(root, values, &format!("{path}.*"), refs, found);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for variant in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            undocumented(root, variant, path, refs, found);
        }
    }
}

/// The schema `schema`'s same-document `$ref` points at, pushed on `refs`, unless it is
/// being followed already (a recursive type) or points at nothing.
fn reference<'a>(root: &'a Value, schema: &'a Value, refs: &mut Vec<&'a str>) -> Option<&'a Value> {
    let name = schema.get("$ref")?.as_str()?;
    if refs.contains(&name) {
        return None;
    }
    let target = root.pointer(name.strip_prefix('#')?)?;
    refs.push(name);
    Some(target)
}

/// Whether a property's schema, or the schema its `$ref` points at, has a description that
/// is not blank.
fn described(root: &Value, property: &Value) -> bool {
    let target = property
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|name| root.pointer(name.strip_prefix('#')?));
    has_description(property) || target.is_some_and(has_description)
}

fn has_description(schema: &Value) -> bool {
    schema
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|text| !text.trim().is_empty())
}

/// The tenants of a registry, to find in a text as words.
struct TenantWords<'a> {
    /// Each tenant lowercased, and how the tools spell it (tenants are compared exactly, so
    /// `Acme` and `acme` are two).
    by_lowered: HashMap<String, BTreeSet<&'a str>>,
    /// The length of the longest, in bytes.
    longest: usize,
}

impl<'a> TenantWords<'a> {
    fn new(tenants: impl Iterator<Item = &'a String>) -> Self {
        let mut by_lowered: HashMap<String, BTreeSet<&'a str>> = HashMap::new();
        for tenant in tenants.filter(|tenant| !tenant.is_empty()) {
            by_lowered
                .entry(tenant.to_lowercase())
                .or_default()
                .insert(tenant);
        }
        let longest = by_lowered.keys().map(String::len).max().unwrap_or(0);
        TenantWords {
            by_lowered,
            longest,
        }
    }

    /// The tenants `text` names as words, in any case: each found where neither the
    /// character before nor the one after is a letter or digit (`_` separates words, as in a
    /// snake_case name). Every place a word may start is tried against every place within
    /// the longest tenant where one may end, so the cost is the text's length times that,
    /// whatever the number of tenants.
    fn in_text(&self, text: &str) -> BTreeSet<&'a str> {
        let text = text.to_lowercase();
        let mut found = BTreeSet::new();
        let mut previous: Option<char> = None;
        for (start, first) in text.char_indices() {
            let starts_word = !previous.is_some_and(char::is_alphanumeric);
            previous = Some(first);
            if !starts_word {
                continue;
            }
            let rest = &text[start..];
            let ends = rest.char_indices().skip(1).map(|(end, c)| (end, Some(c)));
            for (end, next) in ends.chain([(rest.len(), None)]) {
                if end > self.longest {
                    break;
                }
                if next.is_some_and(char::is_alphanumeric) {
                    continue;
                }
                if let Some(spellings) = self.by_lowered.get(&rest[..end]) {
                    found.extend(spellings.iter().copied());
                }
            }
        }
        found
    }
}

/// Appends the JSON pointer segment of `key` to `pointer`.
fn push_token(pointer: &mut String, key: &str) {
    pointer.push('/');
    pointer.push_str(&crate::pointer::escape(key));
}

/// Calls `found(pointer, text)` for every text of `schema` a model reads (see
/// [`Texts::lint`]), `pointer` being the JSON pointer of the text: of the string, or of the
/// property a name is the key of.
fn schema_texts(schema: &Value, pointer: &mut String, found: &mut dyn FnMut(&str, &str)) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                let len = pointer.len();
                push_token(pointer, key);
                match (key.as_str(), value) {
                    (key, Value::String(text)) if TEXT_KEYS.contains(&key) => found(pointer, text),
                    (key, value) if VALUE_KEYS.contains(&key) => value_texts(value, pointer, found),
                    ("properties", Value::Object(properties)) => {
                        for (name, property) in properties {
                            let len = pointer.len();
                            push_token(pointer, name);
                            found(pointer, name);
                            schema_texts(property, pointer, found);
                            pointer.truncate(len);
                        }
                    }
                    (_, value) => schema_texts(value, pointer, found),
                }
                pointer.truncate(len);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let len = pointer.len();
                push_token(pointer, &index.to_string());
                schema_texts(item, pointer, found);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

/// Calls `found(pointer, text)` for every string in `value` and every key of an object in
/// it (the key's pointer being that of its value).
fn value_texts(value: &Value, pointer: &mut String, found: &mut dyn FnMut(&str, &str)) {
    match value {
        Value::String(text) => found(pointer, text),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let len = pointer.len();
                push_token(pointer, &index.to_string());
                value_texts(item, pointer, found);
                pointer.truncate(len);
            }
        }
        Value::Object(object) => {
            for (key, item) in object {
                let len = pointer.len();
                push_token(pointer, key);
                found(pointer, key);
                value_texts(item, pointer, found);
                pointer.truncate(len);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{TenantWords, schema_texts};

    #[test]
    fn a_tenant_is_found_as_a_word_only() {
        let tenants = [
            "acme".to_owned(),
            "tenant-b".to_owned(),
            "Globex".to_owned(),
        ];
        let words = TenantWords::new(tenants.iter());
        let found = |text: &str| words.in_text(text).into_iter().collect::<Vec<_>>();
        for text in [
            "acme",
            "for ACME.",
            "acme_report",
            "(acme)",
            "globex/acme-eu",
        ] {
            assert!(found(text).contains(&"acme"), "{text}");
        }
        for text in ["acmes", "pacme", "acme2", "", "ac me", "é-acmeé"] {
            assert_eq!(found(text), Vec::<&str>::new(), "{text}");
        }
        assert_eq!(found("ask tenant-b first"), ["tenant-b"]);
        assert_eq!(found("ask tenant-bc first, or tenant-"), Vec::<&str>::new());
        assert_eq!(found("globex and acme"), ["Globex", "acme"]);
    }

    #[test]
    fn every_text_a_model_reads_is_found_with_its_pointer() {
        let schema = json!({
            "type": "object",
            "description": "root",
            "$comment": "comment",
            "properties": {
                "a/b~c": {"type": "string", "title": "t", "enum": ["x", "y"]},
                "mode": {"const": "fast", "default": {"k": "v"}, "examples": [["e"]]},
                "description": {"type": "string", "pattern": "^not text$"}
            },
            "required": ["mode"],
            "$defs": {"D": {"oneOf": [{"const": "c", "description": "d"}]}}
        });
        let mut found = Vec::new();
        schema_texts(&schema, &mut String::new(), &mut |pointer, text| {
            found.push(format!("{pointer}={text}"));
        });
        found.sort();
        assert_eq!(
            found,
            [
                "/$comment=comment",
                "/$defs/D/oneOf/0/const=c",
                "/$defs/D/oneOf/0/description=d",
                "/description=root",
                "/properties/a~1b~0c/enum/0=x",
                "/properties/a~1b~0c/enum/1=y",
                "/properties/a~1b~0c/title=t",
                "/properties/a~1b~0c=a/b~c",
                "/properties/description=description",
                "/properties/mode/const=fast",
                "/properties/mode/default/k=k",
                "/properties/mode/default/k=v",
                "/properties/mode/examples/0/0=e",
                "/properties/mode=mode",
            ]
        );
    }
}
