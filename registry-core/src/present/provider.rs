//! One file per provider, its one home: the tool object, tool list and allowlist, how its
//! responses carry calls, the result message, and its schema rules, a `const` of [`Rules`]
//! (tool names, the tool object around the schema, and what JSON Schema it takes).
//!
//! `export.rs`, `parse.rs` and `render.rs` dispatch on [`Profile`] with exhaustive matches,
//! and `Profile::rules` (below) picks the profile's `Rules` with another; the lowering
//! (`lower/`) and the checker (`compat/`) only read those facts, never the profile. So a new
//! provider is a new file here, a variant of `Profile`, and the arms the compiler then asks
//! for.

pub(crate) mod anthropic;
pub(crate) mod gemini;
pub(crate) mod mcp;
pub(crate) mod openai;

use serde_json::Value;

use crate::declare::definition::ToolDefinition;
use crate::execute::observation::Observation;
use crate::shared::hints::Hints;
use crate::shared::profile::Profile;

/// One tool as it is exported: its definition with the profile's lowered parameters.
pub(crate) struct Exported<'a> {
    pub(crate) definition: &'a ToolDefinition,
    pub(crate) parameters: &'a Value,
    pub(crate) hints: Hints,
    pub(crate) output_schema: Option<&'a Value>,
    /// Whether code the model writes may call it (`callable_from_code`): the providers whose
    /// tool object says which callers may call a tool mark it.
    pub(crate) callable_from_code: bool,
}

