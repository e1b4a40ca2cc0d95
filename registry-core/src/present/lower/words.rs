//! Constraints in words, for the descriptions of schemas whose profile cannot express them.

use serde_json::Value;

/// The description of one schema being lowered: its own text, notes (values of an enum,
/// a default) and the constraints moved into it.
pub(crate) struct Text {
    base: Option<String>,
    notes: Vec<String>,
    words: Vec<String>,
}

impl Text {
    pub(crate) fn new(base: Option<&str>) -> Self {
        Text {
            base: base.map(str::to_owned),
            notes: Vec::new(),
            words: Vec::new(),
        }
    }

    /// Takes `description` as the text when there is none.
    pub(crate) fn inherit(&mut self, description: &str) {
        if self.base.as_deref().is_none_or(|b| b.trim().is_empty()) {
            self.base = Some(description.to_owned());
        }
    }

    /// Adds a constraint, e.g. "at most 100 characters".
    pub(crate) fn word(&mut self, phrase: String) {
        if !self.words.contains(&phrase) {
            self.words.push(phrase);
        }
    }

    /// Adds a constraint before the others (what the value is comes before its bounds).
    pub(crate) fn word_first(&mut self, phrase: String) {
        if !self.words.contains(&phrase) {
            self.words.insert(0, phrase);
        }
    }

    /// Adds a whole sentence.
    pub(crate) fn note(&mut self, sentence: String) {
        if !self.notes.contains(&sentence) {
            self.notes.push(sentence);
        }
    }

    /// The description: the text, then the notes, then "Constraints: ...".
    pub(crate) fn finish(self) -> Option<String> {
        let base = self.base.unwrap_or_default();
        let base = base.trim_end();
        let mut added = self.notes;
        if !self.words.is_empty() {
            added.push(format!("Constraints: {}.", self.words.join("; ")));
        }
        if added.is_empty() {
            return (!base.is_empty()).then(|| base.to_owned());
        }
        let added = added.join(" ");
        if base.is_empty() {
            return Some(added);
        }
        let stop = if base.ends_with(['.', '!', '?', ':']) {
            ""
        } else {
            "."
        };
        let separator = if base.contains('\n') { "\n\n" } else { " " };
        Some(format!("{base}{stop}{separator}{added}"))
    }
}

/// Compact JSON.
pub(crate) fn json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Values as compact JSON, separated by commas.
pub(crate) fn list(values: &[Value]) -> String {
    values.iter().map(json).collect::<Vec<_>>().join(", ")
}

/// `n` `thing`s, with the plural `things`.
fn count(value: &Value, thing: &str, things: &str) -> String {
    if value.as_u64() == Some(1) {
        format!("1 {thing}")
    } else {
        format!("{} {things}", json(value))
    }
}

/// A constraint keyword in words; `None` when it constrains nothing (`uniqueItems: false`).
pub(crate) fn constraint(keyword: &str, value: &Value) -> Option<String> {
    let v = json(value);
    Some(match keyword {
        "minimum" => format!("at least {v}"),
        "maximum" => format!("at most {v}"),
        "exclusiveMinimum" => format!("greater than {v}"),
        "exclusiveMaximum" => format!("less than {v}"),
        "multipleOf" => format!("a multiple of {v}"),
        "minLength" => format!("at least {}", count(value, "character", "characters")),
        "maxLength" => format!("at most {}", count(value, "character", "characters")),
        "pattern" => match value.as_str() {
            Some(pattern) => format!("matching the pattern {pattern}"),
            None => format!("matching the pattern {v}"),
        },
        "minItems" => format!("at least {}", count(value, "item", "items")),
        "maxItems" => format!("at most {}", count(value, "item", "items")),
        "uniqueItems" if value == &Value::Bool(true) => "no duplicate items".to_owned(),
        "uniqueItems" => return None,
        "minProperties" => format!("at least {}", count(value, "property", "properties")),
        "maxProperties" => format!("at most {}", count(value, "property", "properties")),
        "contains" => format!("containing an item matching {v}"),
        "minContains" => format!(
            "at least {} matching the `contains` schema",
            count(value, "item", "items")
        ),
        "maxContains" => format!(
            "at most {} matching the `contains` schema",
            count(value, "item", "items")
        ),
        "propertyNames" => format!("property names matching {v}"),
        "patternProperties" => format!("properties whose names match a pattern checked as {v}"),
        "contentEncoding" => match value.as_str() {
            Some(encoding) => format!("encoded in {encoding}"),
            None => format!("encoded in {v}"),
        },
        "contentMediaType" => match value.as_str() {
            Some(media) => format!("of media type {media}"),
            None => format!("of media type {v}"),
        },
        "contentSchema" => format!("content matching {v}"),
        other => format!("{other}: {v}"),
    })
}

