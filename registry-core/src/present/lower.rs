//! Lowering: from a tool's canonical parameters schema to what one profile accepts.
//!
//! The canonical schema (JSON Schema 2020-12, see [`schema`](crate::declare::schema)) is what arguments
//! are validated against when a call arrives, whatever the profile. Lowering rewrites it into
//! what a profile's consumer takes (the rules of `docs/providers.md`, as the facts
//! of each provider's [`Rules`] in its file of `provider/`):
//!
//! - **MCP** takes the canonical schema unchanged: the full JSON Schema 2020-12 vocabulary
//!   (SEP-2106: composition, conditionals, `$anchor`, `$ref`/`$defs`, `$schema`), within the
//!   resource bounds every tool's schemas are checked against when a registry is built
//!   ([`bounds`](crate::register::bounds)).
//! - **OpenAI** (Chat Completions and Responses): no `$schema` nor `$anchor` (a `$ref` to an
//!   anchor points at its definition in `$defs`); `oneOf` becomes `anyOf`; an
//!   `allOf` is merged into its schema; a `$ref` keeps no sibling keywords (its definition is
//!   inlined there, or, for a recursive one, it is wrapped in a one-branch `anyOf`); only the
//!   formats and bounds OpenAI takes are kept. In **strict** mode, moreover, every object is
//!   closed, `required` lists every property, a property that was optional becomes nullable,
//!   `default` is described, and OpenAI's size limits are checked.
//! - **Anthropic**: no `$schema`; every `$ref` is inlined, one to an `$anchor` too (a recursive
//!   type cannot be); `oneOf`
//!   becomes `anyOf`; only Anthropic's formats are kept.
//! - **Gemini**: no `$schema`, `$defs` or `$ref` (everything inlined; a recursive type cannot
//!   be), no `additionalProperties`, no `const` or `allOf`, nullable as `nullable: true`, string
//!   enums as `format: "enum"`, integer formats mapped to `int32`/`int64`, only Gemini's bounds.
//!
//! A constraint a profile cannot express is moved into the description of the schema that had
//! it, in words ("Constraints: an unsigned 32-bit integer; at most 100 characters."): the model
//! still reads it, and the canonical schema still enforces it. What cannot be expressed at all
//! (a recursive type without `$ref`, a map in strict mode) is an [`Incompatibility`] naming the
//! tool, the place in the canonical schema, the rule and the fix.
//!
//! The output is deterministic: objects are `serde_json` maps, sorted by key.

mod keywords;
mod merge;
mod refs;
mod strict;
mod words;

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::{Map, Value};

use self::merge::nullable_keyword;
use crate::present::provider::{Null, Rules};
use crate::shared::profile::{Incompatibility, Profile};

/// The parameters schema of the tool `tool` as `profile` takes it.
pub(crate) fn lower(
    profile: Profile,
    tool: &str,
    parameters: &Value,
) -> Result<Value, Vec<Incompatibility>> {
    let rules = profile.rules();
    if rules.canonical {
        return Ok(parameters.clone());
    }
    let mut lowering = Lowering::new(profile, tool, parameters);
    let mut root = lowering.node(parameters, "");
    lowering.attach_definitions(&mut root);
    lowering.check_root(&root);
    if let Some(limits) = &rules.strict {
        strict::check_limits(&mut lowering, &root, limits);
    }
    if lowering.problems.is_empty() {
        Ok(root)
    } else {
        Err(lowering.problems)
    }
}

/// How many schema nodes inlining may produce before a schema is judged too large (a type
/// used at many places of many types can grow exponentially when inlined).
const NODE_BUDGET: usize = 100_000;

/// How deep schemas may nest (a guard for the stack; strict mode allows 10 levels of objects).
const MAX_DEPTH: usize = 200;