/// The observation as text: a string as it is, any other result as its JSON text.
pub(crate) fn text(observation: &Observation) -> String {
    match observation.json() {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

// Here rather than in `profile.rs`: the provider files use `reader.rs`, which uses
// `Profile`, so `profile.rs` importing them would close an import circle.
impl Profile {
    /// The profile's schema rules, from its provider's file.
    pub(crate) fn rules(self) -> &'static Rules {
        match self {
            Profile::Mcp => &mcp::RULES,
            Profile::OpenAiChat { strict: false } => &openai::CHAT,
            Profile::OpenAiChat { strict: true } => &openai::CHAT_STRICT,
            Profile::OpenAiResponses { strict: false } => &openai::RESPONSES,
            Profile::OpenAiResponses { strict: true } => &openai::RESPONSES_STRICT,
            Profile::Anthropic => &anthropic::RULES,
            Profile::Gemini => &gemini::RULES,
        }
    }
}

/// What one consumer takes, as data: the rules of `docs/providers.md` for its tool
/// names, its tool list and tool object, and the JSON Schema it accepts. The lowering
/// (`lower/`) writes what they allow and the checker (`compat/`) applies them, so that the two
/// cannot disagree; neither asks which provider it serves.
///
/// Rule texts that name the provider take [`consumer`](Rules::consumer); the few that the
/// rules word otherwise are facts here too.
#[derive(Debug)]
pub(crate) struct Rules {
    /// The consumer's name as the rules and their messages say it ("OpenAI strict mode").
    pub(crate) consumer: &'static str,
    /// Its rule for tool names.
    pub(crate) names: NameRule,
    /// At most this many tools in one request, where it has a limit.
    pub(crate) max_tools: Option<usize>,
    /// How its tool list holds the tool objects.
    pub(crate) list: ToolList,
    /// The tool object around the arguments schema.
    pub(crate) tool: ToolObject,
    /// What the tool object's `strict` flag must say, and what it turns on.
    pub(crate) strict_flag: StrictFlag,
    /// Strict mode (OpenAI's structured outputs), where the profile is in it: every object
    /// closed, every property required (an optional one nullable), no `default`, the root not
    /// a union, and these limits.
    pub(crate) strict: Option<StrictLimits>,
    /// Whether it takes the canonical schema (JSON Schema 2020-12) as it is, so that nothing
    /// is lowered (the facts below then say what JSON Schema itself allows).
    pub(crate) canonical: bool,
    /// Whether `$schema` is kept.
    pub(crate) dollar_schema: bool,
    /// How `$ref` and `$defs` are taken.
    pub(crate) references: References,
    /// The composition keywords taken besides `anyOf`.
    pub(crate) composition: Composition,
    /// Whether `const` is taken (else a one-value `enum`).
    pub(crate) const_keyword: bool,
    /// How a schema says that `null` is a value too.
    pub(crate) null: Null,
    /// Which `enum`s are taken.
    pub(crate) enums: Enums,
    /// Whether `additionalProperties` is taken (else a map is described in words).
    pub(crate) additional_properties: bool,
    /// Whether `unevaluatedProperties` is taken beside composition, where it cannot become
    /// `additionalProperties`.
    pub(crate) unevaluated_properties: bool,
    /// Whether `prefixItems` (tuples) is taken (else an `items` union, the order in words).
    pub(crate) prefix_items: bool,
    /// Whether the schemas `true` and `false` are taken.
    pub(crate) boolean_schemas: bool,
    /// Which `format`s are taken.
    pub(crate) formats: Formats,
    /// Which keywords a schema may hold, and which bounds are taken.
    pub(crate) keywords: Keywords,
    /// Whether the annotations `examples`, `deprecated`, `readOnly` and `writeOnly` are taken
    /// (else `examples` and `deprecated: true` are described).
    pub(crate) annotations: bool,
}

/// A consumer's rule for tool names: 1 to `max_chars` characters, each an ASCII letter or digit
/// or one of `punctuation`.
#[derive(Debug)]
pub(crate) struct NameRule {
    /// The longest name taken, in characters.
    pub(crate) max_chars: usize,
    /// Whether the first character must be a letter or `_`.
    pub(crate) letter_first: bool,
    /// The characters taken besides ASCII letters and digits.
    pub(crate) punctuation: &'static str,
    /// The rule, as `providers.md` states it.
    pub(crate) rule: &'static str,
}

impl NameRule {
    /// Whether `name` follows the rule.
    pub(crate) fn allows(&self, name: &str) -> bool {
        (1..=self.max_chars).contains(&name.chars().count())
            && (!self.letter_first
                || name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || self.punctuation.contains(c))
    }
}

/// How a tool list holds the tool objects.
#[derive(Debug)]
pub(crate) enum ToolList {
    /// The list is the tool objects.
    Objects,
    /// The list holds tools, each with an array of tool objects under `key` (Gemini's `Tool`s
    /// with `functionDeclarations`).
    Grouped {
        /// The member holding the tool objects.
        key: &'static str,
    },
}

/// The tool object around the arguments schema.
#[derive(Debug)]
pub(crate) struct ToolObject {
    /// Where the definition (name, description, arguments schema) is.
    pub(crate) holder: Holder,
    /// `Some(rule)`: the tool object says `type: "function"`, as `rule` states.
    pub(crate) function_type: Option<&'static str>,
    /// The member of the definition holding the arguments schema.
    pub(crate) schema_key: &'static str,
    /// Whether the arguments schema must be there (Gemini leaves it out when there are no
    /// parameters).
    pub(crate) schema_required: bool,
    /// Whether the definition may carry an `outputSchema`, whose root is `type: "object"`.
    pub(crate) output_schema: bool,
}

/// Where a tool object holds the definition.
#[derive(Debug)]
pub(crate) enum Holder {
    /// In the tool object itself.
    Tool,
    /// Under the member `key`, as `rule` states (Chat Completions' `function`).
    Member {
        /// The member.
        key: &'static str,
        /// The rule, when the member is missing.
        rule: &'static str,
    },
}

impl Holder {
    /// The pointer of the definition in the tool object.
    pub(crate) fn pointer(&self) -> String {
        match self {
            Holder::Tool => String::new(),
            Holder::Member { key, .. } => crate::pointer::child("", key),
        }
    }
}

/// What a tool object's `strict` flag must say, and what it turns on.
#[derive(Debug)]
pub(crate) enum StrictFlag {
    /// Nothing: the flag is not read.
    Ignored,
    /// The tool says `strict: true` exactly when `value` is `true`, or breaks `rule` (OpenAI:
    /// the flag is the profile's mode).
    Says {
        /// Whether the tool says `strict: true`.
        value: bool,
        /// The rule, when it does not.
        rule: &'static str,
    },
    /// An optional `strict: true`, under which every object is closed and no bound is taken
    /// (Anthropic).
    Optional,
}

/// Strict mode's limits on one schema.
#[derive(Debug)]
pub(crate) struct StrictLimits {
    /// At most this many object properties in all.
    pub(crate) max_properties: usize,
    /// At most this many levels of nested objects.
    pub(crate) max_nesting: usize,
    /// At most this many enum values in all.
    pub(crate) max_enum_values: usize,
    /// At most this many characters of property names, definition names and enum values.
    pub(crate) max_chars: usize,
}

/// How `$ref` and `$defs` are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum References {
    /// Any local `$ref`, recursive or not, with sibling keywords or not.
    Any,
    /// Local `$ref`s without sibling keywords (recursion allowed); lowering keeps them.
    NoSiblings,
    /// Local `$ref`s, none recursive: lowering inlines every one.
    NotRecursive,
    /// No `$ref` nor `$defs` at all: every type inlined.
    Refused,
}

