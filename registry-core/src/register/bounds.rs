//! The resource bounds of a tool's schemas, checked when a registry is built.
//!
//! MCP 2026-07-28 takes the full JSON Schema 2020-12 vocabulary in a tool's `inputSchema` and
//! `outputSchema` (SEP-2106), and asks two things of every implementation in return (base
//! protocol, "JSON Schema Usage"):
//!
//! - **`$ref` resolution**: implementations MUST NOT automatically dereference a `$ref` that
//!   resolves to a network URI, and a schema whose external `$ref` cannot be resolved SHOULD be
//!   rejected rather than treated as permissive. Here every `$ref` and `$dynamicRef` is
//!   same-document (`#`, `#/json/pointer`, `#anchor`) and names a schema that exists.
//! - **Composition keyword resource use**: implementations SHOULD bound `anyOf`, `oneOf`,
//!   `allOf`, `if`/`then`/`else` and `$defs` by a maximum depth, a cap on subschemas or a time
//!   budget, so that a schema cannot be a denial of service. Here: [`MAX_DEPTH`] levels of
//!   subschemas, [`MAX_COMPOSITION_DEPTH`] levels of composition inside composition,
//!   [`MAX_SUBSCHEMAS`] subschemas in all, and [`MAX_EXPANDED`] (or [`MAX_EXPANDED_DEPTH`]
//!   levels) once every `$ref` is followed (what validating one value can visit; a recursive
//!   `$ref` counts once).
//!
//! The dialect is 2020-12 (the default of MCP since 2025-11-25, SEP-1613), which is the one
//! arguments are validated against: a `$schema` naming another is refused, not misread.
//!
//! A schema past a bound is a build problem naming the tool, the schema (arguments or
//! result), the place, the keyword, the bound and the fix, so that a schema no client could
//! safely process is never served, and no call is validated against one.

use serde_json::{Map, Value};

use crate::declare::error::BuildProblem;
use crate::declare::source::Source;
use crate::pointer::{child, local_target};
use crate::present::rules::{COMPOSITION, SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_SINGLES};

/// How many levels of subschemas a schema may nest, the root being the first.
pub(crate) const MAX_DEPTH: usize = 64;

/// How many composition and conditional keywords (`allOf`, `anyOf`, `oneOf`, `not`, `if`,
/// `then`, `else`, `dependentSchemas`) a path from the root may pass through.
pub(crate) const MAX_COMPOSITION_DEPTH: usize = 16;

/// How many subschemas a schema may hold in all.
pub(crate) const MAX_SUBSCHEMAS: usize = 10_000;

/// How many subschemas validating a value may reach once every `$ref` is followed (a type
/// used twice in each of many nested types doubles at each level).
pub(crate) const MAX_EXPANDED: usize = 100_000;

/// How deep validating a value may nest schemas once every `$ref` is followed (a recursive
/// one once): the stack the validator needs.
pub(crate) const MAX_EXPANDED_DEPTH: usize = 4 * MAX_DEPTH;

/// The one dialect taken, as `$schema` names it (with or without the empty fragment).
pub(crate) const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// A schema past one of the bounds: where, which keyword, what the bound is and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Beyond {
    /// A JSON pointer into the schema.
    pub(crate) pointer: String,
    /// The keyword at fault.
    pub(crate) keyword: String,
    /// The bound, as a sentence part ("nests subschemas more than 64 levels deep").
    pub(crate) reason: String,
    /// What to do about it.
    pub(crate) fix: String,
}

