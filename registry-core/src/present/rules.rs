//! The facts of `docs/providers.md` that both lowering and the checker use:
//! one table each, so that the two cannot disagree about what a provider takes.

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

/// The string formats OpenAI takes (strict and not).
pub(crate) const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The string formats Anthropic takes.
pub(crate) const ANTHROPIC_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Gemini's string formats.
pub(crate) const GEMINI_STRING_FORMATS: &[&str] = &["enum", "date-time"];

/// Gemini's numeric formats.
pub(crate) const GEMINI_NUMBER_FORMATS: &[&str] = &["int32", "int64", "float", "double"];

/// OpenAI strict mode: at most this many object properties in one schema.
pub(crate) const STRICT_MAX_PROPERTIES: usize = 5000;

/// OpenAI strict mode: at most this many levels of nested objects.
pub(crate) const STRICT_MAX_NESTING: usize = 10;

/// OpenAI strict mode: at most this many enum values in one schema.
pub(crate) const STRICT_MAX_ENUM_VALUES: usize = 1000;

/// OpenAI strict mode: at most this many characters of names and enum values.
pub(crate) const STRICT_MAX_CHARS: usize = 120_000;
