//! Walking an arguments schema: the root's rules, then every subschema.

use super::*;

impl Checker<'_, '_> {
    pub(super) fn add(&mut self, pointer: &str, rule: impl Into<String>, fix: impl Into<String>) {
        let pointer = format!("{}{pointer}", self.base);
        self.report.add(&pointer, rule, fix);
    }

    /// The consumer's name as the rules say it.
    pub(super) fn who(&self) -> &'static str {
        self.rules.consumer
    }

    /// Whether the profile is in strict mode.
    pub(super) fn strict(&self) -> bool {
        self.rules.strict.is_some()
    }

    pub(super) fn check_root(&mut self) {
        let root = self.root;
        if root.get("type") != Some(&Value::from("object")) {
            let rule = if self.strict() {
                format!(
                    "{}: the root is `type: \"object\"`, not `anyOf` nor nullable",
                    self.who()
                )
            } else {
                format!(
                    "{}: the root of a tool's schema is `type: \"object\"`",
                    self.who()
                )
            };
            self.add(
                "",
                rule,
                "take the arguments as an object of named parameters",
            );
        } else if self.strict() && (root.get("anyOf").is_some() || root.get("oneOf").is_some()) {
            self.add(
                "",
                format!("{}: the root is not `anyOf`", self.who()),
                "take the arguments as an object of named parameters",
            );
        }
        if root.get("$schema").is_some() && !self.rules.dollar_schema {
            // A consumer with a fixed set of fields rejects any other.
            let rule = if matches!(self.rules.keywords, Keywords::Fields { .. }) {
                format!("{} rejects `$schema`", self.who())
            } else {
                format!("{}: `$schema` must be dropped", self.who())
            };
            self.add("/$schema", rule, "drop `$schema`");
        }
    }

    /// Checks `schema` at `pointer` (relative to the schema root) and everything inside.
    pub(super) fn walk(&mut self, schema: &Value, pointer: &str) {
        let object = match schema {
            Value::Object(object) => object,
            Value::Bool(_) => {
                if !self.rules.boolean_schemas {
                    self.add(
                        pointer,
                        format!(
                            "{}: a schema is an object, not `true` or `false`",
                            self.who()
                        ),
                        "give the value a type",
                    );
                }
                return;
            }
            _ => {
                self.add(pointer, "a schema is a JSON object", "fix the schema");
                return;
            }
        };
        self.keywords(object, pointer);
        for (keyword, value) in object {
            let at = format!("{pointer}/{}", crate::pointer::escape(keyword));
            if SCHEMA_MAPS.contains(&keyword.as_str()) {
                if let Value::Object(map) = value {
                    for (name, inner) in map {
                        self.walk(inner, &format!("{at}/{}", crate::pointer::escape(name)));
                    }
                }
            } else if SCHEMA_LISTS.contains(&keyword.as_str()) {
                if let Value::Array(list) = value {
                    for (index, inner) in list.iter().enumerate() {
                        self.walk(inner, &format!("{at}/{index}"));
                    }
                }
            } else if SCHEMA_SINGLES.contains(&keyword.as_str()) && value.is_object() {
                self.walk(value, &at);
            }
        }
    }
}

/// The schema's types.
pub(super) fn types_of(object: &Map<String, Value>) -> Vec<String> {
    match object.get("type") {
        Some(Value::String(single)) => vec![single.to_lowercase()],
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_lowercase)
            .collect(),
        _ => Vec::new(),
    }
}

/// The schemas directly inside a schema, each with its pointer tokens.
pub(super) fn subschemas(object: &Map<String, Value>) -> Vec<(String, &Value)> {
    let mut found = Vec::new();
    for (keyword, value) in object {
        let at = format!("/{}", crate::pointer::escape(keyword));
        if SCHEMA_MAPS.contains(&keyword.as_str()) {
            if let Value::Object(map) = value {
                found.extend(map.iter().map(|(name, inner)| {
                    (format!("{at}/{}", crate::pointer::escape(name)), inner)
                }));
            }
        } else if SCHEMA_LISTS.contains(&keyword.as_str()) {
            if let Value::Array(list) = value {
                found.extend(
                    list.iter()
                        .enumerate()
                        .map(|(index, inner)| (format!("{at}/{index}"), inner)),
                );
            }
        } else if SCHEMA_SINGLES.contains(&keyword.as_str()) && value.is_object() {
            found.push((at, value));
        }
    }
    found
}