impl References {
    /// Whether lowering inlines every `$ref` (a recursive type then cannot be expressed).
    pub(crate) fn inlined(self) -> bool {
        matches!(self, References::NotRecursive | References::Refused)
    }
}

/// The composition keywords taken besides `anyOf`.
#[derive(Debug)]
pub(crate) struct Composition {
    /// Those of [`COMPOSITION`](crate::present::rules::COMPOSITION) taken (lowering turns
    /// `oneOf` into `anyOf` and merges `allOf` where they are not).
    pub(crate) taken: &'static [&'static str],
    /// What is taken, as the rule says it ("`anyOf` only").
    pub(crate) said: &'static str,
}

impl Composition {
    /// Whether `keyword` is taken.
    pub(crate) fn takes(&self, keyword: &str) -> bool {
        self.taken.contains(&keyword)
    }
}

/// How a schema says that `null` is a value too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Null {
    /// JSON Schema's way: `"null"` in a type array or an `enum`, or a `{"type": "null"}`
    /// branch; no `nullable` keyword.
    TypeUnion,
    /// OpenAPI 3.0's way: `nullable: true` beside one type; no type arrays (a union is an
    /// `anyOf`), no null branch, no `null` in an `enum`.
    Nullable,
}

/// Which `enum`s are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Enums {
    /// Any `enum`.
    Any,
    /// String enums with `format: "enum"` (an `anyOf` of them is one enum); other values are
    /// described in words.
    Strings,
}

/// Which `format`s are taken.
#[derive(Debug)]
pub(crate) enum Formats {
    /// Any format.
    Any,
    /// These, whatever the type.
    Only(&'static [&'static str]),
    /// These on strings and those on numbers (an integer format is mapped to the narrowest
    /// of `int32` and `int64` taken that holds its range).
    ByType {
        /// The string formats.
        strings: &'static [&'static str],
        /// The number formats.
        numbers: &'static [&'static str],
        /// Both, as the rule says them.
        said: &'static str,
    },
}

/// Which keywords a schema may hold, and which of the constraint keywords (the bounds and
/// the like) are taken; those that are not are moved into the description.
#[derive(Debug)]
pub(crate) enum Keywords {
    /// Every keyword, and any unknown one as an annotation.
    All,
    /// Any keyword but `refused`; of the constraint keywords, `bounds` only.
    Refusing {
        /// The constraint keywords taken.
        bounds: &'static [&'static str],
        /// The keywords refused, in the order the checker reports them.
        refused: &'static [&'static str],
        /// The bounds taken, as the rule says them.
        said: &'static str,
    },
    /// Only `fields`, the fields of the consumer's schema object; of the constraint keywords,
    /// `bounds` only.
    Fields {
        /// The constraint keywords taken.
        bounds: &'static [&'static str],
        /// The fields taken.
        fields: &'static [&'static str],
        /// The bounds taken, as the rule says them.
        said: &'static str,
    },
}

impl Keywords {
    /// Whether the constraint keyword `keyword` is taken as it is.
    pub(crate) fn takes_constraint(&self, keyword: &str) -> bool {
        match self {
            Keywords::All => true,
            Keywords::Refusing { bounds, .. } | Keywords::Fields { bounds, .. } => {
                bounds.contains(&keyword)
            }
        }
    }
}
