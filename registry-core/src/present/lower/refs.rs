//! `$ref`s: kept, inlined (with cycle detection) or wrapped, as the profile takes them; and
//! `allOf`s merged.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::merge::merge_into;
use super::{Lowering, escape};
use crate::present::provider::References;

impl<'a> Lowering<'a> {
    /// Merges the branches of `allOf` into the schema. Where they cannot be merged (two
    /// different values of one keyword), a profile that takes `allOf` keeps it (Anthropic, a
    /// limited one) and the others cannot express the schema.
    pub(super) fn merge_all_of(
        &mut self,
        object: &Map<String, Value>,
        pointer: &str,
    ) -> Map<String, Value> {
        let Some(Value::Array(branches)) = object.get("allOf") else {
            return object.clone();
        };
        let mut merged = object.clone();
        merged.remove("allOf");
        for branch in branches {
            let branch = match branch {
                Value::Bool(true) => continue,
                Value::Object(branch) if branches.len() > 1 && is_only_ref(branch) => {
                    match self.definition_of(branch) {
                        Some((_, Value::Object(definition))) => definition.clone(),
                        Some((_, Value::Bool(true))) => continue,
                        _ => branch.clone(),
                    }
                }
                Value::Object(branch) => branch.clone(),
                _ => {
                    merged.insert("allOf".into(), Value::Array(branches.clone()));
                    break;
                }
            };
            if let Err(keyword) = merge_into(&mut merged, &branch) {
                if self.rules.composition.takes("allOf") {
                    return object.clone();
                }
                self.problem(
                    &format!("{pointer}/allOf"),
                    format!(
                        "{}: no `allOf`; its branches cannot be merged (both give `{keyword}`)",
                        self.consumer()
                    ),
                    "declare one struct with all the fields instead of composing several",
                );
                return merged;
            }
        }
        merged
    }

    /// The definition a `$ref`-bearing schema points at, with its name: `#/$defs/Name`, or
    /// `#anchor` where the definition says `"$anchor": "anchor"` (the profiles that drop
    /// `$anchor` then reach it by its name in `$defs`).
    pub(super) fn definition_of(&self, object: &Map<String, Value>) -> Option<(String, &'a Value)> {
        let reference = object.get("$ref")?.as_str()?;
        let name = match definition_name(reference) {
            Some(name) => name,
            None => self.anchored_definition(reference)?,
        };
        let definition = self.definitions?.get(&name)?;
        Some((name, definition))
    }

    /// The name of the definition of `$defs` (or `definitions`) whose `$anchor` the plain-name
    /// fragment `reference` (`#anchor`) names.
    fn anchored_definition(&self, reference: &str) -> Option<String> {
        let anchor = reference.strip_prefix('#')?;
        if anchor.is_empty() || anchor.starts_with('/') {
            return None;
        }
        let anchor = crate::pointer::percent_decode(anchor)?;
        self.definitions?
            .iter()
            .find(|(_, definition)| {
                definition.get("$anchor").and_then(Value::as_str) == Some(anchor.as_str())
            })
            .map(|(name, _)| name.clone())
    }

    /// Lowers a schema with a `$ref`: kept as it is (where the profile keeps `$ref`s, when it
    /// has no siblings), or inlined (the definition, overridden by the siblings), or, for a
    /// recursive type where `$ref`s cannot stay, an incompatibility.
    pub(super) fn reference(&mut self, object: &Map<String, Value>, pointer: &str) -> Value {
        let reference = object
            .get("$ref")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some((name, definition)) = self.definition_of(object) else {
            self.problem(
                &format!("{pointer}/$ref"),
                format!(
                    "{}: a `$ref` must point into the schema's own `$defs`; {reference:?} does not",
                    self.consumer()
                ),
                "only use `$ref`s to `#/$defs/...` definitions that exist",
            );
            let mut rest = object.clone();
            rest.remove("$ref");
            return self.keywords(&rest, pointer);
        };
        let siblings = object.len() > 1;
        let recursive = self.stack.contains(&name);
        if !self.rules.references.inlined() && (!siblings || recursive) {
            self.used.insert(name.clone());
            let kept = Value::from(format!("#/$defs/{}", escape(&name)));
            if !siblings {
                return Value::Object(Map::from_iter([("$ref".to_owned(), kept)]));
            }
            // A `$ref` keeps no siblings: they go beside a one-branch `anyOf` around it.
            let mut rest = object.clone();
            rest.remove("$ref");
            rest.insert(
                "anyOf".into(),
                Value::Array(vec![Value::Object(Map::from_iter([(
                    "$ref".to_owned(),
                    kept,
                )]))]),
            );
            return self.keywords(&rest, pointer);
        }
        if recursive {
            if self.recursive.insert(name.clone()) {
                let start = self.stack.iter().position(|n| *n == name).unwrap_or(0);
                let mut cycle: Vec<&str> = self.stack[start..].iter().map(String::as_str).collect();
                cycle.push(&name);
                let rule = if self.rules.references == References::Refused {
                    format!(
                        "{} takes no `$defs`/`$ref`, so every type is inlined, and the \
                         recursive type `{name}` ({}) cannot be",
                        self.consumer(),
                        cycle.join(" -> ")
                    )
                } else {
                    format!(
                        "{}: `$ref` may not be recursive, and the type `{name}` is ({})",
                        self.consumer(),
                        cycle.join(" -> ")
                    )
                };
                self.problem(
                    pointer,
                    rule,
                    format!(
                        "make `{name}` non-recursive (bound its depth with distinct types, or take \
                         the nested part as a JSON string), or do not offer this tool to {}",
                        self.consumer()
                    ),
                );
            }
            return Value::Object(Map::new());
        }
        let mut merged = match definition {
            Value::Object(definition) => definition.clone(),
            _ => Map::new(),
        };
        for (keyword, value) in object {
            if keyword != "$ref" {
                merged.insert(keyword.clone(), value.clone());
            }
        }
        if definition == &Value::Bool(false) {
            return self.node(&Value::Bool(false), pointer);
        }
        self.stack.push(name.clone());
        let lowered = self.node(&Value::Object(merged), &format!("/$defs/{}", escape(&name)));
        self.stack.pop();
        lowered
    }

    /// Adds under `$defs` the definitions that kept `$ref`s point at (OpenAI's), each lowered
    /// once, and those they point at in turn.
    pub(super) fn attach_definitions(&mut self, root: &mut Value) {
        let mut done = BTreeSet::new();
        let mut lowered = Map::new();
        while let Some(name) = self.used.iter().find(|n| !done.contains(*n)).cloned() {
            done.insert(name.clone());
            let Some(definition) = self.definitions.and_then(|d| d.get(&name)) else {
                continue;
            };
            self.stack.push(name.clone());
            let value = self.node(definition, &format!("/$defs/{}", escape(&name)));
            self.stack.pop();
            lowered.insert(name, value);
        }
        if !lowered.is_empty()
            && let Value::Object(root) = root
        {
            root.insert("$defs".into(), Value::Object(lowered));
        }
    }
}

/// The name of the definition `reference` points at: `#/$defs/Name` (or `#/definitions/`).
fn definition_name(reference: &str) -> Option<String> {
    let token = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))?;
    if token.contains('/') {
        return None;
    }
    let decoded = crate::pointer::percent_decode(token)?;
    Some(crate::pointer::unescape(&decoded))
}

/// Whether `object` is `{"$ref": ...}` alone.
fn is_only_ref(object: &Map<String, Value>) -> bool {
    object.len() == 1 && object.contains_key("$ref")
}
