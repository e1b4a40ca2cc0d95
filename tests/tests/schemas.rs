//! The JSON Schema the registry derives from a `#[tool]` function's parameters, compared as a
//! whole: primitives, `Option`, `Vec`, maps, enums (unit, internally and externally tagged),
//! nested structs (closed, also under `$defs`), parameter docs, the context parameter, raw
//! identifiers; and the tool's description and title.

#![allow(dead_code)] // The argument types are only deserialized, never read.

use std::collections::HashMap;

use registry_core::{Registry, Tool, ToolCall, ToolContext, call::ToolError, tool};
use registry_tests::{open_run, success};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

fn registry() -> Registry {
    Registry::from_inventory().expect("the tools of this file build a registry")
}

fn parameters(registry: &Registry, name: &str) -> Value {
    registry.get(name).unwrap().definition().parameters.clone()
}

/// Validates `arguments`, keeping only the messages of the problems.
fn problems(tool: &Tool, arguments: Value) -> Vec<String> {
    match tool.validate(&arguments) {
        Ok(()) => Vec::new(),
        Err(ToolError::InvalidArguments(problems)) => {
            problems.iter().map(ToString::to_string).collect()
        }
        Err(other) => panic!("expected invalid arguments, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Primitives, options, lists, maps.

/// Take one of each primitive.
#[tool(public)]
fn primitives(
    /// The name to greet.
    name: String,
    flag: bool,
    offset: i64,
    count: u32,
    ratio: f64,
) -> String {
    format!("{name} {flag} {offset} {count} {ratio}")
}

#[test]
fn primitives_map_to_json_types_and_all_are_required() {
    assert_eq!(
        parameters(&registry(), "primitives"),
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The name to greet."},
                "flag": {"type": "boolean"},
                "offset": {"type": "integer", "format": "int64"},
                "count": {"type": "integer", "format": "uint32", "minimum": 0},
                "ratio": {"type": "number", "format": "double"}
            },
            "required": ["name", "flag", "offset", "count", "ratio"],
            "additionalProperties": false
        })
    );
}

/// Take optional values, lists and a map.
#[tool(public)]
fn collections(
    tags: Vec<String>,
    /// At most this many.
    limit: Option<u32>,
    ids: Option<Vec<i64>>,
    /// Counts by label.
    labels: HashMap<String, u32>,
) -> usize {
    tags.len() + limit.unwrap_or(0) as usize + ids.map_or(0, |ids| ids.len()) + labels.len()
}

#[test]
fn options_are_nullable_and_not_required_lists_have_items_and_maps_stay_open() {
    assert_eq!(
        parameters(&registry(), "collections"),
        json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "limit": {
                    "type": ["integer", "null"],
                    "format": "uint32",
                    "minimum": 0,
                    "description": "At most this many."
                },
                "ids": {
                    "type": ["array", "null"],
                    "items": {"type": "integer", "format": "int64"}
                },
                "labels": {
                    "type": "object",
                    "additionalProperties": {"type": "integer", "format": "uint32", "minimum": 0},
                    "description": "Counts by label."
                }
            },
            "required": ["tags", "labels"],
            "additionalProperties": false
        })
    );
}

#[test]
fn a_map_accepts_any_key_but_checks_its_values() {
    let registry = registry();
    let tool = registry.get("collections").unwrap();
    assert_eq!(
        problems(&tool, json!({"tags": [], "labels": {"a": 1, "any key": 2}})),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(&tool, json!({"tags": [], "labels": {"a": "one"}})),
        [r#"/labels/a: expected integer, got string "one""#]
    );
}

/// Store any JSON value.
#[tool(public)]
fn store(
    /// The value to store, of any shape.
    payload: Value,
    extra: Value,
    meta: Option<Value>,
) -> Value {
    json!([payload, extra, meta])
}

/// Regression: the schema of `serde_json::Value` is `true`, and the parameter's doc comment was
/// dropped for want of an object to put it in.
#[test]
fn a_json_value_parameter_takes_anything_and_keeps_its_description() {
    let registry = registry();
    assert_eq!(
        parameters(&registry, "store"),
        json!({
            "type": "object",
            "properties": {
                "payload": {"description": "The value to store, of any shape."},
                "extra": true,
                "meta": true
            },
            "required": ["payload", "extra"],
            "additionalProperties": false
        })
    );
    let run = open_run(&registry, &[]);
    assert_eq!(
        success(run.call_blocking(ToolCall::new(
            "call_1",
            "store",
            json!({"payload": {"a": [1]}, "extra": null})
        ))),
        json!([{"a": [1]}, null, null])
    );
}

// ---------------------------------------------------------------------------------------------
// Enums.

/// How urgent a ticket is.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Priority {
    /// It can wait.
    Low,
    /// It needs attention today.
    High,
}

