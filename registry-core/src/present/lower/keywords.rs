//! The keywords of one schema (without `$ref`), lowered for the profile.

use serde_json::{Map, Value};

use super::merge::merge_into;
use super::words::{self, Text};
use super::{Lowering, child};
use crate::present::provider::{Enums, Formats, Keywords, Null};
use crate::present::rules::{BOUNDS, COMPOSITION};

/// Keywords that only constrain values, without schemas inside (or whose schemas are only
/// described when moved), besides the [`BOUNDS`]: kept where the profile takes them,
/// described otherwise.
const OTHER_CONSTRAINTS: &[&str] = &[
    "minContains",
    "maxContains",
    "contains",
    "propertyNames",
    "patternProperties",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "unevaluatedItems",
];

/// Where `keyword` comes among the constraints (the bounds, then the others), which orders
/// their description; `None` for any other keyword.
fn constraint_rank(keyword: &str) -> Option<usize> {
    BOUNDS
        .iter()
        .chain(OTHER_CONSTRAINTS)
        .position(|known| *known == keyword)
}

/// Annotations that only some consumers take; described or dropped elsewhere.
const ANNOTATIONS: &[&str] = &["examples", "deprecated", "readOnly", "writeOnly"];

/// Keywords lowering drops.
const DROPPED: &[&str] = &[
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$comment",
    "$vocabulary",
    "$defs",
    "definitions",
];

