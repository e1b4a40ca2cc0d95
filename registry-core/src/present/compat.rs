//! The compatibility checker: the rules of each profile (`shared/reference/providers.md`),
//! applied to exported JSON.
//!
//! It checks what is exported, independently of how it was produced (it shares no code with
//! the lowering), so it can run over golden files as well as over a live registry
//! ([`Registry::check`](crate::Registry::check) runs it on every export). The rules:
//!
//! | rule | checked |
//! | --- | --- |
//! | tool object | the consumer's shape: MCP `name`/`inputSchema`; OpenAI Chat `{type: "function", function: {name, parameters}}`; Responses `{type: "function", name, parameters}`; Anthropic `name`/`input_schema`; Gemini `name`, `parameters?`; OpenAI's `strict` flag matches the profile |
//! | tool names | the consumer's pattern (the stricter where sources disagree: 64 characters for Anthropic and Gemini), and the rule every consumer accepts at once, `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`; unique in a list |
//! | root | `type: "object"`; OpenAI strict: not `anyOf`, not nullable |
//! | `$schema` | MCP only |
//! | `$defs` / `$ref` | local and resolvable; OpenAI: no sibling keywords beside a `$ref`; Anthropic: not recursive; Gemini: none at all |
//! | closed objects | OpenAI strict (and Anthropic `strict: true`): every object `additionalProperties: false`; Gemini: no `additionalProperties` anywhere |
//! | `required` | OpenAI strict: every property |
//! | nullable | Gemini: `nullable: true`, no type arrays, no `{type: "null"}` branch, no `null` in an `enum`; the others: no `nullable` keyword |
//! | composition | MCP: any; OpenAI: `anyOf` only; Anthropic: `anyOf` and `allOf`; Gemini: `anyOf` only, no `const` |
//! | `format` | OpenAI: date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid; Anthropic: those and uri; Gemini: `enum`/`date-time` on strings, int32/int64/float/double on numbers |
//! | bounds | OpenAI: minimum, maximum, exclusive*, multipleOf, min/maxItems; Gemini: minimum, maximum, min/maxItems, min/maxLength (and only Gemini's schema fields); Anthropic `strict: true`: none |
//! | limits | OpenAI strict: 5000 properties, 10 levels of nested objects, 1000 enum values, 120,000 characters of names and enum values; OpenAI: 128 tools; Gemini: 512 declarations |
//!
//! Each violation is an [`Incompatibility`] whose `pointer` is a JSON pointer into the tool
//! object as exported (for Gemini, into the function declaration), e.g.
//! `/function/parameters/properties/limit/format`; for rules about the whole list (how many
//! tools), the tool is `(tool list)` and the pointer is empty.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::present::profile::{Incompatibility, Profile};
use crate::present::rules::{
    ANTHROPIC_FORMATS, GEMINI_NUMBER_FORMATS, OPENAI_FORMATS, STRICT_MAX_CHARS,
    STRICT_MAX_ENUM_VALUES, STRICT_MAX_NESTING, STRICT_MAX_PROPERTIES,
};

/// What a tool name must match for every consumer at once.
pub const PORTABLE_NAME: &str = "^[A-Za-z_][A-Za-z0-9_-]{0,63}$";

/// The tool of list-level rules.
const LIST: &str = "(tool list)";

/// Every rule of `profile` that one exported tool object breaks (an element of the list
/// [`Run::export`](crate::Run::export) returns; for Gemini, one function declaration).
pub fn check_tool(profile: Profile, tool: &Value) -> Vec<Incompatibility> {
    let mut report = Report {
        profile,
        tool: tool_name(profile, tool).unwrap_or_default().to_owned(),
        found: Vec::new(),
    };
    check_object(&mut report, tool);
    report.found
}

