//! The description lint (`registry-lint`) over every text of a tool that a model reads, at
//! `build()`: its description and title, and the texts of its parameters and output schemas,
//! where the doc comments of parameter and result types (their fields and variants) arrive
//! through `JsonSchema`, which the `#[tool]` macro does not see.

use serde_json::Value;

use crate::declare::error::BuildProblem;
use crate::declare::source::Source;

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

    use super::schema_texts;

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