impl Lowering<'_> {
    /// Lowers the keywords of `object` (a schema at `pointer` without `$ref`).
    pub(crate) fn keywords(&mut self, object: &Map<String, Value>, pointer: &str) -> Value {
        let mut out = Map::new();
        let mut text = Text::new(object.get("description").and_then(Value::as_str));
        let mut moved = Vec::new();
        for (keyword, value) in object {
            let at = child(pointer, keyword);
            match keyword.as_str() {
                "description" => {}
                "$schema" => {
                    if self.rules.dollar_schema {
                        out.insert(keyword.clone(), value.clone());
                    }
                }
                k if DROPPED.contains(&k) => {}
                "$ref" | "$dynamicRef" | "$recursiveRef" => {
                    self.problem(
                        &at,
                        format!("{}: unsupported reference {keyword}", self.consumer()),
                        "use `$ref`s to `#/$defs/...` only",
                    );
                }
                "properties" => {
                    let Value::Object(properties) = value else {
                        continue;
                    };
                    let lowered = properties
                        .iter()
                        .map(|(name, schema)| (name.clone(), self.node(schema, &child(&at, name))))
                        .collect();
                    out.insert(keyword.clone(), Value::Object(lowered));
                }
                "items" => {
                    let lowered = self.node(value, &at);
                    out.insert(keyword.clone(), lowered);
                }
                "prefixItems" => {
                    let Value::Array(items) = value else { continue };
                    let lowered: Vec<Value> = items
                        .iter()
                        .enumerate()
                        .map(|(index, item)| self.node(item, &child(&at, &index.to_string())))
                        .collect();
                    if self.rules.prefix_items {
                        out.insert(keyword.clone(), Value::Array(lowered));
                    } else {
                        text.word(words::in_order(&lowered));
                        let mut distinct: Vec<Value> = Vec::new();
                        for item in lowered {
                            if !distinct.contains(&item) {
                                distinct.push(item);
                            }
                        }
                        let items = if distinct.len() == 1 {
                            distinct.remove(0)
                        } else {
                            Value::Object(Map::from_iter([(
                                "anyOf".to_owned(),
                                Value::Array(distinct),
                            )]))
                        };
                        out.entry("items").or_insert(items);
                    }
                }
                "additionalProperties" | "unevaluatedProperties" => {
                    let lowered = match value {
                        Value::Bool(_) => value.clone(),
                        schema => self.node(schema, &at),
                    };
                    if !self.rules.additional_properties {
                        // Gone with `additionalProperties`; the canonical schema of the values
                        // says them best, unless it points into `$defs`.
                        if lowered.is_object() {
                            let shown = if value.to_string().contains("\"$ref\"") {
                                &lowered
                            } else {
                                value
                            };
                            text.word(words::map_values(shown));
                        }
                        continue;
                    }
                    out.insert(keyword.clone(), lowered);
                }
                "anyOf" | "oneOf" | "allOf" => {
                    let Value::Array(branches) = value else {
                        continue;
                    };
                    let lowered: Vec<Value> = branches
                        .iter()
                        .enumerate()
                        .map(|(index, branch)| self.node(branch, &child(&at, &index.to_string())))
                        .collect();
                    let target = if keyword == "allOf" { "allOf" } else { "anyOf" };
                    match out.get_mut(target) {
                        Some(Value::Array(existing)) => existing.extend(lowered),
                        _ => {
                            out.insert(target.into(), Value::Array(lowered));
                        }
                    }
                }
                "format" => {
                    out.insert(keyword.clone(), value.clone());
                }
                "default" => {
                    if self.strict() {
                        text.note(format!("Default: {}.", words::json(value)));
                    } else {
                        out.insert(keyword.clone(), value.clone());
                    }
                }
                k if COMPOSITION.contains(&k) && !self.rules.composition.takes(k) => {
                    self.problem(
                        &at,
                        format!(
                            "{}: composition is `anyOf` only (no `allOf`, `not`, `if`/`then`/`else`, \
                             `dependent*`); `{keyword}` cannot be expressed",
                            self.consumer()
                        ),
                        "check this condition in the tool's body instead of in the schema",
                    );
                }
                k if constraint_rank(k).is_some() => {
                    if self.rules.keywords.takes_constraint(k) {
                        let kept = match k {
                            "contains" | "propertyNames" | "contentSchema" | "unevaluatedItems" => {
                                self.node(value, &at)
                            }
                            "patternProperties" => match value {
                                Value::Object(patterns) => Value::Object(
                                    patterns
                                        .iter()
                                        .map(|(p, s)| (p.clone(), self.node(s, &child(&at, p))))
                                        .collect(),
                                ),
                                other => other.clone(),
                            },
                            _ => value.clone(),
                        };
                        out.insert(keyword.clone(), kept);
                    } else {
                        moved.push((keyword.clone(), value.clone()));
                    }
                }
                k if ANNOTATIONS.contains(&k) => {
                    if self.rules.annotations {
                        out.insert(keyword.clone(), value.clone());
                    } else if k == "examples" {
                        if let Value::Array(examples) = value
                            && !examples.is_empty()
                        {
                            text.note(format!("Examples: {}.", words::list(examples)));
                        }
                    } else if k == "deprecated" && value == &Value::Bool(true) {
                        text.note("Deprecated.".to_owned());
                    }
                }
                "type" | "enum" | "const" | "required" | "title" | "nullable" => {
                    out.insert(keyword.clone(), value.clone());
                }
                _ => {
                    // Unknown to JSON Schema: an annotation that constrains nothing.
                    if matches!(self.rules.keywords, Keywords::All) {
                        out.insert(keyword.clone(), value.clone());
                    }
                }
            }
        }
        self.values_and_types(&mut out, &mut text, pointer);
        flatten_unions(&mut out, &mut text);
        self.moved_constraints(&mut out, &mut text, moved);
        self.formats(&mut out, &mut text);
        self.close_composed(&mut out, pointer);
        if self.strict() {
            self.strict_object(&mut out, pointer);
            self.strict_any(&out, pointer);
        }
        if let Some(description) = text.finish() {
            out.insert("description".into(), Value::String(description));
        }
        Value::Object(out)
    }

    /// The constraints the profile does not take, described in words. Exclusive bounds on
    /// integers become inclusive ones where the profile takes those (Gemini).
    fn moved_constraints(
        &mut self,
        out: &mut Map<String, Value>,
        text: &mut Text,
        moved: Vec<(String, Value)>,
    ) {
        let integer = has_type(out, "integer") && !has_type(out, "number");
        let mut moved = moved;
        moved.sort_by_key(|(keyword, _)| constraint_rank(keyword).unwrap_or(usize::MAX));
        for (keyword, value) in moved {
            if integer && let Some(limit) = value.as_i64() {
                let inclusive = match keyword.as_str() {
                    "exclusiveMinimum" => Some(("minimum", limit.saturating_add(1), true)),
                    "exclusiveMaximum" => Some(("maximum", limit.saturating_sub(1), false)),
                    _ => None,
                };
                if let Some((bound, limit, lower)) = inclusive
                    && self.rules.keywords.takes_constraint(bound)
                {
                    let tighter = match out.get(bound).and_then(Value::as_f64) {
                        Some(existing) if lower => (limit as f64) > existing,
                        Some(existing) => (limit as f64) < existing,
                        None => true,
                    };
                    if tighter {
                        out.insert(bound.into(), Value::from(limit));
                    }
                    continue;
                }
            }
            if let Some(phrase) = words::constraint(&keyword, &value) {
                text.word(phrase);
            }
        }
    }

    /// Keeps, maps or removes (into words) the `format` of a schema.
    fn formats(&mut self, out: &mut Map<String, Value>, text: &mut Text) {
        let Some(Value::String(format)) = out.get("format").cloned() else {
            return;
        };
        let integer = words::integer_range(&format);
        let numeric = has_type(out, "integer") || has_type(out, "number");
        let replacement: Option<&str> = match &self.rules.formats {
            Formats::Any => Some(&format),
            Formats::Only(taken) => taken.contains(&format.as_str()).then_some(&*format),
            Formats::ByType { numbers, .. } if numeric => {
                if numbers.contains(&format.as_str()) {
                    Some(&format)
                } else {
                    // The narrowest integer format taken that holds the range.
                    integer.and_then(|(low, high)| {
                        ["int32", "int64"].into_iter().find(|name| {
                            numbers.contains(name)
                                && words::integer_range(name)
                                    .is_some_and(|(min, max)| low >= min && high <= max)
                        })
                    })
                }
            }
            Formats::ByType { strings, .. } => {
                strings.contains(&format.as_str()).then_some(&*format)
            }
        };
        if replacement == Some(format.as_str()) {
            return;
        }
        match replacement {
            Some(other) => {
                out.insert("format".into(), Value::from(other));
            }
            None => {
                out.remove("format");
            }
        }
        let phrase = match integer {
            Some((low, high)) => {
                let (kept_low, kept_high) = replacement
                    .and_then(words::integer_range)
                    .unwrap_or((i128::MIN, i128::MAX));
                let low_bound =
                    bound(out, "minimum").map_or(kept_low as f64, |b| b.max(kept_low as f64));
                let high_bound =
                    bound(out, "maximum").map_or(kept_high as f64, |b| b.min(kept_high as f64));
                let implied = low_bound >= low as f64 && high_bound <= high as f64;
                (!implied).then(|| words::format(&format))
            }
            None => (format != "double").then(|| words::format(&format)),
        };
        if let Some(phrase) = phrase {
            text.word_first(phrase);
        }
    }

    /// What the profile takes of `const`, `enum` and type arrays: `const` as a one-value
    /// `enum` where it is not taken; where enums are strings with `format: "enum"`, an `anyOf`
    /// of them as one enum and other enums in words; type arrays as unions where `null` is said
    /// with `nullable: true` (Gemini, all three).
    fn values_and_types(&mut self, out: &mut Map<String, Value>, text: &mut Text, pointer: &str) {
        if !self.rules.const_keyword {
            const_as_enum(out, text);
        }
        if self.rules.enums == Enums::Strings {
            string_enums(out, text);
        }
        if self.rules.null == Null::Nullable
            && let Some(Value::Array(types)) = out.get("type").cloned()
        {
            if out.contains_key("anyOf") {
                self.problem(
                    pointer,
                    format!(
                        "{} takes no type arrays, and this one is beside an `anyOf`",
                        self.consumer()
                    ),
                    "give the schema one type",
                );
            } else {
                out.remove("type");
                let branches = types
                    .into_iter()
                    .map(|t| Value::Object(Map::from_iter([("type".to_owned(), t)])))
                    .collect();
                out.insert("anyOf".into(), Value::Array(branches));
            }
        }
    }

    /// After lowering: `unevaluatedProperties` becomes `additionalProperties` once no
    /// composition is left beside the properties; properties beside an `anyOf` of objects
    /// (serde's `flatten` of an enum) are distributed into each branch.
    fn close_composed(&mut self, out: &mut Map<String, Value>, pointer: &str) {
        if out.contains_key("properties")
            && let Some(Value::Array(branches)) = out.get("anyOf")
            && branches.iter().all(|b| b.get("properties").is_some())
        {
            let mut shared = Map::new();
            for keyword in ["properties", "required"] {
                if let Some(value) = out.get(keyword) {
                    shared.insert(keyword.to_owned(), value.clone());
                }
            }
            let closed = out.get("unevaluatedProperties").cloned();
            let mut distributed = Vec::new();
            for branch in branches {
                let Value::Object(branch) = branch else {
                    return;
                };
                let mut branch = branch.clone();
                if merge_into(&mut branch, &shared).is_err() {
                    // Not mergeable: the object stays as it is.
                    return;
                }
                if let Some(closed) = &closed
                    && self.rules.additional_properties
                {
                    branch.insert("additionalProperties".into(), closed.clone());
                }
                if self.strict() {
                    self.strict_object(&mut branch, pointer);
                }
                distributed.push(Value::Object(branch));
            }
            for keyword in [
                "properties",
                "required",
                "unevaluatedProperties",
                "additionalProperties",
            ] {
                out.remove(keyword);
            }
            if out.get("type") == Some(&Value::from("object")) {
                out.remove("type");
            }
            out.insert("anyOf".into(), Value::Array(distributed));
            return;
        }
        let composed = ["anyOf", "allOf", "oneOf"]
            .iter()
            .any(|k| out.contains_key(*k));
        if !composed && let Some(value) = out.remove("unevaluatedProperties") {
            if self.rules.additional_properties {
                out.entry("additionalProperties").or_insert(value);
            }
        } else if composed
            && !self.rules.unevaluated_properties
            && out.contains_key("unevaluatedProperties")
        {
            out.remove("unevaluatedProperties");
        }
    }
}