/// Every rule of `profile` that a whole exported tool list breaks: each tool's, and the
/// rules about the list (how many tools, unique names).
pub fn check_tools(profile: Profile, tools: &Value) -> Vec<Incompatibility> {
    let mut report = Report {
        profile,
        tool: LIST.to_owned(),
        found: Vec::new(),
    };
    let Value::Array(list) = tools else {
        report.add(
            "",
            "the tool list must be a JSON array",
            "export with `Run::export`",
        );
        return report.found;
    };
    let mut objects: Vec<&Value> = Vec::new();
    if profile == Profile::Gemini {
        for (index, entry) in list.iter().enumerate() {
            match entry.get("functionDeclarations") {
                Some(Value::Array(declarations)) => objects.extend(declarations),
                _ => report.add(
                    &format!("/{index}"),
                    "Gemini: each `Tool` of the list holds `functionDeclarations`, an array",
                    "put the function declarations in `{\"functionDeclarations\": [...]}`",
                ),
            }
        }
    } else {
        objects.extend(list);
    }
    let limit = match profile {
        Profile::OpenAiChat { .. } | Profile::OpenAiResponses { .. } => Some(128),
        Profile::Gemini => Some(512),
        Profile::Mcp | Profile::Anthropic => None,
    };
    if let Some(limit) = limit
        && objects.len() > limit
    {
        report.add(
            "",
            format!(
                "{}: at most {limit} tools in a request; this list has {}",
                consumer(profile),
                objects.len()
            ),
            "show each run fewer tools (scopes, an access policy), or split the agent",
        );
    }
    let mut seen = BTreeSet::new();
    let mut found = report.found;
    for object in objects {
        let name = tool_name(profile, object);
        if let Some(name) = name
            && !seen.insert(name)
        {
            found.push(Incompatibility {
                profile,
                tool: name.to_owned(),
                pointer: name_pointer(profile).to_owned(),
                rule: format!("{}: tool names must be unique in a list", consumer(profile)),
                fix: "give each tool its own name".into(),
            });
        }
        found.extend(check_tool(profile, object));
    }
    found
}

/// The consumer's name as the rules say it.
fn consumer(profile: Profile) -> &'static str {
    match profile {
        Profile::Mcp => "MCP",
        Profile::OpenAiChat { strict: true } | Profile::OpenAiResponses { strict: true } => {
            "OpenAI strict mode"
        }
        Profile::OpenAiChat { .. } | Profile::OpenAiResponses { .. } => "OpenAI",
        Profile::Anthropic => "Anthropic",
        Profile::Gemini => "Gemini",
    }
}

/// Where the name is in the profile's tool object.
fn name_pointer(profile: Profile) -> &'static str {
    match profile {
        Profile::OpenAiChat { .. } => "/function/name",
        _ => "/name",
    }
}

/// The tool's name, wherever the profile puts it.
fn tool_name(profile: Profile, tool: &Value) -> Option<&str> {
    match profile {
        Profile::OpenAiChat { .. } => tool.get("function")?.get("name")?.as_str(),
        _ => tool.get("name")?.as_str(),
    }
}

/// The incompatibilities found for one tool.
struct Report {
    profile: Profile,
    tool: String,
    found: Vec<Incompatibility>,
}

impl Report {
    fn add(&mut self, pointer: &str, rule: impl Into<String>, fix: impl Into<String>) {
        self.found.push(Incompatibility {
            profile: self.profile,
            tool: self.tool.clone(),
            pointer: pointer.to_owned(),
            rule: rule.into(),
            fix: fix.into(),
        });
    }
}

/// The tool object's shape, its name, and its schemas.
fn check_object(report: &mut Report, tool: &Value) {
    let profile = report.profile;
    let who = consumer(profile);
    let Value::Object(object) = tool else {
        report.add(
            "",
            format!("{who}: a tool must be a JSON object"),
            "export with `Run::export`",
        );
        return;
    };
    let (holder, holder_pointer): (Option<&Map<String, Value>>, &str) = match profile {
        Profile::OpenAiChat { .. } => {
            if object.get("type") != Some(&Value::from("function")) {
                report.add(
                    "/type",
                    "OpenAI: a function tool has `type: \"function\"`",
                    "set `type`",
                );
            }
            (
                object.get("function").and_then(Value::as_object),
                "/function",
            )
        }
        Profile::OpenAiResponses { .. } => {
            if object.get("type") != Some(&Value::from("function")) {
                report.add(
                    "/type",
                    "OpenAI: a function tool has `type: \"function\"`",
                    "set `type`",
                );
            }
            (Some(object), "")
        }
        _ => (Some(object), ""),
    };
    let Some(holder) = holder else {
        report.add(
            "/function",
            "OpenAI Chat Completions: a tool holds its definition under `function`",
            "export with `Run::export`",
        );
        return;
    };
    check_name(
        report,
        holder.get("name"),
        &format!("{holder_pointer}/name"),
    );
    if let Some(description) = holder.get("description")
        && !description.is_string()
    {
        report.add(
            &format!("{holder_pointer}/description"),
            format!("{who}: a tool's description is a string"),
            "give the tool a text description",
        );
    }
    let strict_flag = holder.get("strict");
    let (schema_key, required_schema) = match profile {
        Profile::Mcp => ("inputSchema", true),
        Profile::OpenAiChat { .. } | Profile::OpenAiResponses { .. } => ("parameters", true),
        Profile::Anthropic => ("input_schema", true),
        Profile::Gemini => ("parameters", false),
    };
    let mut anthropic_strict = false;
    match profile {
        Profile::OpenAiChat { strict } | Profile::OpenAiResponses { strict } => {
            let flagged = strict_flag == Some(&Value::Bool(true));
            if flagged != strict {
                report.add(
                    &format!("{holder_pointer}/strict"),
                    if strict {
                        "OpenAI strict mode: the tool must say `strict: true`"
                    } else {
                        "OpenAI (non-strict): the tool must not say `strict: true`, or its schema \
                         must follow strict mode's rules"
                    },
                    "export with the matching profile",
                );
            }
        }
        Profile::Anthropic => anthropic_strict = strict_flag == Some(&Value::Bool(true)),
        _ => {}
    }
    let schema_pointer = format!("{holder_pointer}/{schema_key}");
    match holder.get(schema_key) {
        Some(schema) => {
            let mut checker = Checker {
                report,
                root: schema,
                base: schema_pointer,
                strict: profile.is_strict(),
                anthropic_strict,
                recursive: BTreeSet::new(),
            };
            checker.check_root();
            checker.walk(schema, "");
            checker.check_references();
            if profile.is_strict() {
                checker.check_limits();
            }
        }
        None if required_schema => report.add(
            &schema_pointer,
            format!("{who}: a tool has its arguments schema under `{schema_key}`"),
            "export with `Run::export`",
        ),
        None => {}
    }
    if profile == Profile::Mcp
        && let Some(output) = holder.get("outputSchema")
        && output.get("type") != Some(&Value::from("object"))
    {
        report.add(
            "/outputSchema",
            "MCP: an `outputSchema` has `type: \"object\"` at its root",
            "return a struct, or leave the output schema out",
        );
    }
}