/// The state of one lowering.
pub(crate) struct Lowering<'a> {
    pub(crate) profile: Profile,
    /// What the profile takes.
    pub(crate) rules: &'static Rules,
    tool: &'a str,
    /// The canonical `$defs` (or `definitions`).
    definitions: Option<&'a Map<String, Value>>,
    /// The definitions being inlined, outermost first: a `$ref` to one of them is recursive.
    stack: Vec<String>,
    /// Definitions referenced by the `$ref`s kept in the output (OpenAI).
    used: BTreeSet<String>,
    /// Recursive types already reported.
    recursive: BTreeSet<String>,
    /// Schema nodes produced so far.
    nodes: usize,
    /// How deep the current node is.
    depth: usize,
    pub(crate) problems: Vec<Incompatibility>,
}

impl<'a> Lowering<'a> {
    fn new(profile: Profile, tool: &'a str, parameters: &'a Value) -> Self {
        let definitions = parameters
            .get("$defs")
            .or_else(|| parameters.get("definitions"))
            .and_then(Value::as_object);
        Lowering {
            profile,
            rules: profile.rules(),
            tool,
            definitions,
            stack: Vec::new(),
            used: BTreeSet::new(),
            recursive: BTreeSet::new(),
            nodes: 0,
            depth: 0,
            problems: Vec::new(),
        }
    }

    /// Whether the profile is in strict mode.
    pub(crate) fn strict(&self) -> bool {
        self.rules.strict.is_some()
    }

    /// The consumer's name as the rules say it.
    pub(crate) fn consumer(&self) -> &'static str {
        self.rules.consumer
    }

    /// Records an incompatibility at `pointer` (into the canonical schema).
    pub(crate) fn problem(
        &mut self,
        pointer: &str,
        rule: impl Into<String>,
        fix: impl Into<String>,
    ) {
        let problem = Incompatibility {
            profile: self.profile,
            tool: self.tool.to_owned(),
            pointer: pointer.to_owned(),
            rule: rule.into(),
            fix: fix.into(),
        };
        if !self.problems.contains(&problem) {
            self.problems.push(problem);
        }
    }

    /// Lowers one schema found at `pointer` in the canonical schema.
    pub(crate) fn node(&mut self, schema: &Value, pointer: &str) -> Value {
        if self.depth >= MAX_DEPTH {
            self.problem(
                pointer,
                format!(
                    "{}: schemas nest more than {MAX_DEPTH} levels deep",
                    self.consumer()
                ),
                "flatten the parameter types",
            );
            return Value::Object(Map::new());
        }
        self.depth += 1;
        let lowered = self.node_within_depth(schema, pointer);
        self.depth -= 1;
        lowered
    }

    fn node_within_depth(&mut self, schema: &Value, pointer: &str) -> Value {
        self.nodes += 1;
        if self.nodes == NODE_BUDGET {
            self.problem(
                pointer,
                format!(
                    "{}: the schema grows beyond {NODE_BUDGET} nodes once its `$ref`s are inlined",
                    self.consumer()
                ),
                "use fewer shared types at many places, or take large structures as a JSON string",
            );
        }
        if self.nodes >= NODE_BUDGET {
            return Value::Object(Map::new());
        }
        match schema {
            Value::Bool(true) => self.keywords(&Map::new(), pointer),
            Value::Bool(false) => {
                self.problem(
                    pointer,
                    format!(
                        "{}: the schema `false` (no value is valid) cannot be expressed",
                        self.consumer()
                    ),
                    "remove the parameter or field that can have no value",
                );
                Value::Object(Map::new())
            }
            Value::Object(object) => {
                let object = self.normalize(object, pointer);
                if object.contains_key("$ref") {
                    self.reference(&object, pointer)
                } else {
                    self.keywords(&object, pointer)
                }
            }
            other => other.clone(),
        }
    }

    /// Rewrites, before lowering, what is easier to rewrite in the canonical form: a merged
    /// `allOf`, and nullable types where the profile says `nullable: true` (Gemini), whose one
    /// remaining branch is merged into the schema (so that a `$ref` beside the schema's
    /// description is then inlined as any other).
    fn normalize<'v>(
        &mut self,
        object: &'v Map<String, Value>,
        pointer: &str,
    ) -> Cow<'v, Map<String, Value>> {
        let mut object = Cow::Borrowed(object);
        if object.contains_key("allOf") {
            object = Cow::Owned(self.merge_all_of(&object, pointer));
        }
        if self.rules.null == Null::Nullable
            && let Some(nullable) = nullable_keyword(&object)
        {
            object = Cow::Owned(nullable);
        }
        object
    }

    /// The root must be an object schema (in strict mode, not a union nor nullable).
    fn check_root(&mut self, root: &Value) {
        let is_object = root.get("type") == Some(&Value::from("object"));
        let union = root.get("anyOf").is_some() || root.get("oneOf").is_some();
        if !is_object || (self.strict() && union) {
            let rule = if self.strict() {
                format!(
                    "{}: the root must be `type: \"object\"`, not `anyOf` nor nullable",
                    self.consumer()
                )
            } else {
                format!("{}: the root must be `type: \"object\"`", self.consumer())
            };
            self.problem(
                "",
                rule,
                "take the arguments as named parameters (an object), not as one union or scalar",
            );
        }
    }
}