/// Checks `schema` against every bound; the first one it goes beyond.
pub(crate) fn check(schema: &Value) -> Result<(), Beyond> {
    if let Some(dialect) = schema.get("$schema")
        && dialect.as_str().map(|d| d.trim_end_matches('#')) != Some(DIALECT)
    {
        return Err(Beyond {
            pointer: "/$schema".into(),
            keyword: "$schema".into(),
            reason: format!(
                "declares the dialect {dialect}, and only JSON Schema 2020-12 is taken (arguments \
                 are validated against it)"
            ),
            fix: format!("declare `\"$schema\": \"{DIALECT}\"` or leave `$schema` out"),
        });
    }
    let mut walk = Walk {
        root: schema,
        subschemas: 0,
    };
    walk.schema(schema, "", "", 1, 0)?;
    let mut expansion = Expansion {
        root: schema,
        stack: Vec::new(),
        done: Vec::new(),
        total: 0,
        depth: 0,
        too_deep: false,
    };
    let expanded = expansion.count(schema);
    if expansion.too_deep {
        return Err(Beyond {
            pointer: String::new(),
            keyword: "$ref".into(),
            reason: format!(
                "nests schemas more than {MAX_EXPANDED_DEPTH} levels deep once its `$ref`s are \
                 followed"
            ),
            fix: "flatten the chain of definitions that refer to one another".into(),
        });
    }
    if expanded > MAX_EXPANDED {
        return Err(Beyond {
            pointer: String::new(),
            keyword: "$ref".into(),
            reason: format!(
                "reaches more than {MAX_EXPANDED} subschemas once its `$ref`s are followed"
            ),
            fix: "use fewer shared types at many places, or take large structures as a JSON \
                  string"
                .into(),
        });
    }
    Ok(())
}

/// Checks the `schema` schema (`arguments` or `result`) of the tool `tool`, declared at
/// `site`; the problem, if it goes beyond a bound.
pub(crate) fn problem(
    tool: &str,
    site: Source,
    schema: &'static str,
    value: &Value,
) -> Option<BuildProblem> {
    check(value)
        .err()
        .map(|beyond| BuildProblem::SchemaBeyondBounds {
            tool: tool.to_owned(),
            site,
            schema,
            pointer: beyond.pointer,
            keyword: beyond.keyword,
            reason: beyond.reason,
            fix: beyond.fix,
        })
}

/// The walk over the schema as it is written.
struct Walk<'v> {
    root: &'v Value,
    subschemas: usize,
}

impl Walk<'_> {
    /// Checks `schema` at `pointer` (under `keyword`), `depth` levels deep, below `composed`
    /// composition keywords, and everything inside it.
    fn schema(
        &mut self,
        schema: &Value,
        pointer: &str,
        keyword: &str,
        depth: usize,
        composed: usize,
    ) -> Result<(), Beyond> {
        self.subschemas += 1;
        if self.subschemas > MAX_SUBSCHEMAS {
            return Err(Beyond {
                pointer: pointer.to_owned(),
                keyword: keyword.to_owned(),
                reason: format!("holds more than {MAX_SUBSCHEMAS} subschemas"),
                fix: "split the tool, or take large structures as a JSON string".into(),
            });
        }
        let Value::Object(object) = schema else {
            return Ok(());
        };
        self.references(object, pointer)?;
        for (keyword, inner, at) in subschemas(object, pointer) {
            // `anyOf`, which every consumer takes, is not in `COMPOSITION`.
            let composition = keyword == "anyOf" || COMPOSITION.contains(&keyword);
            let composed = composed + usize::from(composition);
            if composed > MAX_COMPOSITION_DEPTH {
                return Err(Beyond {
                    pointer: at,
                    keyword: keyword.to_owned(),
                    reason: format!(
                        "nests composition (`allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, \
                         `dependentSchemas`) more than {MAX_COMPOSITION_DEPTH} levels deep"
                    ),
                    fix: "flatten the composition, or check the condition in the tool's body"
                        .into(),
                });
            }
            if depth + 1 > MAX_DEPTH {
                return Err(Beyond {
                    pointer: at,
                    keyword: keyword.to_owned(),
                    reason: format!("nests subschemas more than {MAX_DEPTH} levels deep"),
                    fix: "move nested types under `$defs` and refer to them with `$ref`, or \
                          flatten the parameter types"
                        .into(),
                });
            }
            self.schema(inner, &at, keyword, depth + 1, composed)?;
        }
        Ok(())
    }

    /// Every `$ref` and `$dynamicRef` of `object` is same-document and names a schema.
    fn references(&self, object: &Map<String, Value>, pointer: &str) -> Result<(), Beyond> {
        for keyword in ["$ref", "$dynamicRef"] {
            let Some(reference) = object.get(keyword) else {
                continue;
            };
            let at = child(pointer, keyword);
            let Some(text) = reference.as_str() else {
                return Err(Beyond {
                    pointer: at,
                    keyword: keyword.into(),
                    reason: format!("has the reference {reference}, which is not a string"),
                    fix: "write the reference as a string such as \"#/$defs/Name\"".into(),
                });
            };
            if !text.starts_with('#') {
                return Err(Beyond {
                    pointer: at,
                    keyword: keyword.into(),
                    reason: format!(
                        "refers to {text:?}, outside the schema; only same-document references \
                         are taken (`#/$defs/...` or `#anchor`), and MCP forbids dereferencing a \
                         network URI"
                    ),
                    fix: "copy the referenced schema under `$defs` and refer to it as \
                          \"#/$defs/Name\""
                        .into(),
                });
            }
            let Some((target, _)) = local_target(self.root, text) else {
                return Err(Beyond {
                    pointer: at,
                    keyword: keyword.into(),
                    reason: format!("refers to {text:?}, which names no schema in the document"),
                    fix: "point it at a definition that exists (`#/$defs/Name`), or at a \
                          declared `$anchor`"
                        .into(),
                });
            };
            if self.loops(pointer, target) {
                return Err(Beyond {
                    pointer: at,
                    keyword: keyword.into(),
                    reason: format!(
                        "refers to {text:?}, and the `$ref`s from there lead back without \
                         describing a value (a schema that would accept anything)"
                    ),
                    fix: "give the definition a type or keywords of its own".into(),
                });
            }
        }
        Ok(())
    }
}

