//! What both lowering and the checker use that is JSON Schema's rather than a provider's (a
//! provider's rules are the [`Rules`](crate::present::provider::Rules) in its file): the
//! bound and composition keywords, the keywords that hold subschemas (which the bounds of a
//! declared schema walk too), and the sizes that strict mode's limits count, measured by one
//! walk so that the two cannot count differently.

use serde_json::{Map, Value};

/// JSON Schema's numeric, length and count bounds: what Anthropic's `strict: true` takes none
/// of, and what lowering moves into the description where a profile does not take it.
pub(crate) const BOUNDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
];

/// JSON Schema's keywords that compose or condition schemas, besides `anyOf` (which every
/// consumer takes): lowering turns `oneOf` into `anyOf` and merges `allOf` where they are not
/// taken, and cannot express the others.
pub(crate) const COMPOSITION: &[&str] = &[
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
];

/// The keywords of JSON Schema 2020-12 whose value is an object of subschemas (the checker's
/// walk, and the bounds of [`bounds`](crate::register::bounds)).
pub(crate) const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// The keywords whose value is an array of subschemas.
pub(crate) const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// The keywords whose value is one subschema.
pub(crate) const SCHEMA_SINGLES: &[&str] = &[
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "contentSchema",
];

/// How a walk reads schemas. The lowering reads the schemas it wrote, the checker any JSON,
/// and each keeps its own reading; the measures below are the same for both.
pub(crate) trait Reading {
    /// The schemas directly inside `object`, each with its pointer tokens, in key order.
    fn subschemas(object: &Map<String, Value>) -> Vec<(String, &Value)>;

    /// The target of the `$ref` `reference` in the schema `root`.
    fn resolve<'v>(root: &'v Value, reference: &str) -> Option<&'v Value>;

    /// Whether the `type` of `object` is or includes `"object"`.
    fn object_type(object: &Map<String, Value>) -> bool;
}

/// What strict mode's limits count in a schema, everywhere in it.
#[derive(Debug, Default)]
pub(crate) struct Size {
    /// Object properties.
    pub(crate) properties: usize,
    /// Enum values.
    pub(crate) enum_values: usize,
    /// Characters of property names, definition names, enum values and `const`s.
    pub(crate) chars: usize,
}

/// The size of the schema `root`.
pub(crate) fn size<R: Reading>(root: &Value) -> Size {
    let mut size = Size::default();
    if let Some(Value::Object(definitions)) = root.get("$defs") {
        size.chars += definitions.keys().map(|n| n.chars().count()).sum::<usize>();
    }
    let mut pending = vec![root];
    while let Some(schema) = pending.pop() {
        let Value::Object(object) = schema else {
            continue;
        };
        if let Some(Value::Object(map)) = object.get("properties") {
            size.properties += map.len();
            size.chars += map.keys().map(|n| n.chars().count()).sum::<usize>();
        }
        if let Some(Value::Array(values)) = object.get("enum") {
            size.enum_values += values.len();
            size.chars += values.iter().map(text_chars).sum::<usize>();
        }
        if let Some(value) = object.get("const") {
            size.chars += text_chars(value);
        }
        pending.extend(R::subschemas(object).into_iter().map(|(_, inner)| inner));
    }
    size
}

/// The characters of a value: a string's own, any other value's JSON text.
pub(crate) fn text_chars(value: &Value) -> usize {
    match value {
        Value::String(text) => text.chars().count(),
        other => other.to_string().chars().count(),
    }
}

/// The first place in the schema `root` where objects nest more than `max` levels deep,
/// following `$ref`s (a recursive one once: recursion itself is not nesting).
pub(crate) fn too_deep<R: Reading>(root: &Value, max: usize) -> Option<String> {
    nested_too_deep::<R>(root, root, "", 0, max, &mut Vec::new())
}

fn nested_too_deep<R: Reading>(
    root: &Value,
    schema: &Value,
    pointer: &str,
    depth: usize,
    max: usize,
    stack: &mut Vec<String>,
) -> Option<String> {
    let Value::Object(object) = schema else {
        return None;
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        if stack.iter().any(|r| r == reference) {
            return None;
        }
        let target = R::resolve(root, reference)?;
        stack.push(reference.to_owned());
        let found = nested_too_deep::<R>(root, target, pointer, depth, max, stack);
        stack.pop();
        return found;
    }
    let depth = if R::object_type(object) || object.contains_key("properties") {
        depth + 1
    } else {
        depth
    };
    if depth > max {
        return Some(pointer.to_owned());
    }
    for (token, inner) in R::subschemas(object) {
        if token.starts_with("/$defs") || token.starts_with("/definitions") {
            continue;
        }
        if let Some(found) =
            nested_too_deep::<R>(root, inner, &format!("{pointer}{token}"), depth, max, stack)
        {
            return Some(found);
        }
    }
    None
}

/// The keywords that say what a schema accepts: a schema with none of them accepts any value,
/// open objects included (what OpenAI strict mode refuses).
pub(crate) const TYPING: &[&str] = &[
    "type",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "enum",
    "const",
    "properties",
];
