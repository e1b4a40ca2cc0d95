//! The keywords each consumer accepts in a schema, and what it refuses.

use super::*;

/// The keywords of JSON Schema that hold subschemas, by shape.
pub(super) const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
pub(super) const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
pub(super) const SCHEMA_SINGLES: &[&str] = &[
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

/// Composition keywords OpenAI, Anthropic and Gemini refuse (Anthropic takes `allOf`).
pub(super) const COMPOSITION: &[&str] = &[
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

/// Keywords OpenAI refuses beyond composition: the bounds it does not take.
pub(super) const OPENAI_REFUSED: &[&str] = &[
    "minLength",
    "maxLength",
    "pattern",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "propertyNames",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "prefixItems",
    "additionalItems",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
];

/// The fields of Gemini's `Schema` that the rules allow.
pub(super) const GEMINI_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "anyOf",
    "items",
    "default",
    "example",
    "propertyOrdering",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
];

impl Checker<'_, '_> {
    /// The rules about the keywords of one schema.
    pub(super) fn keywords(&mut self, object: &Map<String, Value>, pointer: &str) {
        let who = self.who();
        let profile = self.report.profile;
        let at = |keyword: &str| format!("{pointer}/{}", crate::pointer::escape(keyword));
        if pointer.is_empty() {
            // `$schema` at the root was checked with the root.
        } else if object.contains_key("$schema") && profile != Profile::Mcp {
            self.add(
                &at("$schema"),
                format!("{who}: no `$schema`"),
                "drop `$schema`",
            );
        }
        // References and definitions.
        if self.gemini() {
            for keyword in ["$ref", "$defs", "definitions"] {
                if object.contains_key(keyword) {
                    self.add(
                        &at(keyword),
                        format!("Gemini rejects `{keyword}`: every type must be inlined"),
                        "inline the definitions (a recursive type cannot be offered to Gemini)",
                    );
                }
            }
        } else if let Some(reference) = object.get("$ref") {
            if resolve(self.root, reference).is_none() {
                self.add(
                    &at("$ref"),
                    format!("{who}: a `$ref` is local, into the schema's own `$defs`; {reference} is not"),
                    "point `$ref`s at `#/$defs/...` definitions that exist",
                );
            }
            if self.openai() && object.len() > 1 {
                let siblings: Vec<&str> = object
                    .keys()
                    .filter(|k| *k != "$ref")
                    .map(String::as_str)
                    .collect();
                self.add(
                    pointer,
                    format!(
                        "{who}: a `$ref` may have no sibling keywords (here {})",
                        siblings.join(", ")
                    ),
                    "inline the definition there, or wrap the `$ref` in a one-branch `anyOf`",
                );
            }
        }
        // Composition.
        if profile != Profile::Mcp {
            for keyword in COMPOSITION {
                if object.contains_key(*keyword)
                    && !(profile == Profile::Anthropic && *keyword == "allOf")
                {
                    let rule = match *keyword {
                        "oneOf" => format!("{who}: `oneOf` must become `anyOf`"),
                        _ if profile == Profile::Anthropic => {
                            format!(
                                "Anthropic: composition is `anyOf` and a limited `allOf`; no `{keyword}`"
                            )
                        }
                        _ => format!("{who}: composition is `anyOf` only; no `{keyword}`"),
                    };
                    self.add(&at(keyword), rule, "rewrite the schema with `anyOf`, or check the condition in the tool's body");
                }
            }
        }
        // Nullable encodings.
        if self.gemini() {
            if let Some(Value::Array(_)) = object.get("type") {
                self.add(
                    &at("type"),
                    "Gemini: no type arrays; a nullable type is `nullable: true`",
                    "give one type, with `nullable: true` for `null`",
                );
            }
            if let Some(Value::Array(branches)) = object.get("anyOf")
                && branches
                    .iter()
                    .any(|b| b.get("type") == Some(&Value::from("null")))
            {
                self.add(
                    &at("anyOf"),
                    "Gemini: `null` is said with `nullable: true`, not a `{\"type\": \"null\"}` branch",
                    "drop the null branch and add `nullable: true`",
                );
            }
            if let Some(Value::Array(values)) = object.get("enum")
                && values.contains(&Value::Null)
            {
                self.add(
                    &at("enum"),
                    "Gemini: `null` is said with `nullable: true`, not in an `enum`",
                    "add `nullable: true`",
                );
            }
            if object.contains_key("const") {
                self.add(&at("const"), "Gemini: no `const`", "use a one-value `enum`");
            }
            if object.contains_key("additionalProperties") {
                self.add(
                    &at("additionalProperties"),
                    "Gemini: `additionalProperties` is rejected in `parameters`",
                    "drop it (the canonical schema still closes the object at call time)",
                );
            }
            for keyword in object.keys() {
                let known = GEMINI_FIELDS.contains(&keyword.as_str())
                    || COMPOSITION.contains(&keyword.as_str())
                    || [
                        "$ref",
                        "$defs",
                        "definitions",
                        "$schema",
                        "const",
                        "additionalProperties",
                    ]
                    .contains(&keyword.as_str());
                if !known {
                    self.add(
                        &at(keyword),
                        format!(
                            "Gemini: `{keyword}` is not a field of Gemini's schema (bounds: minimum, \
                             maximum, min/maxItems, min/maxLength)"
                        ),
                        "move the constraint into the description",
                    );
                }
            }
        } else if object.get("nullable").is_some() {
            self.add(
                &at("nullable"),
                format!("{who}: a nullable type is `type: [T, \"null\"]` or `anyOf` with `{{\"type\": \"null\"}}`, not `nullable`"),
                "use a type union with \"null\"",
            );
        }
        if self.openai() {
            for keyword in OPENAI_REFUSED {
                if object.contains_key(*keyword) {
                    self.add(
                        &at(keyword),
                        format!(
                            "{who}: `{keyword}` is not taken (bounds: minimum, maximum, exclusive*, \
                             multipleOf, min/maxItems)"
                        ),
                        "move the constraint into the description",
                    );
                }
            }
            if self.strict && object.contains_key("default") {
                self.add(
                    &at("default"),
                    "OpenAI strict mode: `default` is not permitted",
                    "move the default into the description",
                );
            }
        }
        if self.anthropic_strict {
            for keyword in BOUNDS {
                if object.contains_key(*keyword) {
                    self.add(
                        &at(keyword),
                        format!("Anthropic with `strict: true`: no numeric or length bounds (`{keyword}`)"),
                        "move the constraint into the description, or drop `strict`",
                    );
                }
            }
        }
        // Formats.
        if let Some(Value::String(format)) = object.get("format") {
            let types = types_of(object);
            let allowed = match profile {
                Profile::Mcp => true,
                Profile::OpenAiChat { .. } | Profile::OpenAiResponses { .. } => {
                    OPENAI_FORMATS.contains(&format.as_str())
                }
                Profile::Anthropic => ANTHROPIC_FORMATS.contains(&format.as_str()),
                Profile::Gemini => {
                    let numeric = types.iter().any(|t| t == "integer" || t == "number");
                    if numeric {
                        GEMINI_NUMBER_FORMATS.contains(&format.as_str())
                    } else {
                        ["enum", "date-time"].contains(&format.as_str())
                    }
                }
            };
            if !allowed {
                let list = match profile {
                    Profile::Gemini => "`enum` and `date-time` for strings, int32, int64, float and double for numbers".to_owned(),
                    Profile::Anthropic => ANTHROPIC_FORMATS.join(", "),
                    Profile::OpenAiChat { .. } | Profile::OpenAiResponses { .. } | Profile::Mcp => {
                        OPENAI_FORMATS.join(", ")
                    }
                };
                self.add(
                    &at("format"),
                    format!("{who}: the format {format:?} is not taken (only {list})"),
                    "drop the format and say it in the description",
                );
            }
        }
        // Closed objects and required properties.
        let is_object =
            types_of(object).iter().any(|t| t == "object") || object.contains_key("properties");
        if (self.strict || self.anthropic_strict) && is_object {
            let closed = object.get("additionalProperties") == Some(&Value::Bool(false));
            if !closed {
                self.add(
                    pointer,
                    format!("{who}: every object is closed (`additionalProperties: false`)"),
                    "close the object (a map cannot be offered in strict mode)",
                );
            }
        }
        if self.strict
            && let Some(Value::Object(properties)) = object.get("properties")
        {
            let required: BTreeSet<&str> = object
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let missing: Vec<&str> = properties
                .keys()
                .map(String::as_str)
                .filter(|n| !required.contains(n))
                .collect();
            if !missing.is_empty() {
                self.add(
                    &at("required"),
                    format!(
                        "OpenAI strict mode: `required` lists every property (an optional one is \
                         nullable); missing: {}",
                        missing.join(", ")
                    ),
                    "require every property, with a type union with \"null\" for optional ones",
                );
            }
        }
        if self.strict {
            let typed = [
                "type",
                "anyOf",
                "oneOf",
                "allOf",
                "$ref",
                "enum",
                "const",
                "properties",
            ]
            .iter()
            .any(|k| object.contains_key(*k));
            if !typed {
                self.add(
                    pointer,
                    "OpenAI strict mode: every object is closed, and a schema without a type accepts open objects",
                    "give the value a concrete type",
                );
            }
        }
    }
}