/// Set a ticket's priority.
#[tool(public)]
fn set_priority(
    /// The new priority.
    priority: Priority,
    fallback: Option<Priority>,
) {
    let _ = (priority, fallback);
}

#[test]
fn a_unit_enum_lists_its_variants_with_their_docs() {
    assert_eq!(
        parameters(&registry(), "set_priority"),
        json!({
            "type": "object",
            "properties": {
                "priority": {"$ref": "#/$defs/Priority", "description": "The new priority."},
                "fallback": {"anyOf": [{"$ref": "#/$defs/Priority"}, {"type": "null"}]}
            },
            "required": ["priority"],
            "$defs": {
                "Priority": {
                    "description": "How urgent a ticket is.",
                    "oneOf": [
                        {"type": "string", "const": "low", "description": "It can wait."},
                        {"type": "string", "const": "high", "description": "It needs attention today."}
                    ]
                }
            },
            "additionalProperties": false
        })
    );
    let registry = registry();
    let tool = registry.get("set_priority").unwrap();
    assert_eq!(
        problems(&tool, json!({"priority": "high", "fallback": "low"})),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(&tool, json!({"priority": "urgent"})),
        [r#"/priority: expected one of "low" or "high", got string "urgent""#]
    );
}

/// A shape, tagged by `kind`.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Shape {
    Circle { radius: f64 },
    Rectangle { width: f64, height: f64 },
}

/// Draw a shape.
#[tool(public)]
fn draw(shape: Shape) {
    let _ = shape;
}

#[test]
fn an_internally_tagged_enum_is_one_closed_object_per_variant() {
    assert_eq!(
        parameters(&registry(), "draw"),
        json!({
            "type": "object",
            "properties": {"shape": {"$ref": "#/$defs/Shape"}},
            "required": ["shape"],
            "$defs": {
                "Shape": {
                    "description": "A shape, tagged by `kind`.",
                    "oneOf": [
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "const": "circle"},
                                "radius": {"type": "number", "format": "double"}
                            },
                            "required": ["kind", "radius"],
                            "additionalProperties": false
                        },
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "const": "rectangle"},
                                "width": {"type": "number", "format": "double"},
                                "height": {"type": "number", "format": "double"}
                            },
                            "required": ["kind", "width", "height"],
                            "additionalProperties": false
                        }
                    ]
                }
            },
            "additionalProperties": false
        })
    );
    let registry = registry();
    let tool = registry.get("draw").unwrap();
    let valid = json!({"shape": {"kind": "rectangle", "width": 2.0, "height": 1.5}});
    assert_eq!(problems(&tool, valid), Vec::<String>::new());
}

/// Where to deploy.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Target {
    /// The head of a branch.
    Branch(String),
    /// One commit.
    Commit { sha: String },
    /// Whatever was built last.
    Latest,
}

/// Deploy a build.
#[tool(public)]
fn deploy(target: Target) {
    let _ = target;
}