impl Walk<'_> {
    /// Whether following bare `$ref`s (a `$ref` beside nothing but annotations) from the
    /// schema at `target` comes back to `from` or into a circle of them.
    fn loops(&self, from: &str, target: String) -> bool {
        let mut seen = vec![from.to_owned()];
        let mut at = target;
        // A longer chain is no circle of its own; how deep it nests is bounded when `$ref`s
        // are followed.
        while !seen.contains(&at) && seen.len() <= MAX_DEPTH {
            let Some(Value::Object(object)) = self.root.pointer(&at) else {
                return false;
            };
            let bare = object.keys().all(|key| {
                matches!(
                    key.as_str(),
                    "$ref" | "$anchor" | "$comment" | "title" | "description"
                )
            });
            let next = object.get("$ref").and_then(Value::as_str);
            match (bare, next.and_then(|r| local_target(self.root, r))) {
                (true, Some((next, _))) => {
                    seen.push(at);
                    at = next;
                }
                _ => return false,
            }
        }
        seen.contains(&at)
    }
}

/// The subschemas directly inside `object` (at `pointer`), each with its keyword and pointer,
/// in key order.
fn subschemas<'v>(
    object: &'v Map<String, Value>,
    pointer: &str,
) -> Vec<(&'v str, &'v Value, String)> {
    let mut found = Vec::new();
    for (keyword, value) in object {
        let at = child(pointer, keyword);
        let keyword = keyword.as_str();
        match value {
            Value::Object(map) if SCHEMA_MAPS.contains(&keyword) => {
                found.extend(
                    map.iter()
                        .map(|(name, inner)| (keyword, inner, child(&at, name))),
                );
            }
            Value::Array(list) if SCHEMA_LISTS.contains(&keyword) => found.extend(
                list.iter()
                    .enumerate()
                    .map(|(index, inner)| (keyword, inner, child(&at, &index.to_string()))),
            ),
            Value::Object(_) | Value::Bool(_) if SCHEMA_SINGLES.contains(&keyword) => {
                found.push((keyword, value, at));
            }
            _ => {}
        }
    }
    found
}

/// Counting the subschemas a validation can reach, `$ref`s followed (each target counted once
/// per place it is referred to from; one already on the way, a recursion, once).
struct Expansion<'v> {
    root: &'v Value,
    /// The `$ref` targets being counted, outermost first.
    stack: Vec<String>,
    /// The `$ref` targets counted, with their counts.
    done: Vec<(String, usize)>,
    /// How many counted so far, to stop early.
    total: usize,
    /// How deep the schema being counted is, `$ref`s followed.
    depth: usize,
    /// Whether it went deeper than [`MAX_EXPANDED_DEPTH`].
    too_deep: bool,
}