/// The range of an integer `format` (schemars' names and OpenAPI's).
pub(crate) fn integer_range(format: &str) -> Option<(i128, i128)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        "int128" => (i128::MIN, i128::MAX),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        "uint64" | "uint" => (0, u64::MAX.into()),
        "uint128" => (0, i128::MAX),
        _ => return None,
    })
}

/// A `format` in words.
pub(crate) fn format(format: &str) -> String {
    let words = match format {
        "int8" => "a signed 8-bit integer",
        "int16" => "a signed 16-bit integer",
        "int32" => "a signed 32-bit integer",
        "int64" | "int" => "a signed 64-bit integer",
        "int128" => "a signed 128-bit integer",
        "uint8" => "an unsigned 8-bit integer",
        "uint16" => "an unsigned 16-bit integer",
        "uint32" => "an unsigned 32-bit integer",
        "uint64" | "uint" => "an unsigned 64-bit integer",
        "uint128" => "an unsigned 128-bit integer",
        "float" => "a 32-bit floating-point number",
        "double" => "a 64-bit floating-point number",
        "date-time" => "a date and time in RFC 3339 format, e.g. 2026-01-31T09:30:00Z",
        "date" => "a date in RFC 3339 format, e.g. 2026-01-31",
        "time" => "a time in RFC 3339 format, e.g. 09:30:00Z",
        "duration" => "a duration in ISO 8601 format, e.g. P3DT4H",
        "email" => "an email address",
        "idn-email" => "an email address (internationalized)",
        "hostname" => "a host name",
        "idn-hostname" => "a host name (internationalized)",
        "ipv4" => "an IPv4 address",
        "ipv6" => "an IPv6 address",
        "uri" => "an absolute URI",
        "uri-reference" => "a URI reference",
        "iri" => "an absolute IRI",
        "iri-reference" => "an IRI reference",
        "uri-template" => "a URI template",
        "uuid" => "a UUID",
        "json-pointer" => "a JSON pointer",
        "relative-json-pointer" => "a relative JSON pointer",
        "regex" => "a regular expression",
        other => return format!("in the format {other:?}"),
    };
    words.to_owned()
}

/// A tuple's items in words: their types (their schemas are the `anyOf` of `items`).
pub(crate) fn in_order(items: &[Value]) -> String {
    let items: Vec<String> = items
        .iter()
        .map(|item| type_summary(item).unwrap_or_else(|| format!("matching {}", json(item))))
        .collect();
    format!("the items in this order: {}", items.join(", "))
}

/// A map's values in words: their type when that is all their schema says, else the schema.
pub(crate) fn map_values(schema: &Value) -> String {
    let bare = schema
        .as_object()
        .is_some_and(|object| object.keys().all(|k| k == "type"));
    let values = match type_summary(schema) {
        Some(words) if bare => words,
        _ => format!("matching {}", json(schema)),
    };
    format!("an object with any property names, each value {values}")
}

/// The type of a schema in words ("an integer", "a string or null"), if it has one.
fn type_summary(schema: &Value) -> Option<String> {
    let named = |name: &str| match name {
        "string" => "a string",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "a boolean",
        "array" => "an array",
        "object" => "an object",
        _ => "null",
    };
    match schema.get("type")? {
        Value::String(name) => Some(named(name).to_owned()),
        Value::Array(names) => Some(
            names
                .iter()
                .map(|name| named(name.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(" or "),
        ),
        _ => None,
    }
}
