//! The canonical JSON Schema of a tool's arguments.
//!
//! One object schema per tool, in JSON Schema 2020-12: a property per parameter (described
//! by the parameter's doc comment), `required` listing the non-`Option` ones, shared types
//! under `$defs`, and every object that lists its properties closed, so that an argument the
//! schema does not declare is rejected rather than ignored. Maps stay open to their value type.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::declare::declaration::Param;

/// The arguments schema of a `#[tool]` function with parameters `params`.
pub(crate) fn parameters_schema(params: &[Param]) -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in params {
        let mut schema = (param.schema)(&mut generator).to_value();
        if param.description.is_some() && schema == Value::Bool(true) {
            // `true` (any value: `serde_json::Value`) has no room for a description; `{}` has.
            schema = Value::Object(Map::new());
        }
        if let (Some(description), Value::Object(object)) = (param.description, &mut schema) {
            object.insert("description".into(), description.into());
        }
        properties.insert(param.name.into(), schema);
        if param.required {
            required.push(Value::from(param.name));
        }
    }
    let mut root = Map::new();
    root.insert("type".into(), "object".into());
    root.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        root.insert("required".into(), Value::Array(required));
    }
    let definitions = generator.take_definitions(true);
    if !definitions.is_empty() {
        root.insert("$defs".into(), Value::Object(definitions));
    }
    let mut root = Value::Object(root);
    if let Some(Value::Object(definitions)) = root.get("$defs") {
        let definitions = definitions.clone();
        inline_extended_refs(&mut root, &definitions);
    }
    close_objects(&mut root);
    root
}

/// Merges into each schema that has a `$ref` to an object definition *and* properties of its
/// own (serde's internally tagged newtype variant: the tag beside the variant's struct) the
/// properties of that definition. Left as a `$ref`, the definition would be closed on its own
/// and reject the tag, so that no value could match.
fn inline_extended_refs(schema: &mut Value, definitions: &Map<String, Value>) {
    match schema {
        Value::Object(object) => {
            let target = object
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|reference| reference.strip_prefix("#/$defs/"))
                .and_then(|name| definitions.get(name))
                .and_then(Value::as_object)
                .filter(|target| is_plain_object(target));
            if let (Some(target), true) = (target, object.contains_key("properties")) {
                if let (Some(Value::Object(own)), Some(Value::Object(more))) =
                    (object.get_mut("properties"), target.get("properties"))
                {
                    for (name, property) in more {
                        own.entry(name.clone()).or_insert_with(|| property.clone());
                    }
                }
                if let Some(Value::Array(more)) = target.get("required") {
                    let required = object.entry("required").or_insert_with(|| json!([]));
                    if let Value::Array(required) = required {
                        for name in more {
                            if !required.contains(name) {
                                required.push(name.clone());
                            }
                        }
                    }
                }
                if let Some(closed) = target.get("additionalProperties") {
                    object.insert("additionalProperties".into(), closed.clone());
                }
                object.remove("$ref");
            }
            object
                .values_mut()
                .for_each(|value| inline_extended_refs(value, definitions));
        }
        Value::Array(list) => list
            .iter_mut()
            .for_each(|value| inline_extended_refs(value, definitions)),
        _ => {}
    }
}

/// An object schema made of nothing but properties (and words about them), which can be
/// merged into another.
fn is_plain_object(schema: &Map<String, Value>) -> bool {
    schema.get("type") == Some(&Value::from("object"))
        && schema.contains_key("properties")
        && schema
            .iter()
            .all(|(keyword, value)| match keyword.as_str() {
                "type" | "properties" | "required" | "title" | "description" => true,
                "additionalProperties" => value == &Value::Bool(false),
                _ => false,
            })
}

/// The schema of a tool's result, for MCP's `outputSchema`: only when the result is a
/// structured type (its schema is an object schema), with the type's definition inlined at
/// the root and the others under `$defs`.
pub(crate) fn output_schema(
    output: fn(&mut schemars::SchemaGenerator) -> Option<schemars::Schema>,
) -> Option<Value> {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let schema = output(&mut generator)?.to_value();
    let mut definitions = generator.take_definitions(true);
    let mut root = match schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix("#/$defs/"))
    {
        Some(name) => {
            let reference = format!("#/$defs/{name}");
            let definition = definitions.get(name)?.clone();
            let recursive = definitions
                .iter()
                .any(|(other, value)| other != name && value.to_string().contains(&reference))
                || definition.to_string().contains(&reference);
            if !recursive {
                definitions.remove(name);
            }
            definition
        }
        None => schema,
    };
    if root.get("type") != Some(&Value::from("object")) {
        return None;
    }
    if !definitions.is_empty()
        && let Value::Object(object) = &mut root
    {
        object.insert("$defs".into(), Value::Object(definitions));
    }
    Some(root)
}

