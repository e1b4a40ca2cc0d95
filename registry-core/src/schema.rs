//! The canonical JSON Schema of a tool's arguments.
//!
//! One object schema per tool, in JSON Schema 2020-12: a property per parameter (described
//! by the parameter's doc comment), `required` listing the non-`Option` ones, shared types
//! under `$defs`, and every object that lists its properties closed, so that an argument the
//! schema does not declare is rejected rather than ignored. Maps stay open to their value type.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::declaration::Param;

/// The arguments schema of a `#[tool]` function with parameters `params`.
pub(crate) fn parameters_schema(params: &[Param]) -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in params {
        let mut schema = (param.schema)(&mut generator).to_value();
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
    close_objects(&mut root);
    root
}

/// The schema of a tool without parameters.
pub(crate) fn empty_parameters_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// Closes every object schema that lists `properties` and says nothing about others:
/// `additionalProperties: false`, or `unevaluatedProperties: false` where subschemas
/// (`allOf`, `anyOf`, `oneOf`, `$ref`) may declare more properties beside it.
pub(crate) fn close_objects(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    let open = object.contains_key("properties")
        && !object.contains_key("additionalProperties")
        && !object.contains_key("unevaluatedProperties");
    if open {
        let composed = ["allOf", "anyOf", "oneOf", "$ref"]
            .iter()
            .any(|key| object.contains_key(*key));
        let key = if composed {
            "unevaluatedProperties"
        } else {
            "additionalProperties"
        };
        object.insert(key.into(), Value::Bool(false));
    }
    for (keyword, value) in object.iter_mut() {
        match keyword.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(map) = value {
                    map.values_mut().for_each(close_objects);
                }
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
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
            | "not"
            | "if"
            | "then"
            | "else"
            | "propertyNames" => match value {
                Value::Array(list) => list.iter_mut().for_each(close_objects),
                other => close_objects(other),
            },
            _ => {}
        }
    }
}
