//! Strict mode (OpenAI's): closed objects, every property required (optional ones nullable),
//! and the size limits of a strict schema.

use serde_json::{Map, Value, json};

use super::keywords::has_type;
use super::{Lowering, child};
use crate::present::provider::StrictLimits;
use crate::present::rules::{Reading, size, too_deep};

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
                    format!(
                        "{}: every object must be closed (`additionalProperties: false`), so a map \
                         (any property name) cannot be expressed",
                        self.consumer()
                    ),
                    "take a list of key/value structs instead of a map, or export with `strict: false`",
                );
                return;
            }
            _ => {
                self.problem(
                    pointer,
                    format!(
                        "{}: every object must be closed (`additionalProperties: false`), and \
                         this one takes any property",
                        self.consumer()
                    ),
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
        // Lowered for OpenAI, `oneOf` is already `anyOf`: the one list serves both.
        let typed = crate::present::rules::TYPING
            .iter()
            .any(|k| out.contains_key(*k));
        if !typed {
            self.problem(
                pointer,
                format!(
                    "{}: every object must be closed, and a schema that accepts any value \
                     (`serde_json::Value`) accepts open objects",
                    self.consumer()
                ),
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

/// How the lowering reads the schemas it wrote.
struct Lowered;

impl Reading for Lowered {
    fn subschemas(object: &Map<String, Value>) -> Vec<(String, &Value)> {
        let mut found = Vec::new();
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

    fn resolve<'v>(root: &'v Value, reference: &str) -> Option<&'v Value> {
        crate::pointer::local_target(root, reference).map(|(_, target)| target)
    }

    fn object_type(object: &Map<String, Value>) -> bool {
        has_type(object, "object")
    }
}

/// Checks strict mode's limits on the lowered schema `root`.
pub(crate) fn check_limits(lowering: &mut Lowering<'_>, root: &Value, limits: &StrictLimits) {
    let who = lowering.consumer();
    let size = size::<Lowered>(root);
    if size.properties > limits.max_properties {
        lowering.problem(
            "",
            format!(
                "{who}: at most {} object properties in all; this schema has {}",
                limits.max_properties, size.properties
            ),
            "split the tool, or group rarely used fields into fewer parameters",
        );
    }
    if let Some(pointer) = too_deep::<Lowered>(root, limits.max_nesting) {
        lowering.problem(
            &pointer,
            format!(
                "{who}: at most {} levels of nested objects",
                limits.max_nesting
            ),
            "flatten the parameter types",
        );
    }
    if size.enum_values > limits.max_enum_values {
        lowering.problem(
            "",
            format!(
                "{who}: at most {} enum values in all; this schema has {}",
                limits.max_enum_values, size.enum_values
            ),
            "take the value as a string checked by the tool, instead of an enum",
        );
    }
    if size.chars > limits.max_chars {
        lowering.problem(
            "",
            format!(
                "{who}: at most {} characters of property names, definition names and enum \
                 values in all; this schema has {}",
                limits.max_chars, size.chars
            ),
            "shorten the names and enum values, or split the tool",
        );
    }
}