#[test]
fn an_externally_tagged_enum_closes_its_variant_objects() {
    assert_eq!(
        parameters(&registry(), "deploy"),
        json!({
            "type": "object",
            "properties": {"target": {"$ref": "#/$defs/Target"}},
            "required": ["target"],
            "$defs": {
                "Target": {
                    "description": "Where to deploy.",
                    "oneOf": [
                        {
                            "description": "The head of a branch.",
                            "type": "object",
                            "properties": {"branch": {"type": "string"}},
                            "required": ["branch"],
                            "additionalProperties": false
                        },
                        {
                            "description": "One commit.",
                            "type": "object",
                            "properties": {
                                "commit": {
                                    "type": "object",
                                    "properties": {"sha": {"type": "string"}},
                                    "required": ["sha"],
                                    "additionalProperties": false
                                }
                            },
                            "required": ["commit"],
                            "additionalProperties": false
                        },
                        {"type": "string", "const": "latest", "description": "Whatever was built last."}
                    ]
                }
            },
            "additionalProperties": false
        })
    );
    let registry = registry();
    let tool = registry.get("deploy").unwrap();
    for valid in [
        json!({"target": "latest"}),
        json!({"target": {"branch": "main"}}),
        json!({"target": {"commit": {"sha": "c0ffee"}}}),
    ] {
        assert_eq!(
            problems(&tool, valid.clone()),
            Vec::<String>::new(),
            "{valid}"
        );
    }
    // Only the closed inner object refuses this one.
    assert!(
        tool.validate(&json!({"target": {"commit": {"sha": "c0ffee", "short": true}}}))
            .is_err()
    );
}

/// The steps of a build.
#[derive(Deserialize, JsonSchema)]
struct BuildSpec {
    steps: u8,
}

/// A job, tagged by `kind`; a variant may carry a struct.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Job {
    Build(BuildSpec),
    Idle,
}

/// Start a job.
#[tool(public)]
fn start_job(job: Job) -> String {
    match job {
        Job::Build(spec) => format!("building in {} steps", spec.steps),
        Job::Idle => "idling".to_owned(),
    }
}

/// Regression: the variant `Build(BuildSpec)` was `{"$ref": BuildSpec, "properties": {kind}}`,
/// and closing `BuildSpec` on its own rejected the tag `kind`, so that no build job at all was
/// accepted. The struct's properties are now merged into the variant, which is then closed.
#[test]
fn an_internally_tagged_newtype_variant_accepts_its_tag_and_its_fields() {
    assert_eq!(
        parameters(&registry(), "start_job"),
        json!({
            "type": "object",
            "properties": {"job": {"$ref": "#/$defs/Job"}},
            "required": ["job"],
            "$defs": {
                "BuildSpec": {
                    "description": "The steps of a build.",
                    "type": "object",
                    "properties": {
                        "steps": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}
                    },
                    "required": ["steps"],
                    "additionalProperties": false
                },
                "Job": {
                    "description": "A job, tagged by `kind`; a variant may carry a struct.",
                    "oneOf": [
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "const": "build"},
                                "steps": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}
                            },
                            "required": ["kind", "steps"],
                            "additionalProperties": false
                        },
                        {
                            "type": "object",
                            "properties": {"kind": {"type": "string", "const": "idle"}},
                            "required": ["kind"],
                            "additionalProperties": false
                        }
                    ]
                }
            },
            "additionalProperties": false
        })
    );
    let registry = registry();
    let tool = registry.get("start_job").unwrap();
    let run = open_run(&registry, &[]);
    let call =
        |arguments| success(run.call_blocking(ToolCall::new("call_1", "start_job", arguments)));
    assert_eq!(
        call(json!({"job": {"kind": "build", "steps": 3}})),
        json!("building in 3 steps")
    );
    assert_eq!(call(json!({"job": {"kind": "idle"}})), json!("idling"));
    // The merged variant is closed: a property of neither the tag nor the struct is refused.
    assert!(
        tool.validate(&json!({"job": {"kind": "build", "steps": 3, "parallel": true}}))
            .is_err()
    );
}

// ---------------------------------------------------------------------------------------------
// Nested structs.

/// Which runs to list.
#[derive(Deserialize, JsonSchema)]
struct Filter {
    /// Only runs in this state.
    status: String,
    window: Window,
}

#[derive(Deserialize, JsonSchema)]
struct Window {
    from: String,
    to: Option<String>,
}

/// List pipeline runs.
#[tool(public)]
fn list_runs(
    /// Which runs.
    filter: Filter,
    extra_windows: Vec<Window>,
) {
    let _ = (filter, extra_windows);
}