/// `const` as a one-value `enum` (a string), or in words.
fn const_as_enum(out: &mut Map<String, Value>, text: &mut Text) {
    if let Some(value) = out.remove("const") {
        if value.is_string() {
            out.insert("enum".into(), Value::Array(vec![value]));
        } else {
            text.word(format!("exactly {}", words::json(&value)));
        }
    }
}

/// String enums with `format: "enum"` (an `anyOf` of them as one enum), other enums in words.
fn string_enums(out: &mut Map<String, Value>, text: &mut Text) {
    if let Some(Value::Array(values)) = out.get("enum") {
        if values.iter().all(Value::is_string) {
            out.entry("type").or_insert_with(|| Value::from("string"));
            if out.get("type") == Some(&Value::from("string")) {
                out.entry("format").or_insert_with(|| Value::from("enum"));
            }
        } else {
            let phrase = format!("one of {}", words::list(values));
            out.remove("enum");
            text.word(phrase);
        }
    }
    if let Some(Value::Array(branches)) = out.get("anyOf")
        && branches.len() > 1
        && branches.iter().all(is_string_enum)
    {
        let mut values = Vec::new();
        let mut described = Vec::new();
        for branch in branches {
            let branch_values = branch["enum"].as_array().cloned().unwrap_or_default();
            if let Some(description) = branch.get("description").and_then(Value::as_str) {
                for value in &branch_values {
                    described.push(format!("{}: {}", words::json(value), sentence(description)));
                }
            }
            values.extend(branch_values);
        }
        out.remove("anyOf");
        out.insert("type".into(), Value::from("string"));
        out.insert("format".into(), Value::from("enum"));
        out.insert("enum".into(), Value::Array(values));
        if !described.is_empty() {
            text.note(format!("Values: {}", described.join(" ")));
        }
    }
}

