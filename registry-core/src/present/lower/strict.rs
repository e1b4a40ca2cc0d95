//! OpenAI strict mode: closed objects, every property required (optional ones nullable), and
//! the size limits of a strict schema.

use serde_json::{Map, Value, json};

use super::keywords::has_type;
use super::{Lowering, child};
// OpenAI strict mode's limits on one schema.
use crate::present::rules::{
    STRICT_MAX_CHARS as MAX_CHARS, STRICT_MAX_ENUM_VALUES as MAX_ENUM_VALUES,
    STRICT_MAX_NESTING as MAX_NESTING, STRICT_MAX_PROPERTIES as MAX_PROPERTIES,
};

impl Lowering<'_> {
    /// Closes an object schema, and makes every property required, those that were optional
    /// nullable. A map or an open object cannot be expressed.
    pub(crate) fn strict_object(&mut self, out: &mut Map<String, Value>, pointer: &str) {
        let is_object = has_type(out, "object") || out.contains_key("properties");
        if !is_object || (out.contains_key("anyOf") && !out.contains_key("properties")) {
            return;
        }
        match out.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            None if out.contains_key("properties") => {
                out.insert("additionalProperties".into(), Value::Bool(false));
            }
            Some(Value::Object(_)) => {
                self.problem(
                    pointer,
                    "OpenAI strict mode: every object must be closed (`additionalProperties: \
                     false`), so a map (any property name) cannot be expressed",
                    "take a list of key/value structs instead of a map, or export with `strict: false`",
                );
                return;
            }
            _ => {
                self.problem(
                    pointer,
                    "OpenAI strict mode: every object must be closed (`additionalProperties: \
                     false`), and this one takes any property",
                    "declare the object's fields (a struct), or export with `strict: false`",
                );
                return;
            }
        }
        let properties = out
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let mut required: Vec<Value> = out
            .get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut lowered = Map::new();
        for (name, schema) in properties {
            let key = Value::from(name.as_str());
            let schema = if required.contains(&key) {
                schema
            } else {
                required.push(key);
                nullable(schema)
            };
            lowered.insert(name, schema);
        }
        out.insert("properties".into(), Value::Object(lowered));
        out.insert("required".into(), Value::Array(required));
    }

    /// A schema that accepts any value (`serde_json::Value`) accepts open objects.
    pub(crate) fn strict_any(&mut self, out: &Map<String, Value>, pointer: &str) {
        let typed = [
            "type",
            "anyOf",
            "allOf",
            "$ref",
            "enum",
            "const",
            "properties",
        ]
        .iter()
        .any(|k| out.contains_key(*k));
        if !typed {
            self.problem(
                pointer,
                "OpenAI strict mode: every object must be closed, and a schema that accepts any \
                 value (`serde_json::Value`) accepts open objects",
                "give the parameter or field a concrete type, or export with `strict: false`",
            );
        }
    }
}

/// `schema`, also accepting `null`: `"null"` added to its type (and `enum`), or a union with
/// `{"type": "null"}`.
pub(crate) fn nullable(schema: Value) -> Value {
    let Value::Object(mut object) = schema else {
        return schema;
    };
    if is_nullable(&object) {
        return Value::Object(object);
    }
    let null_branch = json!({"type": "null"});
    let simple_type = matches!(
        object.get("type"),
        Some(Value::String(_)) | Some(Value::Array(_))
    );
    if simple_type && !object.contains_key("const") && !object.contains_key("anyOf") {
        let types = match object.remove("type") {
            Some(Value::String(single)) => vec![Value::from(single), Value::from("null")],
            Some(Value::Array(mut types)) => {
                types.push(Value::from("null"));
                types
            }
            _ => unreachable!("checked above"),
        };
        object.insert("type".into(), Value::Array(types));
        if let Some(Value::Array(values)) = object.get_mut("enum") {
            values.push(Value::Null);
        }
        return Value::Object(object);
    }
    if !object.contains_key("type")
        && let Some(Value::Array(branches)) = object.get_mut("anyOf")
    {
        branches.push(null_branch);
        return Value::Object(object);
    }
    let mut outer = Map::new();
    for keyword in ["description", "title"] {
        if let Some(value) = object.remove(keyword) {
            outer.insert(keyword.to_owned(), value);
        }
    }
    outer.insert(
        "anyOf".into(),
        Value::Array(vec![Value::Object(object), null_branch]),
    );
    Value::Object(outer)
}

/// Whether a schema accepts `null` already.
fn is_nullable(object: &Map<String, Value>) -> bool {
    has_type(object, "null")
        || object
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|values| values.contains(&Value::Null))
        || object.get("const") == Some(&Value::Null)
        || object
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|branches| {
                branches.iter().any(|b| {
                    b.as_object()
                        .is_some_and(|b| is_nullable(b) && !b.contains_key("$ref"))
                })
            })
        || object.is_empty()
}