pub(crate) use crate::pointer::{child, escape};

impl crate::execute::tool::Tool {
    /// The parameters schema lowered for `profile`, built once per profile.
    pub(crate) fn lowered(&self, profile: Profile) -> &Result<Value, Vec<Incompatibility>> {
        self.lowered_cell(profile)
            .get_or_init(|| lower(profile, self.name(), &self.definition_ref().parameters))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::lower;
    use crate::shared::profile::Profile;

    /// JSON Schema 2020-12 as SEP-2106 lets MCP take it.
    fn full() -> Value {
        crate::register::bounds::tests::scenario()
    }

    /// The keywords of the problems of lowering `schema` for `profile` (the last token of
    /// each problem's pointer).
    fn refused(profile: Profile, schema: &Value) -> Vec<String> {
        let problems = lower(profile, "contact", schema).expect_err("incompatible");
        problems
            .iter()
            .inspect(|problem| assert_eq!(problem.tool, "contact"))
            .map(|problem| problem.pointer.rsplit('/').next().unwrap_or("").to_owned())
            .collect()
    }

    #[test]
    fn mcp_keeps_the_whole_vocabulary_as_declared() {
        assert_eq!(lower(Profile::Mcp, "contact", &full()), Ok(full()));
    }

    /// The conditional keywords no lowered profile takes.
    const CONDITIONALS: [&str; 5] = [
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
    ];

    #[test]
    fn the_profiles_without_conditionals_name_each_keyword_they_cannot_take() {
        for &profile in Profile::ALL {
            if profile == Profile::Mcp {
                continue;
            }
            let keywords = refused(profile, &full());
            for keyword in CONDITIONALS {
                assert!(
                    keywords.iter().any(|k| k == keyword),
                    "{profile}: {keywords:?}"
                );
            }
            // Anthropic takes a limited `allOf`; the others merge this one (its one branch adds
            // an `anyOf` to the root).
            assert!(
                !keywords.iter().any(|k| k == "allOf"),
                "{profile}: {keywords:?}"
            );
        }
    }

    #[test]
    fn a_ref_to_an_anchor_is_lowered_to_its_definition_where_anchors_are_dropped() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"city": {"type": "string"}}, "additionalProperties": false}},
            "properties": {"home": {"$ref": "#addressDef"}},
            "additionalProperties": false
        });
        assert_eq!(lower(Profile::Mcp, "t", &schema), Ok(schema.clone()));
        // OpenAI keeps `$ref`s: to the definition by its place, without `$anchor`.
        let openai = lower(Profile::OpenAiChat { strict: false }, "t", &schema).expect("lowers");
        assert_eq!(
            openai["properties"]["home"],
            json!({"$ref": "#/$defs/address"})
        );
        assert_eq!(openai["$defs"]["address"].get("$anchor"), None);
        assert_eq!(openai.get("$schema"), None);
        // Anthropic and Gemini inline it.
        for profile in [Profile::Anthropic, Profile::Gemini] {
            let lowered = lower(profile, "t", &schema).expect("lowers");
            let home = &lowered["properties"]["home"];
            assert_eq!(
                home["properties"]["city"]["type"], "string",
                "{profile}: {lowered}"
            );
            assert!(
                !lowered.to_string().contains("anchor"),
                "{profile}: {lowered}"
            );
        }
    }
}