/// An `anyOf` branch that is itself only an `anyOf` (and words) is replaced by its branches;
/// its description goes to the schema if the schema has none.
fn flatten_unions(out: &mut Map<String, Value>, text: &mut Text) {
    let Some(Value::Array(branches)) = out.get("anyOf") else {
        return;
    };
    let nested = |branch: &Value| {
        branch.as_object().is_some_and(|b| {
            b.get("anyOf").is_some_and(Value::is_array)
                && b.keys()
                    .all(|k| matches!(k.as_str(), "anyOf" | "description" | "title"))
        })
    };
    if !branches.iter().any(nested) {
        return;
    }
    let mut flat = Vec::new();
    for branch in branches {
        if nested(branch) {
            if let Some(description) = branch.get("description").and_then(Value::as_str) {
                text.inherit(description);
            }
            flat.extend(branch["anyOf"].as_array().cloned().unwrap_or_default());
        } else {
            flat.push(branch.clone());
        }
    }
    out.insert("anyOf".into(), Value::Array(flat));
}

/// Whether the schema's `type` is or includes `name`.
pub(crate) fn has_type(object: &Map<String, Value>, name: &str) -> bool {
    match object.get("type") {
        Some(Value::String(t)) => t == name,
        Some(Value::Array(types)) => types.iter().any(|t| t == name),
        _ => false,
    }
}

/// A numeric bound of the schema.
fn bound(object: &Map<String, Value>, keyword: &str) -> Option<f64> {
    object.get(keyword).and_then(Value::as_f64)
}

/// Whether a lowered schema is a string enum (`format: "enum"`) with nothing else but words.
fn is_string_enum(branch: &Value) -> bool {
    let Value::Object(branch) = branch else {
        return false;
    };
    branch.get("type") == Some(&Value::from("string"))
        && branch.get("enum").is_some()
        && branch.keys().all(|k| {
            matches!(
                k.as_str(),
                "type" | "format" | "enum" | "description" | "title"
            )
        })
}

/// `text` ending with a full stop.
fn sentence(text: &str) -> String {
    let text = text.trim();
    if text.ends_with(['.', '!', '?']) {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}