/// What the limits count.
#[derive(Default)]
struct Tally {
    properties: usize,
    enum_values: usize,
    chars: usize,
    /// The first place nested deeper than the limit.
    too_deep: Option<String>,
}

/// Checks OpenAI strict mode's limits on the lowered schema `root`.
pub(crate) fn check_limits(lowering: &mut Lowering<'_>, root: &Value) {
    let mut tally = Tally::default();
    if let Some(Value::Object(definitions)) = root.get("$defs") {
        tally.chars += definitions
            .keys()
            .map(|name| name.chars().count())
            .sum::<usize>();
    }
    count(root, &mut tally);
    let mut stack = Vec::new();
    nesting(root, root, "", 0, &mut stack, &mut tally);
    if tally.properties > MAX_PROPERTIES {
        lowering.problem(
            "",
            format!(
                "OpenAI strict mode: at most {MAX_PROPERTIES} object properties in all; this \
                 schema has {}",
                tally.properties
            ),
            "split the tool, or group rarely used fields into fewer parameters",
        );
    }
    if let Some(pointer) = tally.too_deep {
        lowering.problem(
            &pointer,
            format!("OpenAI strict mode: at most {MAX_NESTING} levels of nested objects"),
            "flatten the parameter types",
        );
    }
    if tally.enum_values > MAX_ENUM_VALUES {
        lowering.problem(
            "",
            format!(
                "OpenAI strict mode: at most {MAX_ENUM_VALUES} enum values in all; this schema \
                 has {}",
                tally.enum_values
            ),
            "take the value as a string checked by the tool, instead of an enum",
        );
    }
    if tally.chars > MAX_CHARS {
        lowering.problem(
            "",
            format!(
                "OpenAI strict mode: at most {MAX_CHARS} characters of property names, definition \
                 names and enum values in all; this schema has {}",
                tally.chars
            ),
            "shorten the names and enum values, or split the tool",
        );
    }
}

/// The schemas directly inside `schema`, each with its pointer token(s).
fn subschemas(schema: &Value) -> Vec<(String, &Value)> {
    let mut found = Vec::new();
    let Value::Object(object) = schema else {
        return found;
    };
    for (keyword, value) in object {
        match (keyword.as_str(), value) {
            ("properties" | "patternProperties" | "$defs", Value::Object(map)) => {
                for (name, schema) in map {
                    found.push((child(&child("", keyword), name), schema));
                }
            }
            ("anyOf" | "allOf" | "oneOf" | "prefixItems", Value::Array(list)) => {
                for (index, schema) in list.iter().enumerate() {
                    found.push((child(&child("", keyword), &index.to_string()), schema));
                }
            }
            ("items" | "additionalProperties" | "contains" | "propertyNames", schema)
                if schema.is_object() =>
            {
                found.push((child("", keyword), schema));
            }
            _ => {}
        }
    }
    found
}

/// Counts properties, enum values and their characters, everywhere.
fn count(schema: &Value, tally: &mut Tally) {
    if let Some(Value::Object(properties)) = schema.get("properties") {
        tally.properties += properties.len();
        tally.chars += properties
            .keys()
            .map(|name| name.chars().count())
            .sum::<usize>();
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        tally.enum_values += values.len();
        tally.chars += values.iter().map(value_chars).sum::<usize>();
    }
    if let Some(value) = schema.get("const") {
        tally.chars += value_chars(value);
    }
    for (_, inner) in subschemas(schema) {
        count(inner, tally);
    }
}

fn value_chars(value: &Value) -> usize {
    match value {
        Value::String(text) => text.chars().count(),
        other => other.to_string().chars().count(),
    }
}

/// Finds the first object nested deeper than the limit, following `$ref`s (a recursive one
/// once: recursion is allowed).
fn nesting(
    root: &Value,
    schema: &Value,
    pointer: &str,
    depth: usize,
    stack: &mut Vec<String>,
    tally: &mut Tally,
) {
    if tally.too_deep.is_some() {
        return;
    }
    let Value::Object(object) = schema else {
        return;
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        if stack.iter().any(|r| r == reference) {
            return;
        }
        let target = reference.strip_prefix('#').and_then(|p| root.pointer(p));
        if let Some(target) = target {
            stack.push(reference.to_owned());
            nesting(root, target, pointer, depth, stack, tally);
            stack.pop();
        }
        return;
    }
    let depth = if has_type(object, "object") || object.contains_key("properties") {
        depth + 1
    } else {
        depth
    };
    if depth > MAX_NESTING {
        tally.too_deep = Some(pointer.to_owned());
        return;
    }
    for (token, inner) in subschemas(schema) {
        if token.starts_with("/$defs") {
            continue;
        }
        nesting(
            root,
            inner,
            &format!("{pointer}{token}"),
            depth,
            stack,
            tally,
        );
    }
}