#[test]
fn nested_structs_are_closed_under_defs() {
    assert_eq!(
        parameters(&registry(), "list_runs"),
        json!({
            "type": "object",
            "properties": {
                "filter": {"$ref": "#/$defs/Filter", "description": "Which runs."},
                "extra_windows": {"type": "array", "items": {"$ref": "#/$defs/Window"}}
            },
            "required": ["filter", "extra_windows"],
            "$defs": {
                "Filter": {
                    "description": "Which runs to list.",
                    "type": "object",
                    "properties": {
                        "status": {"type": "string", "description": "Only runs in this state."},
                        "window": {"$ref": "#/$defs/Window"}
                    },
                    "required": ["status", "window"],
                    "additionalProperties": false
                },
                "Window": {
                    "type": "object",
                    "properties": {
                        "from": {"type": "string"},
                        "to": {"type": ["string", "null"]}
                    },
                    "required": ["from"],
                    "additionalProperties": false
                }
            },
            "additionalProperties": false
        })
    );
    let registry = registry();
    let tool = registry.get("list_runs").unwrap();
    assert_eq!(
        problems(
            &tool,
            json!({
                "filter": {"status": "ok", "window": {"from": "monday", "until": "friday"}},
                "extra_windows": [{"from": "a"}, {"from": "b", "step": 1}]
            })
        ),
        [
            r#"/extra_windows/1: unknown property "step""#,
            r#"/filter/window: unknown property "until""#,
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// No parameters, the context, raw identifiers.

/// Answer pong.
#[tool(public)]
fn ping() -> &'static str {
    "pong"
}

#[test]
fn a_tool_without_parameters_takes_an_empty_closed_object() {
    let registry = registry();
    assert_eq!(
        parameters(&registry, "ping"),
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    let tool = registry.get("ping").unwrap();
    assert_eq!(problems(&tool, json!({})), Vec::<String>::new());
    assert_eq!(
        problems(&tool, json!({"x": 1})),
        [r#"unknown property "x""#]
    );
}

/// Search, knowing which call this is.
#[tool(public)]
fn search_with_context(
    ctx: &ToolContext,
    /// What to look for.
    query: String,
) -> String {
    format!("{} {query}", ctx.call_id())
}

#[test]
fn the_context_parameter_is_not_in_the_schema() {
    assert_eq!(
        parameters(&registry(), "search_with_context"),
        json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look for."}},
            "required": ["query"],
            "additionalProperties": false
        })
    );
}

/// Create an item of a kind.
#[tool(public)]
fn create_item(
    /// The kind of item.
    r#type: String,
    r#match: Option<bool>,
) -> String {
    format!("{type} {match:?}", type = r#type, match = r#match)
}

#[test]
fn raw_identifiers_lose_their_prefix() {
    let registry = registry();
    assert_eq!(
        parameters(&registry, "create_item"),
        json!({
            "type": "object",
            "properties": {
                "type": {"type": "string", "description": "The kind of item."},
                "match": {"type": ["boolean", "null"]}
            },
            "required": ["type"],
            "additionalProperties": false
        })
    );
    let run = open_run(&registry, &[]);
    assert_eq!(
        success(run.call_blocking(ToolCall::new(
            "call_1",
            "create_item",
            json!({"type": "folder", "match": true})
        ))),
        json!("folder Some(true)")
    );
}

/// A tool whose name is a keyword.
#[tool(public)]
fn r#move(to: String) -> String {
    to
}

#[test]
fn a_raw_identifier_tool_name_loses_its_prefix() {
    let registry = registry();
    assert!(registry.contains("move"));
    assert!(!registry.contains("r#move"));
}

// ---------------------------------------------------------------------------------------------
// Description and title.

/// Read the current build status of a project.
///
/// Returns the state of the last pipeline run,
/// with its step count:
///
///     green (12 steps)
#[tool(public)]
fn documented() {}

/// This doc comment is for the code's readers only.
#[tool(
    public,
    description = "Report the build status, as the model reads it.",
    title = "Build status"
)]
fn overridden() {}