/// The consumer's rule for names, then the rule every consumer accepts at once.
fn check_name(report: &mut Report, name: Option<&Value>, pointer: &str) {
    let profile = report.profile;
    let Some(Value::String(name)) = name else {
        report.add(
            pointer,
            format!("{}: a tool has a `name`, a string", consumer(profile)),
            "name the tool",
        );
        return;
    };
    let length = name.chars().count();
    let (rule, valid) = match profile {
        Profile::OpenAiChat { .. } | Profile::OpenAiResponses { .. } => (
            "OpenAI: tool names match `^[a-zA-Z0-9_-]{1,64}$`",
            (1..=64).contains(&length)
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c)),
        ),
        Profile::Anthropic => (
            "Anthropic: tool names match `^[a-zA-Z0-9_-]{1,64}$` (128 in the API, 64 in several \
             clients such as Claude Desktop)",
            (1..=64).contains(&length)
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c)),
        ),
        Profile::Gemini => (
            "Gemini: tool names start with a letter or `_`, then letters, digits, `_ . : -`, at \
             most 64 characters (128 in newer documentation)",
            (1..=64).contains(&length)
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c)),
        ),
        Profile::Mcp => (
            "MCP: tool names are 1 to 128 of `A-Za-z0-9_-.`",
            (1..=128).contains(&length)
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)),
        ),
    };
    if !valid {
        report.add(
            pointer,
            format!("{rule}; {name:?} does not"),
            "rename the tool",
        );
        return;
    }
    let portable = length <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c));
    if !portable {
        report.add(
            pointer,
            format!(
                "tool names must be valid for every consumer at once (`{PORTABLE_NAME}`); \
                 {name:?} is not"
            ),
            "rename the tool",
        );
    }
}