/// The schema of a tool without parameters.
pub(crate) fn empty_parameters_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// The keywords whose subschemas apply to the same value as the schema holding them and
/// may declare properties of it: beside any of them, an object is closed with
/// `unevaluatedProperties`, which sees the properties they evaluate.
const IN_PLACE: &[&str] = &[
    "allOf",
    "anyOf",
    "oneOf",
    "$ref",
    "if",
    "then",
    "else",
    "dependentSchemas",
];

/// Closes every object schema that lists `properties` and says nothing about others:
/// `additionalProperties: false`, or `unevaluatedProperties: false` where subschemas
/// (`allOf`, `anyOf`, `oneOf`, `$ref`, `if`/`then`/`else`, `dependentSchemas`) may declare
/// more properties beside it.
pub(crate) fn close_objects(schema: &mut Value) {
    close(schema, true);
}

/// Closes `schema` (when `close_self`) and every object schema below it. The branches of an
/// object's `allOf`/`anyOf`/`oneOf` are not closed on their own when the object lists
/// properties beside them (a flattened enum): the object's `unevaluatedProperties: false`
/// closes them together, where a closed branch would reject the object's own properties.
/// Conditions (`if`, `then`, `else`, `dependentSchemas`, `not`) are never closed on their own:
/// they test or add to the value their schema describes, and a closed `if` would be false for
/// any value with one more property, a closed `not` true (only their nested objects are
/// closed).
fn close(schema: &mut Value, close_self: bool) {
    let Value::Object(object) = schema else {
        return;
    };
    let has_properties = object.contains_key("properties");
    let open = close_self
        && has_properties
        && !object.contains_key("additionalProperties")
        && !object.contains_key("unevaluatedProperties");
    if open {
        let composed = IN_PLACE.iter().any(|key| object.contains_key(*key));
        let key = if composed {
            "unevaluatedProperties"
        } else {
            "additionalProperties"
        };
        object.insert(key.into(), Value::Bool(false));
    }
    for (keyword, value) in object.iter_mut() {
        match keyword.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" => {
                if let Value::Object(map) = value {
                    map.values_mut().for_each(close_objects);
                }
            }
            "dependentSchemas" => {
                if let Value::Object(map) = value {
                    map.values_mut()
                        .for_each(|condition| close(condition, false));
                }
            }
            "if" | "then" | "else" | "not" => close(value, false),
            "allOf" | "anyOf" | "oneOf" => {
                if let Value::Array(list) = value {
                    list.iter_mut()
                        .for_each(|branch| close(branch, !has_properties));
                }
            }
            "prefixItems" => {
                if let Value::Array(list) = value {
                    list.iter_mut().for_each(close_objects);
                }
            }
            "items"
            | "additionalProperties"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "additionalItems"
            | "contains"
            | "propertyNames" => match value {
                Value::Array(list) => list.iter_mut().for_each(close_objects),
                other => close_objects(other),
            },
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::close_objects;

    #[test]
    fn conditions_are_not_closed_on_their_own() {
        let mut schema = json!({
            "type": "object",
            "properties": {"method": {"type": "string"}, "phone": {"type": "string"}},
            "if": {"properties": {"method": {"const": "phone"}}, "required": ["method"]},
            "then": {"required": ["phone"], "properties": {"extra": {"type": "object",
                "properties": {"note": {"type": "string"}}}}},
            "not": {"properties": {"phone": {"const": ""}}, "required": ["phone"]},
            "dependentSchemas": {"phone": {"properties": {"method": {"minLength": 1}}}}
        });
        close_objects(&mut schema);
        // The object is closed beside its conditions, which can then declare properties.
        assert_eq!(schema["unevaluatedProperties"], false);
        assert_eq!(schema.get("additionalProperties"), None);
        for condition in ["/if", "/then", "/not", "/dependentSchemas/phone"] {
            let condition = schema.pointer(condition).unwrap();
            assert_eq!(condition.get("additionalProperties"), None, "{condition}");
            assert_eq!(condition.get("unevaluatedProperties"), None, "{condition}");
        }
        // Objects nested in a condition are closed as any other.
        assert_eq!(
            schema["then"]["properties"]["extra"]["additionalProperties"],
            false
        );
    }
}
