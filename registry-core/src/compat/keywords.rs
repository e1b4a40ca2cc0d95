//! The keywords each consumer accepts in a schema, and what it refuses.

use super::*;

pub(super) use crate::present::rules::{SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_SINGLES};

/// The place of `keyword` in the schema at `pointer`.
fn at(pointer: &str, keyword: &str) -> String {
    format!("{pointer}/{}", crate::pointer::escape(keyword))
}

impl Checker<'_, '_> {
    /// The rules about the keywords of one schema, family by family.
    pub(super) fn keywords(&mut self, object: &Map<String, Value>, pointer: &str) {
        // `$schema` at the root was checked with the root.
        if !pointer.is_empty() && object.contains_key("$schema") && !self.rules.dollar_schema {
            self.add(
                &at(pointer, "$schema"),
                format!("{}: no `$schema`", self.who()),
                "drop `$schema`",
            );
        }
        self.references(object, pointer);
        self.composition(object, pointer);
        self.nullable(object, pointer);
        self.vocabulary(object, pointer);
        self.format(object, pointer);
        self.closed(object, pointer);
    }

    /// References and definitions: none at all, or local and resolvable (and, where the
    /// consumer says so, without sibling keywords).
    fn references(&mut self, object: &Map<String, Value>, pointer: &str) {
        let who = self.who();
        if self.rules.references == References::Refused {
            for keyword in ["$ref", "$defs", "definitions"] {
                if object.contains_key(keyword) {
                    self.add(
                        &at(pointer, keyword),
                        format!("{who} rejects `{keyword}`: every type must be inlined"),
                        format!(
                            "inline the definitions (a recursive type cannot be offered to {who})"
                        ),
                    );
                }
            }
        } else if let Some(reference) = object.get("$ref") {
            if resolve(self.root, reference).is_none() {
                self.add(
                    &at(pointer, "$ref"),
                    format!("{who}: a `$ref` is local, into the schema's own `$defs`; {reference} is not"),
                    "point `$ref`s at `#/$defs/...` definitions that exist",
                );
            }
            if self.rules.references == References::NoSiblings && object.len() > 1 {
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
    }

    /// Composition: the keywords the consumer does not take.
    fn composition(&mut self, object: &Map<String, Value>, pointer: &str) {
        let who = self.who();
        let composition = &self.rules.composition;
        for keyword in COMPOSITION {
            if object.contains_key(*keyword) && !composition.takes(keyword) {
                let rule = match *keyword {
                    "oneOf" => format!("{who}: `oneOf` must become `anyOf`"),
                    _ => format!("{who}: composition is {}; no `{keyword}`", composition.said),
                };
                self.add(
                    &at(pointer, keyword),
                    rule,
                    "rewrite the schema with `anyOf`, or check the condition in the tool's body",
                );
            }
        }
    }

    /// How `null` is said: with `nullable: true` only, or never with it.
    fn nullable(&mut self, object: &Map<String, Value>, pointer: &str) {
        let who = self.who();
        if self.rules.null == Null::TypeUnion {
            if object.get("nullable").is_some() {
                self.add(
                    &at(pointer, "nullable"),
                    format!("{who}: a nullable type is `type: [T, \"null\"]` or `anyOf` with `{{\"type\": \"null\"}}`, not `nullable`"),
                    "use a type union with \"null\"",
                );
            }
            return;
        }
        if let Some(Value::Array(_)) = object.get("type") {
            self.add(
                &at(pointer, "type"),
                format!("{who}: no type arrays; a nullable type is `nullable: true`"),
                "give one type, with `nullable: true` for `null`",
            );
        }
        if let Some(Value::Array(branches)) = object.get("anyOf")
            && branches
                .iter()
                .any(|b| b.get("type") == Some(&Value::from("null")))
        {
            self.add(
                &at(pointer, "anyOf"),
                format!(
                    "{who}: `null` is said with `nullable: true`, not a `{{\"type\": \"null\"}}` branch"
                ),
                "drop the null branch and add `nullable: true`",
            );
        }
        if let Some(Value::Array(values)) = object.get("enum")
            && values.contains(&Value::Null)
        {
            self.add(
                &at(pointer, "enum"),
                format!("{who}: `null` is said with `nullable: true`, not in an `enum`"),
                "add `nullable: true`",
            );
        }
    }

    /// The keywords the consumer does not take: `const`, `additionalProperties`, those outside
    /// its fields or among those it refuses, `default` in strict mode, bounds under an optional
    /// `strict: true`.
    fn vocabulary(&mut self, object: &Map<String, Value>, pointer: &str) {
        let who = self.who();
        if !self.rules.const_keyword && object.contains_key("const") {
            self.add(
                &at(pointer, "const"),
                format!("{who}: no `const`"),
                "use a one-value `enum`",
            );
        }
        if !self.rules.additional_properties && object.contains_key("additionalProperties") {
            self.add(
                &at(pointer, "additionalProperties"),
                format!(
                    "{who}: `additionalProperties` is rejected in `{}`",
                    self.rules.tool.schema_key
                ),
                "drop it (the canonical schema still closes the object at call time)",
            );
        }
        match &self.rules.keywords {
            Keywords::All => {}
            Keywords::Fields { fields, said, .. } => {
                for keyword in object.keys() {
                    if !fields.contains(&keyword.as_str()) && !self.reported_elsewhere(keyword) {
                        self.add(
                            &at(pointer, keyword),
                            format!("{who}: `{keyword}` is not a field of {who}'s schema ({said})"),
                            "move the constraint into the description",
                        );
                    }
                }
            }
            Keywords::Refusing { refused, said, .. } => {
                for keyword in *refused {
                    if object.contains_key(*keyword) {
                        self.add(
                            &at(pointer, keyword),
                            format!("{who}: `{keyword}` is not taken ({said})"),
                            "move the constraint into the description",
                        );
                    }
                }
            }
        }
        if self.strict() && object.contains_key("default") {
            self.add(
                &at(pointer, "default"),
                format!("{who}: `default` is not permitted"),
                "move the default into the description",
            );
        }
        if self.flagged_strict {
            for keyword in BOUNDS {
                if object.contains_key(*keyword) {
                    self.add(
                        &at(pointer, keyword),
                        format!(
                            "{who} with `strict: true`: no numeric or length bounds (`{keyword}`)"
                        ),
                        "move the constraint into the description, or drop `strict`",
                    );
                }
            }
        }
    }

    /// Whether another rule reports `keyword` where the consumer does not take it.
    fn reported_elsewhere(&self, keyword: &str) -> bool {
        let rules = self.rules;
        match keyword {
            "$ref" | "$defs" | "definitions" => rules.references == References::Refused,
            "$schema" => !rules.dollar_schema,
            "const" => !rules.const_keyword,
            "additionalProperties" => !rules.additional_properties,
            _ => COMPOSITION.contains(&keyword) && !rules.composition.takes(keyword),
        }
    }

    /// The `format`: only those the consumer takes (for some, by type).
    fn format(&mut self, object: &Map<String, Value>, pointer: &str) {
        let Some(Value::String(format)) = object.get("format") else {
            return;
        };
        let (allowed, list) = match &self.rules.formats {
            Formats::Any => (true, String::new()),
            Formats::Only(taken) => (taken.contains(&format.as_str()), taken.join(", ")),
            Formats::ByType {
                strings,
                numbers,
                said,
            } => {
                let numeric = types_of(object)
                    .iter()
                    .any(|t| t == "integer" || t == "number");
                let taken = if numeric { numbers } else { strings };
                (taken.contains(&format.as_str()), (*said).to_owned())
            }
        };
        if !allowed {
            self.add(
                &at(pointer, "format"),
                format!(
                    "{}: the format {format:?} is not taken (only {list})",
                    self.who()
                ),
                "drop the format and say it in the description",
            );
        }
    }

    /// Strict mode (and an optional `strict: true`): closed objects, every property required,
    /// no schema without a type.
    fn closed(&mut self, object: &Map<String, Value>, pointer: &str) {
        let who = self.who();
        let is_object =
            types_of(object).iter().any(|t| t == "object") || object.contains_key("properties");
        if (self.strict() || self.flagged_strict) && is_object {
            let closed = object.get("additionalProperties") == Some(&Value::Bool(false));
            if !closed {
                self.add(
                    pointer,
                    format!("{who}: every object is closed (`additionalProperties: false`)"),
                    "close the object (a map cannot be offered in strict mode)",
                );
            }
        }
        if !self.strict() {
            return;
        }
        if let Some(Value::Object(properties)) = object.get("properties") {
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
                    &at(pointer, "required"),
                    format!(
                        "{who}: `required` lists every property (an optional one is nullable); \
                         missing: {}",
                        missing.join(", ")
                    ),
                    "require every property, with a type union with \"null\" for optional ones",
                );
            }
        }
        let typed = crate::present::rules::TYPING
            .iter()
            .any(|k| object.contains_key(*k));
        if !typed {
            self.add(
                pointer,
                format!(
                    "{who}: every object is closed, and a schema without a type accepts open objects"
                ),
                "give the value a concrete type",
            );
        }
    }
}