#[test]
fn the_description_is_the_doc_comment_with_its_paragraphs() {
    let registry = registry();
    let definition = registry.get("documented").unwrap().definition();
    assert_eq!(
        definition.description,
        "Read the current build status of a project.\n\
         \n\
         Returns the state of the last pipeline run,\n\
         with its step count:\n\
         \n\
         \x20   green (12 steps)"
    );
    assert_eq!(definition.title, None);
}

#[test]
fn the_description_key_overrides_the_doc_comment_and_title_is_kept() {
    let registry = registry();
    let definition = registry.get("overridden").unwrap().definition();
    assert_eq!(
        definition.description,
        "Report the build status, as the model reads it."
    );
    assert_eq!(definition.title.as_deref(), Some("Build status"));
}

#[test]
fn a_definition_serializes_with_its_title_only_when_there_is_one() {
    let registry = registry();
    assert_eq!(
        serde_json::to_value(&*registry.get("overridden").unwrap().definition()).unwrap(),
        json!({
            "name": "overridden",
            "description": "Report the build status, as the model reads it.",
            "title": "Build status",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": false}
        })
    );
    assert_eq!(
        serde_json::to_value(&*registry.get("ping").unwrap().definition()).unwrap(),
        json!({
            "name": "ping",
            "description": "Answer pong.",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": false}
        })
    );
}

#[test]
fn every_tool_of_this_file_is_in_the_registry() {
    assert_eq!(
        registry().names().collect::<Vec<_>>(),
        [
            "collections",
            "create_item",
            "deploy",
            "documented",
            "draw",
            "list_runs",
            "move",
            "overridden",
            "ping",
            "primitives",
            "run_command",
            "search_with_context",
            "set_priority",
            "start_job",
            "store",
        ]
    );
}

#[test]
fn a_tagged_enum_is_reported_against_the_variant_the_value_names() {
    let registry = registry();
    let draw = registry.get("draw").unwrap();
    // The tag names the variant: its own problems are reported, not "no form matches".
    assert_eq!(
        problems(&draw, json!({"shape": {"kind": "circle"}})),
        ["/shape: missing required property \"radius\""]
    );
    assert_eq!(
        problems(
            &draw,
            json!({"shape": {"kind": "circle", "radius": 1.0, "colour": "red"}})
        ),
        ["/shape: unknown property \"colour\""]
    );
    assert_eq!(
        problems(&draw, json!({"shape": {"kind": "circle", "radius": "big"}})),
        ["/shape/radius: expected number, got string \"big\""]
    );
    let deploy = registry.get("deploy").unwrap();
    assert_eq!(
        problems(
            &deploy,
            json!({"target": {"commit": {"sha": "x", "short": true}}})
        ),
        ["/target/commit: unknown property \"short\""]
    );
    assert_eq!(
        problems(&deploy, json!({"target": {"branch": 5}})),
        ["/target/branch: expected string, got integer 5"]
    );
    assert_eq!(
        problems(&deploy, json!({"target": "earliest"})),
        ["/target: expected one of object or \"latest\", got string \"earliest\""]
    );
}

/// A command: a name, plus what kind of command it is, flattened beside it.
#[derive(Deserialize, JsonSchema)]
struct Command {
    name: String,
    #[serde(flatten)]
    kind: CommandKind,
}

/// The kinds of command.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind")]
enum CommandKind {
    A { speed: u8 },
    B,
}

/// Run a command.
#[tool(public)]
fn run_command(cmd: Command) -> String {
    match cmd.kind {
        CommandKind::A { speed } => format!("{} at {speed}", cmd.name),
        CommandKind::B => cmd.name,
    }
}

#[test]
fn a_flattened_tagged_enum_accepts_the_parent_properties_and_rejects_others() {
    let registry = registry();
    let tool = registry.get("run_command").unwrap();
    assert_eq!(
        problems(&tool, json!({"cmd": {"name": "x", "kind": "B"}})),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(
            &tool,
            json!({"cmd": {"name": "x", "kind": "A", "speed": 3}})
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(
            &tool,
            json!({"cmd": {"name": "x", "kind": "B", "colour": "red"}})
        ),
        ["/cmd: unknown property \"colour\""]
    );
}