impl Expansion<'_> {
    /// The subschemas reachable from `schema`, at most a little more than [`MAX_EXPANDED`].
    fn count(&mut self, schema: &Value) -> usize {
        self.total += 1;
        if self.total > MAX_EXPANDED || self.too_deep {
            return 1;
        }
        if self.depth >= MAX_EXPANDED_DEPTH {
            self.too_deep = true;
            return 1;
        }
        self.depth += 1;
        let count = self.count_within_depth(schema);
        self.depth -= 1;
        count
    }

    fn count_within_depth(&mut self, schema: &Value) -> usize {
        let Value::Object(object) = schema else {
            return 1;
        };
        let mut count = 1usize;
        for keyword in ["$ref", "$dynamicRef"] {
            if let Some(reference) = object.get(keyword).and_then(Value::as_str) {
                count = count.saturating_add(self.target(reference));
            }
        }
        for (keyword, inner, _) in subschemas(object, "") {
            if matches!(keyword, "$defs" | "definitions") {
                continue;
            }
            count = count.saturating_add(self.count(inner));
        }
        count
    }

    /// The subschemas reachable through the `$ref` `reference`.
    fn target(&mut self, reference: &str) -> usize {
        let Some((at, target)) = local_target(self.root, reference) else {
            return 0;
        };
        if self.stack.contains(&at) {
            return 1;
        }
        if let Some((_, count)) = self.done.iter().find(|(done, _)| *done == at) {
            let count = *count;
            self.total = self.total.saturating_add(count);
            return count;
        }
        self.stack.push(at.clone());
        let count = self.count(target);
        self.stack.pop();
        self.done.push((at, count));
        count
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// The schema of the conformance scenario `json-schema-2020-12` (SEP-2106), with a `$ref`
    /// to its `$anchor` and the dependent keywords besides.
    pub(crate) fn scenario() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "home": {"$ref": "#addressDef"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "dependentRequired": {"phone": ["name"]},
            "dependentSchemas": {"email": {"properties": {"name": {"minLength": 1}}}},
            "additionalProperties": false
        })
    }

    /// `levels` schemas nested in `keyword` (a single-schema keyword such as `items` or `not`).
    fn nested(keyword: &str, levels: usize) -> Value {
        let mut schema = json!({"type": "string"});
        for _ in 1..levels {
            schema = json!({ keyword: schema });
        }
        json!({"type": "object", "properties": {"p": schema}})
    }

    fn beyond(schema: &Value) -> Beyond {
        check(schema).expect_err("beyond a bound")
    }

    #[test]
    fn the_full_vocabulary_within_the_bounds_is_taken() {
        assert_eq!(check(&scenario()), Ok(()));
        let mut fragment = scenario();
        fragment["$schema"] = json!("https://json-schema.org/draft/2020-12/schema#");
        assert_eq!(check(&fragment), Ok(()));
    }

    #[test]
    fn references_are_same_document_and_name_a_schema() {
        for (reference, says) in [
            ("https://example.com/address.json", "outside the schema"),
            ("address.json#/$defs/a", "outside the schema"),
            ("//example.com/s.json", "outside the schema"),
            ("#/$defs/missing", "names no schema"),
            ("#noSuchAnchor", "names no schema"),
        ] {
            let mut schema = scenario();
            schema["properties"]["address"]["$ref"] = json!(reference);
            let found = beyond(&schema);
            assert_eq!(found.keyword, "$ref", "{reference}");
            assert_eq!(found.pointer, "/properties/address/$ref", "{reference}");
            assert!(found.reason.contains(says), "{reference}: {found:?}");
        }
        let circle = json!({"type": "object",
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a", "title": "B"}},
            "properties": {"p": {"$ref": "#/$defs/a"}}});
        let found = beyond(&circle);
        assert_eq!(found.keyword, "$ref");
        assert!(found.reason.contains("lead back"), "{found:?}");
        let to_itself = json!({"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}}});
        assert_eq!(beyond(&to_itself).pointer, "/$defs/a/$ref");
        let dynamic = json!({"type": "object", "properties": {"p": {"$dynamicRef": "http://x/y"}}});
        assert_eq!(beyond(&dynamic).keyword, "$dynamicRef");
        let number = json!({"type": "object", "properties": {"p": {"$ref": 5}}});
        assert!(beyond(&number).reason.contains("not a string"));
    }

    #[test]
    fn another_dialect_is_refused() {
        let mut schema = scenario();
        schema["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        let found = beyond(&schema);
        assert_eq!(
            (found.keyword.as_str(), found.pointer.as_str()),
            ("$schema", "/$schema")
        );
        assert!(found.reason.contains("draft-07"), "{found:?}");
    }

    #[test]
    fn depth_is_bounded_exactly() {
        // The root, `properties/p`, then `items` nested: `levels` + 1 levels in all.
        assert_eq!(check(&nested("items", MAX_DEPTH - 1)), Ok(()));
        let found = beyond(&nested("items", MAX_DEPTH));
        assert_eq!(found.keyword, "items");
        assert!(
            found.reason.contains("more than 64 levels deep"),
            "{found:?}"
        );
    }

    #[test]
    fn composition_depth_is_bounded_exactly() {
        assert_eq!(check(&nested("not", MAX_COMPOSITION_DEPTH + 1)), Ok(()));
        let found = beyond(&nested("not", MAX_COMPOSITION_DEPTH + 2));
        assert_eq!(found.keyword, "not");
        assert!(found.reason.contains("composition"), "{found:?}");
        let mut conditional = json!({"type": "string"});
        for _ in 0..=MAX_COMPOSITION_DEPTH {
            conditional = json!({"if": {"type": "string"}, "then": conditional});
        }
        let found = beyond(&json!({"type": "object", "properties": {"p": conditional}}));
        assert!(
            ["if", "then"].contains(&found.keyword.as_str()),
            "{found:?}"
        );
    }

    #[test]
    fn subschemas_are_capped() {
        let many: Map<String, Value> = (0..MAX_SUBSCHEMAS)
            .map(|index| (format!("p{index}"), json!({"type": "integer"})))
            .collect();
        let found = beyond(&json!({"type": "object", "properties": many}));
        assert_eq!(found.keyword, "properties");
        assert!(
            found.reason.contains("more than 10000 subschemas"),
            "{found:?}"
        );
    }

    #[test]
    fn references_followed_are_capped_and_recursion_counts_once() {
        // Each definition refers to the one before twice: 2^20 schemas once followed.
        let mut definitions = Map::new();
        definitions.insert("d0".into(), json!({"type": "string"}));
        for level in 1..=20 {
            let previous = format!("#/$defs/d{}", level - 1);
            definitions.insert(
                format!("d{level}"),
                json!({"anyOf": [{"$ref": previous}, {"items": {"$ref": previous}}]}),
            );
        }
        let schema = json!({"type": "object", "$defs": definitions,
            "properties": {"p": {"$ref": "#/$defs/d20"}}});
        let found = beyond(&schema);
        assert_eq!(
            (found.keyword.as_str(), found.pointer.as_str()),
            ("$ref", "")
        );
        assert!(
            found.reason.contains("more than 100000 subschemas"),
            "{found:?}"
        );
        // A chain of definitions, each holding the next: deep once followed.
        let mut chain = Map::new();
        for level in 0..MAX_EXPANDED_DEPTH {
            chain.insert(
                format!("d{level}"),
                json!({"type": "array", "items": {"$ref": format!("#/$defs/d{}", level + 1)}}),
            );
        }
        chain.insert(format!("d{MAX_EXPANDED_DEPTH}"), json!({"type": "string"}));
        let schema = json!({"type": "object", "$defs": chain,
            "properties": {"p": {"$ref": "#/$defs/d0"}}});
        let found = beyond(&schema);
        assert!(
            found.reason.contains("levels deep once its `$ref`s"),
            "{found:?}"
        );
        let tree = json!({"type": "object", "$defs": {"node": {"type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "properties": {"root": {"$ref": "#/$defs/node"}}});
        assert_eq!(check(&tree), Ok(()));
    }
}