/// The keywords of JSON Schema that hold subschemas, by shape.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
const SCHEMA_SINGLES: &[&str] = &[
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
const COMPOSITION: &[&str] = &[
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
const OPENAI_REFUSED: &[&str] = &[
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
const GEMINI_FIELDS: &[&str] = &[
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

/// Numeric and length bounds (none with Anthropic's `strict: true`).
const BOUNDS: &[&str] = &[
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

/// Checks one tool's arguments schema.
struct Checker<'r, 'v> {
    report: &'r mut Report,
    root: &'v Value,
    /// Where the schema is in the tool object.
    base: String,
    strict: bool,
    anthropic_strict: bool,
    recursive: BTreeSet<String>,
}

impl Checker<'_, '_> {
    fn add(&mut self, pointer: &str, rule: impl Into<String>, fix: impl Into<String>) {
        let pointer = format!("{}{pointer}", self.base);
        self.report.add(&pointer, rule, fix);
    }

    fn who(&self) -> &'static str {
        consumer(self.report.profile)
    }

    fn gemini(&self) -> bool {
        self.report.profile == Profile::Gemini
    }

    fn openai(&self) -> bool {
        matches!(
            self.report.profile,
            Profile::OpenAiChat { .. } | Profile::OpenAiResponses { .. }
        )
    }

    fn check_root(&mut self) {
        let root = self.root;
        if root.get("type") != Some(&Value::from("object")) {
            let rule = if self.strict {
                "OpenAI strict mode: the root is `type: \"object\"`, not `anyOf` nor nullable"
                    .to_owned()
            } else {
                format!(
                    "{}: the root of a tool's schema is `type: \"object\"`",
                    self.who()
                )
            };
            self.add(
                "",
                rule,
                "take the arguments as an object of named parameters",
            );
        } else if self.strict && (root.get("anyOf").is_some() || root.get("oneOf").is_some()) {
            self.add(
                "",
                "OpenAI strict mode: the root is not `anyOf`",
                "take the arguments as an object of named parameters",
            );
        }
        if root.get("$schema").is_some() && self.report.profile != Profile::Mcp {
            let rule = if self.gemini() {
                "Gemini rejects `$schema`".to_owned()
            } else {
                format!("{}: `$schema` must be dropped", self.who())
            };
            self.add("/$schema", rule, "drop `$schema`");
        }
    }

    /// Checks `schema` at `pointer` (relative to the schema root) and everything inside.
    fn walk(&mut self, schema: &Value, pointer: &str) {
        let object = match schema {
            Value::Object(object) => object,
            Value::Bool(_) => {
                if self.gemini() || self.strict {
                    self.add(
                        pointer,
                        format!(
                            "{}: a schema is an object, not `true` or `false`",
                            self.who()
                        ),
                        "give the value a type",
                    );
                }
                return;
            }
            _ => {
                self.add(pointer, "a schema is a JSON object", "fix the schema");
                return;
            }
        };
        self.keywords(object, pointer);
        for (keyword, value) in object {
            let at = format!("{pointer}/{}", escape(keyword));
            if SCHEMA_MAPS.contains(&keyword.as_str()) {
                if let Value::Object(map) = value {
                    for (name, inner) in map {
                        self.walk(inner, &format!("{at}/{}", escape(name)));
                    }
                }
            } else if SCHEMA_LISTS.contains(&keyword.as_str()) {
                if let Value::Array(list) = value {
                    for (index, inner) in list.iter().enumerate() {
                        self.walk(inner, &format!("{at}/{index}"));
                    }
                }
            } else if SCHEMA_SINGLES.contains(&keyword.as_str()) && value.is_object() {
                self.walk(value, &at);
            }
        }
    }

    /// The rules about the keywords of one schema.
    fn keywords(&mut self, object: &Map<String, Value>, pointer: &str) {
        let who = self.who();
        let profile = self.report.profile;
        let at = |keyword: &str| format!("{pointer}/{}", escape(keyword));
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
                    _ => OPENAI_FORMATS.join(", "),
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

    /// Anthropic: no recursive `$ref`. Follows references from the root.
    fn check_references(&mut self) {
        if self.report.profile != Profile::Anthropic {
            return;
        }
        let mut stack = Vec::new();
        let root = self.root;
        self.follow(root, "", &mut stack);
    }

    fn follow(&mut self, schema: &Value, pointer: &str, stack: &mut Vec<String>) {
        let Value::Object(object) = schema else {
            return;
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            if stack.iter().any(|r| r == reference) {
                if self.recursive.insert(reference.to_owned()) {
                    let name = reference.rsplit('/').next().unwrap_or(reference).to_owned();
                    self.add(
                        &format!("{pointer}/$ref"),
                        format!(
                            "Anthropic: `$ref` may not be recursive; `{name}` refers to itself"
                        ),
                        format!(
                            "make `{name}` non-recursive, or do not offer this tool to Anthropic"
                        ),
                    );
                }
                return;
            }
            if let Some(target) = resolve(self.root, &Value::from(reference)) {
                let target_pointer = reference.trim_start_matches('#').to_owned();
                stack.push(reference.to_owned());
                self.follow(target, &target_pointer, stack);
                stack.pop();
            }
        }
        for (token, inner) in subschemas(object) {
            if token.starts_with("/$defs") || token.starts_with("/definitions") {
                continue;
            }
            self.follow(inner, &format!("{pointer}{token}"), stack);
        }
    }

    /// OpenAI strict mode's limits.
    fn check_limits(&mut self) {
        let mut properties = 0;
        let mut enum_values = 0;
        let mut chars = 0;
        let mut pending = vec![self.root];
        if let Some(Value::Object(definitions)) = self.root.get("$defs") {
            chars += definitions.keys().map(|n| n.chars().count()).sum::<usize>();
        }
        while let Some(schema) = pending.pop() {
            let Value::Object(object) = schema else {
                continue;
            };
            if let Some(Value::Object(map)) = object.get("properties") {
                properties += map.len();
                chars += map.keys().map(|n| n.chars().count()).sum::<usize>();
            }
            if let Some(Value::Array(values)) = object.get("enum") {
                enum_values += values.len();
                chars += values.iter().map(text_length).sum::<usize>();
            }
            if let Some(value) = object.get("const") {
                chars += text_length(value);
            }
            pending.extend(subschemas(object).into_iter().map(|(_, inner)| inner));
        }
        if properties > STRICT_MAX_PROPERTIES {
            self.add(
                "",
                format!("OpenAI strict mode: at most 5000 object properties; {properties} here"),
                "split the tool",
            );
        }
        if enum_values > STRICT_MAX_ENUM_VALUES {
            self.add(
                "",
                format!("OpenAI strict mode: at most 1000 enum values; {enum_values} here"),
                "take a string instead of a huge enum",
            );
        }
        if chars > STRICT_MAX_CHARS {
            self.add(
                "",
                format!("OpenAI strict mode: at most 120,000 characters of property names, definition names and enum values; {chars} here"),
                "shorten names and enum values, or split the tool",
            );
        }
        let root = self.root;
        if let Some(pointer) = self.too_deep(root, "", 0, &mut Vec::new()) {
            self.add(
                &pointer,
                "OpenAI strict mode: at most 10 levels of nested objects",
                "flatten the parameter types",
            );
        }
    }

    /// The first place where objects nest deeper than 10 levels, following `$ref`s once.
    fn too_deep(
        &self,
        schema: &Value,
        pointer: &str,
        depth: usize,
        stack: &mut Vec<String>,
    ) -> Option<String> {
        let Value::Object(object) = schema else {
            return None;
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            if stack.iter().any(|r| r == reference) {
                return None;
            }
            let target = resolve(self.root, &Value::from(reference))?;
            stack.push(reference.to_owned());
            let found = self.too_deep(target, pointer, depth, stack);
            stack.pop();
            return found;
        }
        let depth = if types_of(object).iter().any(|t| t == "object")
            || object.contains_key("properties")
        {
            depth + 1
        } else {
            depth
        };
        if depth > STRICT_MAX_NESTING {
            return Some(pointer.to_owned());
        }
        for (token, inner) in subschemas(object) {
            if token.starts_with("/$defs") || token.starts_with("/definitions") {
                continue;
            }
            if let Some(found) = self.too_deep(inner, &format!("{pointer}{token}"), depth, stack) {
                return Some(found);
            }
        }
        None
    }
}

/// The target of a local `$ref` in the schema `root`.
fn resolve<'v>(root: &'v Value, reference: &Value) -> Option<&'v Value> {
    let fragment = reference.as_str()?.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    let decoded = percent_decode(fragment)?;
    root.pointer(&decoded)
}

/// The schema's types.
fn types_of(object: &Map<String, Value>) -> Vec<String> {
    match object.get("type") {
        Some(Value::String(single)) => vec![single.to_lowercase()],
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_lowercase)
            .collect(),
        _ => Vec::new(),
    }
}

/// The schemas directly inside a schema, each with its pointer tokens.
fn subschemas(object: &Map<String, Value>) -> Vec<(String, &Value)> {
    let mut found = Vec::new();
    for (keyword, value) in object {
        let at = format!("/{}", escape(keyword));
        if SCHEMA_MAPS.contains(&keyword.as_str()) {
            if let Value::Object(map) = value {
                found.extend(
                    map.iter()
                        .map(|(name, inner)| (format!("{at}/{}", escape(name)), inner)),
                );
            }
        } else if SCHEMA_LISTS.contains(&keyword.as_str()) {
            if let Value::Array(list) = value {
                found.extend(
                    list.iter()
                        .enumerate()
                        .map(|(index, inner)| (format!("{at}/{index}"), inner)),
                );
            }
        } else if SCHEMA_SINGLES.contains(&keyword.as_str()) && value.is_object() {
            found.push((at, value));
        }
    }
    found
}

fn text_length(value: &Value) -> usize {
    match value {
        Value::String(text) => text.chars().count(),
        other => other.to_string().chars().count(),
    }
}

/// A JSON pointer token.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// `%XX` escapes of a URI fragment, decoded.
fn percent_decode(fragment: &str) -> Option<String> {
    if !fragment.contains('%') {
        return Some(fragment.to_owned());
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            out.push(u8::from_str_radix(fragment.get(index + 1..index + 3)?, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}
