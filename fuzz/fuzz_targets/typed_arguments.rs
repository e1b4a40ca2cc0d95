//! The typed fast path against the slow path: the same argument text, for the same `#[tool]`
//! function, must get the same answer (accepted or refused, the same error kind, the same
//! text, the same problems, the same result) whether the run checks it with the fast path
//! (one pass over the text, each parameter deserialized from its slice) or with the slow path
//! (a strict parse into a `serde_json::Value`, jsonschema, the parameters decoded from the
//! value).
//!
//! Two registries of the same tools: one without an audit sink, where argument text takes the
//! fast path whenever the tool's schema allows it, and one with an audit sink (which records
//! the hash of every call's arguments, so its runs always make a value of them), where it
//! never does. Each pair also exists with small `ArgumentLimits` (3 levels, 240 bytes), so
//! that the limits' edges are reached. Every tool returns what it was given, serialized, so an
//! accepted call compares the typed values too.
//!
//! Input (bytes): `SELECTOR ARGUMENT_TEXT`, the text read as UTF-8 with invalid sequences
//! replaced. The selector picks the tool (`% TOOLS.len()`) and the limits (the next bit).

#![no_main]

use libfuzzer_sys::fuzz_target;
use registry_core::call::ArgumentLimits;
use registry_core::{Registry, Subject, ToolCall, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::OnceLock;

/// The tools, by the selector's value.
const TOOLS: &[&str] = &[
    "scalars",
    "ranges",
    "optionals",
    "lists",
    "nested",
    "enums",
    "aliased",
    "patterned",
    "mixed_async",
    "empty",
];

/// Where a build goes.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Environment {
    Staging,
    Production,
    CanaryEu,
}

/// How loud the log is (documented variants: a `oneOf` of constants).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum Level {
    /// Everything.
    Debug,
    /// The usual.
    Info,
    /// Only problems.
    Warn,
}

/// A variant with an alias the schema does not show: the fast check must refuse it as
/// jsonschema does.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
enum Color {
    #[serde(alias = "crimson")]
    Red,
    Blue,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Owner {
    name: String,
    team: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Step {
    name: String,
    seconds: Option<u32>,
    env: Option<Environment>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Build {
    owner: Owner,
    steps: Vec<Step>,
    retries: u8,
    #[serde(default)]
    tags: Vec<String>,
}

/// A field with a `pattern` and one with `minLength`: a schema the fast path leaves alone.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Patterned {
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    slug: String,
    #[schemars(length(min = 2))]
    title: String,
}

fn echo(value: impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Scalars of every kind.
#[tool(public)]
fn scalars(flag: bool, count: u32, delta: i64, ratio: f64, name: String) -> Value {
    echo((flag, count, delta, ratio, name))
}

/// Integers with ranges of their Rust types.
#[tool(public)]
fn ranges(port: u16, percent: u8, offset: i8, year: i32, big: u64, small: i16) -> Value {
    echo((port, percent, offset, year, big, small))
}

/// Arguments that may be left out.
#[tool(public)]
fn optionals(
    note: Option<String>,
    limit: Option<u16>,
    tags: Option<Vec<String>>,
    on: Option<bool>,
) -> Value {
    echo((note, limit, tags, on))
}

/// Lists, nested lists.
#[tool(public)]
fn lists(ids: Vec<u32>, matrix: Vec<Vec<i8>>, names: Vec<String>) -> Value {
    echo((ids, matrix, names))
}

/// Nested structs.
#[tool(public)]
fn nested(build: Build, owner: Option<Owner>) -> Value {
    echo((build, owner))
}

/// Enums of unit variants, plain and documented.
#[tool(public)]
fn enums(env: Environment, level: Option<Level>, levels: Vec<Level>) -> Value {
    echo((env, level, levels))
}

/// An enum with an alias.
#[tool(public)]
fn aliased(color: Color) -> Value {
    echo(color)
}

/// A schema with `pattern` and `minLength`.
#[tool(public)]
fn patterned(item: Patterned, count: u8) -> Value {
    echo((item, count))
}

/// An async tool.
#[tool(public)]
async fn mixed_async(env: Environment, count: Option<u32>, names: Vec<String>) -> Value {
    echo((env, count, names))
}

/// No arguments at all.
#[tool(public)]
fn empty() -> Value {
    Value::Null
}

struct Registries {
    /// `[limits][fast]`.
    pairs: [[Registry; 2]; 2],
}

fn registries() -> &'static Registries {
    static REGISTRIES: OnceLock<Registries> = OnceLock::new();
    REGISTRIES.get_or_init(|| {
        let small = ArgumentLimits::default()
            .with_max_depth(3)
            .with_max_bytes(240);
        let build = |limits: ArgumentLimits, fast: bool| {
            let builder = Registry::builder()
                .declared_in([module_path!()])
                .argument_limits(limits);
            let builder = if fast {
                builder
            } else {
                // An audit sink records the arguments' hash: this registry's runs always
                // parse argument text into a value, the slow path.
                builder.audit_sink(|event: &registry_core::audit::AuditEvent| {
                    std::hint::black_box(event);
                })
            };
            builder.build().expect("the fuzz registry builds")
        };
        Registries {
            pairs: [
                [
                    build(ArgumentLimits::default(), false),
                    build(ArgumentLimits::default(), true),
                ],
                [build(small, false), build(small, true)],
            ],
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, text)) = data.split_first() else {
        return;
    };
    let name = TOOLS[usize::from(selector) % TOOLS.len()];
    let limits = usize::from(selector) / TOOLS.len() % 2;
    let text = String::from_utf8_lossy(text);
    let [slow, fast] = &registries().pairs[limits];
    let subject = Subject::new("fuzz");
    let slow_run = slow.open_run("slow", &subject);
    let fast_run = fast.open_run("fast", &subject);
    let answer = |run: &registry_core::Run| {
        run.call_blocking(ToolCall::from_json_text("call_1", name, &*text))
    };
    let (slow, fast) = (answer(&slow_run), answer(&fast_run));
    assert_eq!(
        slow, fast,
        "the slow and fast paths answer {name}({text}) differently"
    );
    assert_eq!(slow.error_text(), fast.error_text());
});
