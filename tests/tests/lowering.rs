//! Lowering a tool's canonical schema to each profile (`docs/providers.md`), compared
//! as a whole for the representative tools (every parameter shape `#[tool]` supports) and for
//! hand-written schemas; a recursive type as an exact incompatibility where `$ref`s cannot stay,
//! reported by `Registry::check`, `RegistryBuilder::require_compatible` and `assert_compatible`;
//! arguments still validated against the canonical schema; and the compatibility checker on
//! exported JSON.

mod representative;

use std::panic::{AssertUnwindSafe, catch_unwind};

use registry_core::compat::{check_tool, check_tools};
use registry_core::{
    BuildProblem, DynamicTool, Profile, Registry, RegistryError, Subject,
    call::ToolError,
    compat::{CompatibilityError, Incompatibility},
};
use serde_json::{Value, json};

const MODULE: &str = concat!(module_path!(), "::representative");

const OPENAI: Profile = Profile::OpenAiChat { strict: false };
const STRICT: Profile = Profile::OpenAiChat { strict: true };

/// The registry of the representative tools.
fn representative() -> Registry {
    Registry::builder()
        .declared_in([MODULE])
        .build()
        .expect("the representative tools build a registry")
}

/// The canonical schema of a representative tool.
fn canonical(name: &str) -> Value {
    representative()
        .get(name)
        .unwrap()
        .definition()
        .parameters
        .clone()
}

/// The arguments schema in one exported tool list of one tool.
fn schema_in(profile: Profile, list: &Value) -> Value {
    match profile {
        Profile::Mcp => list[0]["inputSchema"].clone(),
        Profile::OpenAiChat { .. } => list[0]["function"]["parameters"].clone(),
        Profile::OpenAiResponses { .. } => list[0]["parameters"].clone(),
        Profile::Anthropic => list[0]["input_schema"].clone(),
        Profile::Gemini => list[0]["functionDeclarations"][0]["parameters"].clone(),
        other => panic!("unknown profile {other}"),
    }
}

/// `schema`, as the arguments of a tool named `name`, lowered to `profile` (read back from the
/// export of a registry of that one tool).
fn lower(profile: Profile, name: &str, schema: Value) -> Result<Value, Vec<Incompatibility>> {
    let registry = Registry::builder()
        .tool(
            DynamicTool::new(name, "A tool.")
                .public()
                .parameters(schema)
                .handler(|_, _| Ok::<_, String>(Value::Null)),
        )
        .build()
        .expect("the tool builds");
    let run = registry.open_run("lowering", &Subject::new("tenant-a"));
    match run.export(profile) {
        Ok(list) => Ok(schema_in(profile, &list)),
        Err(error) => Err(error.into_incompatibilities()),
    }
}

/// The representative tool `name` lowered to `profile`.
fn lowered(profile: Profile, name: &str) -> Result<Value, Vec<Incompatibility>> {
    lower(profile, name, canonical(name))
}

fn incompatibility(
    profile: Profile,
    tool: &str,
    pointer: &str,
    rule: &str,
    fix: &str,
) -> Incompatibility {
    Incompatibility::new(profile, tool, pointer, rule, fix)
}

/// What `grow_tree`'s recursive type is, for `profile` (Anthropic or Gemini).
fn recursive_tree(profile: Profile) -> Incompatibility {
    let rule = match profile {
        Profile::Gemini => {
            "Gemini takes no `$defs`/`$ref`, so every type is inlined, and the recursive type \
             `TreeNode` (TreeNode -> TreeNode) cannot be"
        }
        _ => {
            "Anthropic: `$ref` may not be recursive, and the type `TreeNode` is (TreeNode -> TreeNode)"
        }
    };
    incompatibility(
        profile,
        "grow_tree",
        "/$defs/TreeNode/properties/children/items",
        rule,
        &format!(
            "make `TreeNode` non-recursive (bound its depth with distinct types, or take the nested \
             part as a JSON string), or do not offer this tool to {}",
            if profile == Profile::Gemini {
                "Gemini"
            } else {
                "Anthropic"
            }
        ),
    )
}

/// What `annotate`'s map and any values are, in OpenAI strict mode.
fn open_annotate(profile: Profile) -> Vec<Incompatibility> {
    let any = |pointer: &str| {
        incompatibility(
            profile,
            "annotate",
            pointer,
            "OpenAI strict mode: every object must be closed, and a schema that accepts any value \
             (`serde_json::Value`) accepts open objects",
            "give the parameter or field a concrete type, or export with `strict: false`",
        )
    };
    vec![
        incompatibility(
            profile,
            "annotate",
            "/properties/counts",
            "OpenAI strict mode: every object must be closed (`additionalProperties: false`), so a \
             map (any property name) cannot be expressed",
            "take a list of key/value structs instead of a map, or export with `strict: false`",
        ),
        any("/properties/meta"),
        any("/properties/payload"),
    ]
}

// ---------------------------------------------------------------------------------------------
// The representative tools, per profile.

#[test]
fn mcp_takes_every_canonical_schema_unchanged() {
    let registry = representative();
    assert_eq!(registry.len(), 9);
    for name in registry.names() {
        assert_eq!(lowered(Profile::Mcp, name), Ok(canonical(name)), "{name}");
    }
}

#[test]
fn chat_completions_and_responses_lower_alike() {
    for name in representative().names() {
        for strict in [false, true] {
            let as_chat = |mut problems: Vec<Incompatibility>| {
                for problem in &mut problems {
                    assert_eq!(problem.profile, Profile::OpenAiResponses { strict });
                    problem.profile = Profile::OpenAiChat { strict };
                }
                problems
            };
            assert_eq!(
                lowered(Profile::OpenAiChat { strict }, name),
                lowered(Profile::OpenAiResponses { strict }, name).map_err(as_chat),
                "{name}, strict: {strict}"
            );
        }
    }
}

#[test]
fn primitives_lose_their_integer_formats_into_words_or_into_gemini_formats() {
    let openai = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The name to greet."},
            "flag": {"type": "boolean"},
            "offset": {"type": "integer", "description": "Constraints: a signed 64-bit integer."},
            "count": {
                "type": "integer",
                "minimum": 0,
                "description": "How many times. Constraints: an unsigned 32-bit integer."
            },
            "ratio": {"type": "number"},
            "level": {"type": "integer", "minimum": 0, "maximum": 255}
        },
        "required": ["name", "flag", "offset", "count", "ratio", "level"],
        "additionalProperties": false
    });
    assert_eq!(lowered(OPENAI, "primitives"), Ok(openai.clone()));
    assert_eq!(lowered(STRICT, "primitives"), Ok(openai.clone()));
    assert_eq!(lowered(Profile::Anthropic, "primitives"), Ok(openai));
    assert_eq!(
        lowered(Profile::Gemini, "primitives"),
        Ok(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The name to greet."},
                "flag": {"type": "boolean"},
                "offset": {"type": "integer", "format": "int64"},
                "count": {
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                    "description": "How many times. Constraints: an unsigned 32-bit integer."
                },
                "ratio": {"type": "number", "format": "double"},
                "level": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 255}
            },
            "required": ["name", "flag", "offset", "count", "ratio", "level"]
        }))
    );
}

#[test]
fn options_are_required_and_nullable_in_strict_mode_and_nullable_true_for_gemini() {
    let pair_words = "Constraints: the items in this order: an integer, a string.";
    let openai_properties = json!({
        "tags": {"type": "array", "items": {"type": "string"}},
        "limit": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "At most this many. Constraints: an unsigned 32-bit integer."
        },
        "ids": {
            "type": ["array", "null"],
            "items": {"type": "integer", "description": "Constraints: a signed 64-bit integer."}
        },
        "pair": {
            "type": "array",
            "items": {"anyOf": [
                {"type": "integer", "minimum": 0, "maximum": 255},
                {"type": "string"}
            ]},
            "minItems": 2,
            "maxItems": 2,
            "description": pair_words
        },
        "labels": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Constraints: no duplicate items."
        }
    });
    assert_eq!(
        lowered(OPENAI, "collections"),
        Ok(json!({
            "type": "object",
            "properties": openai_properties,
            "required": ["tags", "pair", "labels"],
            "additionalProperties": false
        }))
    );
    assert_eq!(
        lowered(STRICT, "collections"),
        Ok(json!({
            "type": "object",
            "properties": openai_properties,
            "required": ["tags", "pair", "labels", "ids", "limit"],
            "additionalProperties": false
        }))
    );
    assert_eq!(
        lowered(Profile::Anthropic, "collections"),
        Ok(json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "limit": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "description": "At most this many. Constraints: an unsigned 32-bit integer."
                },
                "ids": {
                    "type": ["array", "null"],
                    "items": {"type": "integer", "description": "Constraints: a signed 64-bit integer."}
                },
                "pair": {
                    "type": "array",
                    "prefixItems": [{"type": "integer", "minimum": 0, "maximum": 255}, {"type": "string"}],
                    "minItems": 2,
                    "maxItems": 2
                },
                "labels": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}
            },
            "required": ["tags", "pair", "labels"],
            "additionalProperties": false
        }))
    );
    assert_eq!(
        lowered(Profile::Gemini, "collections"),
        Ok(json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "limit": {
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                    "nullable": true,
                    "description": "At most this many. Constraints: an unsigned 32-bit integer."
                },
                "ids": {
                    "type": "array",
                    "nullable": true,
                    "items": {"type": "integer", "format": "int64"}
                },
                "pair": {
                    "type": "array",
                    "items": {"anyOf": [
                        {"type": "integer", "format": "int32", "minimum": 0, "maximum": 255},
                        {"type": "string"}
                    ]},
                    "minItems": 2,
                    "maxItems": 2,
                    "description": pair_words
                },
                "labels": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Constraints: no duplicate items."
                }
            },
            "required": ["tags", "pair", "labels"]
        }))
    );
}

#[test]
fn unit_enums_become_unions_of_constants_or_gemini_string_enums() {
    let priority_branches = json!([
        {"type": "string", "const": "low", "description": "It can wait."},
        {"type": "string", "const": "high", "description": "It needs attention today."}
    ]);
    let openai_defs = json!({
        "Channel": {"type": "string", "enum": ["email", "chat"]},
        "Priority": {"description": "How urgent a ticket is.", "anyOf": priority_branches}
    });
    let openai_properties = json!({
        // The `$ref` had a sibling (the parameter's doc): the definition is inlined there.
        "priority": {"description": "The new priority.", "anyOf": priority_branches},
        "fallback": {"anyOf": [{"$ref": "#/$defs/Priority"}, {"type": "null"}]},
        "channel": {"$ref": "#/$defs/Channel"},
        "cc": {"anyOf": [{"$ref": "#/$defs/Channel"}, {"type": "null"}]}
    });
    assert_eq!(
        lowered(OPENAI, "set_priority"),
        Ok(json!({
            "type": "object",
            "properties": openai_properties,
            "required": ["priority", "channel"],
            "$defs": openai_defs,
            "additionalProperties": false
        }))
    );
    assert_eq!(
        lowered(STRICT, "set_priority"),
        Ok(json!({
            "type": "object",
            "properties": openai_properties,
            "required": ["priority", "channel", "cc", "fallback"],
            "$defs": openai_defs,
            "additionalProperties": false
        }))
    );
    assert_eq!(
        lowered(Profile::Anthropic, "set_priority"),
        Ok(json!({
            "type": "object",
            "properties": {
                "priority": {"description": "The new priority.", "anyOf": priority_branches},
                "fallback": {
                    "description": "How urgent a ticket is.",
                    "anyOf": [
                        {"type": "string", "const": "low", "description": "It can wait."},
                        {"type": "string", "const": "high", "description": "It needs attention today."},
                        {"type": "null"}
                    ]
                },
                "channel": {"type": "string", "enum": ["email", "chat"]},
                "cc": {"anyOf": [{"type": "string", "enum": ["email", "chat"]}, {"type": "null"}]}
            },
            "required": ["priority", "channel"],
            "additionalProperties": false
        }))
    );
    let values = "Values: \"low\": It can wait. \"high\": It needs attention today.";
    assert_eq!(
        lowered(Profile::Gemini, "set_priority"),
        Ok(json!({
            "type": "object",
            "properties": {
                "priority": {
                    "type": "string",
                    "format": "enum",
                    "enum": ["low", "high"],
                    "description": format!("The new priority. {values}")
                },
                "fallback": {
                    "type": "string",
                    "format": "enum",
                    "enum": ["low", "high"],
                    "nullable": true,
                    "description": format!("How urgent a ticket is. {values}")
                },
                "channel": {"type": "string", "format": "enum", "enum": ["email", "chat"]},
                "cc": {"type": "string", "format": "enum", "enum": ["email", "chat"], "nullable": true}
            },
            "required": ["priority", "channel"]
        }))
    );
}

#[test]
fn tagged_enums_become_any_of_their_variants() {
    let openai = json!({
        "type": "object",
        "properties": {"shape": {"$ref": "#/$defs/Shape"}, "target": {"$ref": "#/$defs/Target"}},
        "required": ["shape", "target"],
        "$defs": {
            "Shape": {
                "description": "A shape, tagged by `kind`.",
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"kind": {"type": "string", "const": "circle"}, "radius": {"type": "number"}},
                        "required": ["kind", "radius"],
                        "additionalProperties": false
                    },
                    {
                        "type": "object",
                        "properties": {
                            "kind": {"type": "string", "const": "rectangle"},
                            "width": {"type": "number"},
                            "height": {"type": "number"}
                        },
                        "required": ["kind", "width", "height"],
                        "additionalProperties": false
                    }
                ]
            },
            "Target": {
                "description": "Where to deploy.",
                "anyOf": [
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
                        "properties": {"commit": {
                            "type": "object",
                            "properties": {"sha": {"type": "string"}},
                            "required": ["sha"],
                            "additionalProperties": false
                        }},
                        "required": ["commit"],
                        "additionalProperties": false
                    },
                    {"type": "string", "const": "latest", "description": "Whatever was built last."}
                ]
            }
        },
        "additionalProperties": false
    });
    assert_eq!(lowered(OPENAI, "draw"), Ok(openai.clone()));
    assert_eq!(lowered(STRICT, "draw"), Ok(openai));
    assert_eq!(
        lowered(Profile::Gemini, "draw"),
        Ok(json!({
            "type": "object",
            "properties": {
                "shape": {
                    "description": "A shape, tagged by `kind`.",
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "format": "enum", "enum": ["circle"]},
                                "radius": {"type": "number", "format": "double"}
                            },
                            "required": ["kind", "radius"]
                        },
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "format": "enum", "enum": ["rectangle"]},
                                "width": {"type": "number", "format": "double"},
                                "height": {"type": "number", "format": "double"}
                            },
                            "required": ["kind", "width", "height"]
                        }
                    ]
                },
                "target": {
                    "description": "Where to deploy.",
                    "anyOf": [
                        {
                            "description": "The head of a branch.",
                            "type": "object",
                            "properties": {"branch": {"type": "string"}},
                            "required": ["branch"]
                        },
                        {
                            "description": "One commit.",
                            "type": "object",
                            "properties": {"commit": {
                                "type": "object",
                                "properties": {"sha": {"type": "string"}},
                                "required": ["sha"]
                            }},
                            "required": ["commit"]
                        },
                        {
                            "type": "string",
                            "format": "enum",
                            "enum": ["latest"],
                            "description": "Whatever was built last."
                        }
                    ]
                }
            },
            "required": ["shape", "target"]
        }))
    );
}

#[test]
fn nested_structs_are_inlined_closed_or_opened_as_each_profile_takes_them() {
    let window = |extra: Value| {
        let mut window = json!({
            "type": "object",
            "properties": {"from": {"type": "string"}, "to": {"type": ["string", "null"]}},
            "required": ["from"],
            "additionalProperties": false
        });
        window
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        window
    };
    assert_eq!(
        lowered(STRICT, "list_runs"),
        Ok(json!({
            "type": "object",
            "properties": {
                "filter": {
                    "description": "Which runs.",
                    "type": "object",
                    "properties": {
                        "status": {"type": "string", "description": "Only runs in this state."},
                        "window": {"$ref": "#/$defs/Window"}
                    },
                    "required": ["status", "window"],
                    "additionalProperties": false
                },
                "extra_windows": {"type": "array", "items": {"$ref": "#/$defs/Window"}},
                "window": {"anyOf": [{"$ref": "#/$defs/Window"}, {"type": "null"}]}
            },
            "required": ["filter", "extra_windows", "window"],
            "$defs": {"Window": window(json!({"required": ["from", "to"]}))},
            "additionalProperties": false
        }))
    );
    let inlined = window(json!({}));
    assert_eq!(
        lowered(Profile::Anthropic, "list_runs"),
        Ok(json!({
            "type": "object",
            "properties": {
                "filter": {
                    "description": "Which runs.",
                    "type": "object",
                    "properties": {
                        "status": {"type": "string", "description": "Only runs in this state."},
                        "window": inlined
                    },
                    "required": ["status", "window"],
                    "additionalProperties": false
                },
                "extra_windows": {"type": "array", "items": inlined},
                "window": {"anyOf": [inlined, {"type": "null"}]}
            },
            "required": ["filter", "extra_windows"],
            "additionalProperties": false
        }))
    );
    let gemini_window = json!({
        "type": "object",
        "properties": {"from": {"type": "string"}, "to": {"type": "string", "nullable": true}},
        "required": ["from"]
    });
    let mut nullable_window = gemini_window.clone();
    nullable_window["nullable"] = json!(true);
    assert_eq!(
        lowered(Profile::Gemini, "list_runs"),
        Ok(json!({
            "type": "object",
            "properties": {
                "filter": {
                    "description": "Which runs.",
                    "type": "object",
                    "properties": {
                        "status": {"type": "string", "description": "Only runs in this state."},
                        "window": gemini_window
                    },
                    "required": ["status", "window"]
                },
                "extra_windows": {"type": "array", "items": gemini_window},
                "window": nullable_window
            },
            "required": ["filter", "extra_windows"]
        }))
    );
}

#[test]
fn bounds_and_formats_a_profile_cannot_take_move_into_the_description() {
    let copies = json!({
        "type": "integer",
        "minimum": 0,
        "description": "How many copies to print. Constraints: an unsigned 32-bit integer."
    });
    assert_eq!(
        lowered(OPENAI, "publish"),
        Ok(json!({
            "type": "object",
            "properties": {"page": {"$ref": "#/$defs/Page"}, "copies": copies},
            "required": ["page", "copies"],
            "$defs": {"Page": {
                "description": "A page to publish.",
                "type": "object",
                "properties": {
                    "title": {
                        "type": "string",
                        "description": "The title. Constraints: at least 1 character; at most 100 characters."
                    },
                    "slug": {
                        "type": "string",
                        "description": "Where the page lives. Constraints: matching the pattern ^[a-z0-9-]+$."
                    },
                    "author": {"type": ["string", "null"], "format": "email"},
                    "rating": {"type": "integer", "minimum": 1, "maximum": 5, "description": "Stars, from 1 to 5."}
                },
                "required": ["title", "slug", "rating"],
                "additionalProperties": false
            }},
            "additionalProperties": false
        }))
    );
    assert_eq!(
        lowered(Profile::Anthropic, "publish"),
        Ok(json!({
            "type": "object",
            "properties": {
                "page": {
                    "description": "A page to publish.",
                    "type": "object",
                    "properties": {
                        "title": {"type": "string", "minLength": 1, "maxLength": 100, "description": "The title."},
                        "slug": {"type": "string", "pattern": "^[a-z0-9-]+$", "description": "Where the page lives."},
                        "author": {"type": ["string", "null"], "format": "email"},
                        "rating": {"type": "integer", "minimum": 1, "maximum": 5, "description": "Stars, from 1 to 5."}
                    },
                    "required": ["title", "slug", "rating"],
                    "additionalProperties": false
                },
                "copies": copies
            },
            "required": ["page", "copies"],
            "additionalProperties": false
        }))
    );
    assert_eq!(
        lowered(Profile::Gemini, "publish"),
        Ok(json!({
            "type": "object",
            "properties": {
                "page": {
                    "description": "A page to publish.",
                    "type": "object",
                    "properties": {
                        "title": {"type": "string", "minLength": 1, "maxLength": 100, "description": "The title."},
                        "slug": {
                            "type": "string",
                            "description": "Where the page lives. Constraints: matching the pattern ^[a-z0-9-]+$."
                        },
                        "author": {
                            "type": "string",
                            "nullable": true,
                            "description": "Constraints: an email address."
                        },
                        "rating": {
                            "type": "integer",
                            "format": "int32",
                            "minimum": 1,
                            "maximum": 5,
                            "description": "Stars, from 1 to 5."
                        }
                    },
                    "required": ["title", "slug", "rating"]
                },
                "copies": {
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                    "description": "How many copies to print. Constraints: an unsigned 32-bit integer."
                }
            },
            "required": ["page", "copies"]
        }))
    );
}

#[test]
fn maps_and_any_values_cannot_be_offered_in_strict_mode() {
    assert_eq!(
        lowered(OPENAI, "annotate"),
        Ok(json!({
            "type": "object",
            "properties": {
                "counts": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Constraints: an unsigned 32-bit integer."
                    },
                    "description": "Counts by label."
                },
                "payload": {"description": "The payload, of any shape."},
                "meta": {}
            },
            "required": ["counts", "payload"],
            "additionalProperties": false
        }))
    );
    for strict in [STRICT, Profile::OpenAiResponses { strict: true }] {
        assert_eq!(lowered(strict, "annotate"), Err(open_annotate(strict)));
    }
    assert_eq!(
        lowered(Profile::Gemini, "annotate"),
        Ok(json!({
            "type": "object",
            "properties": {
                "counts": {
                    "type": "object",
                    "description": "Counts by label. Constraints: an object with any property names, each \
                                    value matching {\"format\":\"uint32\",\"minimum\":0,\"type\":\"integer\"}."
                },
                "payload": {"description": "The payload, of any shape."},
                "meta": {}
            },
            "required": ["counts", "payload"]
        }))
    );
}

// ---------------------------------------------------------------------------------------------
// A recursive type.

#[test]
fn a_recursive_type_is_an_incompatibility_for_anthropic_and_gemini_naming_tool_and_type() {
    for profile in [Profile::Anthropic, Profile::Gemini] {
        assert_eq!(
            lowered(profile, "grow_tree"),
            Err(vec![recursive_tree(profile)]),
            "{profile}"
        );
    }
    assert_eq!(
        lowered(Profile::Mcp, "grow_tree"),
        Ok(canonical("grow_tree"))
    );
    let node = json!({
        "type": "object",
        "properties": {
            "label": {"type": "string", "description": "The node's label."},
            "children": {
                "type": "array",
                "items": {"$ref": "#/$defs/TreeNode"},
                "description": "The node's children, in order."
            }
        },
        "required": ["label", "children"],
        "additionalProperties": false
    });
    let mut root = node.clone();
    root["description"] = json!("The root of the tree.");
    let mut definition = node;
    definition["description"] = json!("A node of a tree of labels.");
    let openai = json!({
        "type": "object",
        "properties": {"root": root},
        "required": ["root"],
        "$defs": {"TreeNode": definition},
        "additionalProperties": false
    });
    assert_eq!(lowered(OPENAI, "grow_tree"), Ok(openai.clone()));
    assert_eq!(lowered(STRICT, "grow_tree"), Ok(openai));
}

#[test]
fn registry_check_lists_every_incompatibility() {
    let registry = representative();
    assert_eq!(registry.check(Profile::Mcp), Ok(()));
    assert_eq!(registry.check(OPENAI), Ok(()));
    assert_eq!(
        registry.check(Profile::OpenAiResponses { strict: false }),
        Ok(())
    );
    for profile in [Profile::Anthropic, Profile::Gemini] {
        assert_eq!(
            registry.check(profile),
            Err(CompatibilityError::new(vec![recursive_tree(profile)]))
        );
    }
    assert_eq!(
        registry.check(STRICT),
        Err(CompatibilityError::new(open_annotate(STRICT)))
    );
}

#[test]
fn require_compatible_refuses_to_build_and_lists_the_problems() {
    let error = Registry::builder()
        .declared_in([MODULE])
        .require_compatible([Profile::Mcp, Profile::Gemini])
        .build()
        .unwrap_err();
    let RegistryError::Build(problems) = &error else {
        panic!("expected a build error, got {error:?}");
    };
    assert_eq!(
        problems,
        &vec![BuildProblem::Incompatible(recursive_tree(Profile::Gemini))]
    );
    assert!(
        error.to_string().contains("recursive type `TreeNode`"),
        "{error}"
    );
    let built = Registry::builder()
        .declared_in([MODULE])
        .require_compatible([
            Profile::Mcp,
            OPENAI,
            Profile::OpenAiResponses { strict: false },
        ])
        .build();
    assert!(built.is_ok(), "{:?}", built.err());
}

#[test]
fn assert_compatible_panics_with_the_list_of_incompatibilities() {
    let registry = representative();
    let panic = catch_unwind(AssertUnwindSafe(|| {
        registry.assert_compatible(Profile::ALL)
    }))
    .expect_err("grow_tree and annotate are not compatible with every profile");
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .expect("a formatted panic message");
    let mut expected = open_annotate(STRICT);
    expected.extend(open_annotate(Profile::OpenAiResponses { strict: true }));
    expected.push(recursive_tree(Profile::Anthropic));
    expected.push(recursive_tree(Profile::Gemini));
    assert_eq!(message, CompatibilityError::new(expected).to_string());
    assert!(message.starts_with("8 incompatibilities with provider profiles:\n  - openai-chat-strict: tool \"annotate\" at \"/properties/counts\""));
    // Without those two, nothing to report.
    let compatible = Registry::builder().declared_in([MODULE]).build().unwrap();
    let run_tools: Vec<String> = compatible
        .names()
        .filter(|n| !["annotate", "grow_tree"].contains(n))
        .map(str::to_owned)
        .collect();
    for name in run_tools {
        let single = Registry::builder()
            .tool(
                DynamicTool::new(name.clone(), "A tool.")
                    .public()
                    .parameters(canonical(&name))
                    .handler(|_, _| Ok::<_, String>(Value::Null)),
            )
            .build()
            .unwrap();
        single.assert_compatible(Profile::ALL);
    }
}

#[test]
fn arguments_are_still_validated_against_the_canonical_schema() {
    let registry = representative();
    let publish = registry.get("publish").unwrap();
    let long = "x".repeat(101);
    let error = publish
        .validate(&json!({"page": {"title": long, "slug": "Not A Slug", "rating": 9}, "copies": 1}))
        .unwrap_err();
    let ToolError::InvalidArguments(problems) = error else {
        panic!("expected invalid arguments");
    };
    let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "/page/rating: must be at most 5, got 9",
            "/page/slug: must match the pattern \"^[a-z0-9-]+$\"",
            "/page/title: must be at most 100 characters long",
        ]
    );
    // Strict mode sends every property; `null` for an `Option` means `None`.
    let collections = registry.get("collections").unwrap();
    assert_eq!(
        collections.validate(&json!({
            "tags": [], "pair": [1, "a"], "labels": [], "ids": null, "limit": null
        })),
        Ok(())
    );
}

// ---------------------------------------------------------------------------------------------
// Hand-written schemas: what `#[tool]` rarely produces.

#[test]
fn schema_keyword_is_dropped_and_a_single_all_of_merged() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"id": {"allOf": [{"$ref": "#/$defs/Id"}], "description": "The record."}},
        "required": ["id"],
        "$defs": {"Id": {"type": "string", "format": "uuid", "description": "An id."}},
        "additionalProperties": false
    });
    assert_eq!(
        lower(Profile::Mcp, "find", schema.clone()),
        Ok(schema.clone())
    );
    let openai = json!({
        "type": "object",
        "properties": {"id": {"type": "string", "format": "uuid", "description": "The record."}},
        "required": ["id"],
        "additionalProperties": false
    });
    assert_eq!(lower(OPENAI, "find", schema.clone()), Ok(openai.clone()));
    assert_eq!(
        lower(Profile::Anthropic, "find", schema.clone()),
        Ok(openai)
    );
    assert_eq!(
        lower(Profile::Gemini, "find", schema),
        Ok(json!({
            "type": "object",
            "properties": {"id": {"type": "string", "description": "The record. Constraints: a UUID."}},
            "required": ["id"]
        }))
    );
}

#[test]
fn unmergeable_all_of_and_not_are_incompatibilities_except_where_taken() {
    let schema = json!({
        "type": "object",
        "properties": {
            "x": {"allOf": [{"type": "string"}, {"type": "integer"}]},
            "y": {"type": "string", "not": {"const": "root"}}
        }
    });
    assert_eq!(
        lower(OPENAI, "odd", schema.clone()),
        Err(vec![
            incompatibility(
                OPENAI,
                "odd",
                "/properties/x/allOf",
                "OpenAI: no `allOf`; its branches cannot be merged (both give `type`)",
                "declare one struct with all the fields instead of composing several",
            ),
            incompatibility(
                OPENAI,
                "odd",
                "/properties/y/not",
                "OpenAI: composition is `anyOf` only (no `allOf`, `not`, `if`/`then`/`else`, \
                 `dependent*`); `not` cannot be expressed",
                "check this condition in the tool's body instead of in the schema",
            ),
        ])
    );
    // Anthropic takes a (limited) `allOf`, not `not`.
    let anthropic = lower(Profile::Anthropic, "odd", schema.clone()).unwrap_err();
    assert_eq!(
        anthropic
            .iter()
            .map(|p| p.pointer.as_str())
            .collect::<Vec<_>>(),
        ["/properties/y/not"]
    );
    assert_eq!(lower(Profile::Mcp, "odd", schema.clone()), Ok(schema));
}

#[test]
fn gemini_makes_exclusive_integer_bounds_inclusive_and_describes_the_rest() {
    let schema = json!({
        "type": "object",
        "properties": {
            "n": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
            "x": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
            "code": {"type": "integer", "enum": [200, 404]},
            "mixed": {"type": ["string", "integer"]}
        }
    });
    assert_eq!(
        lower(Profile::Gemini, "bounded", schema.clone()),
        Ok(json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1, "maximum": 9},
                "x": {"type": "number", "description": "Constraints: greater than 0; a multiple of 0.5."},
                "code": {"type": "integer", "description": "Constraints: one of 200, 404."},
                "mixed": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
            }
        }))
    );
    // OpenAI takes them all.
    assert_eq!(lower(OPENAI, "bounded", schema.clone()), Ok(schema));
}

#[test]
fn mutual_recursion_is_found_and_named_with_its_cycle() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}
        }
    });
    assert_eq!(
        lower(Profile::Gemini, "cycle", schema.clone()),
        Err(vec![incompatibility(
            Profile::Gemini,
            "cycle",
            "/$defs/B/properties/a",
            "Gemini takes no `$defs`/`$ref`, so every type is inlined, and the recursive type `A` \
             (A -> B -> A) cannot be",
            "make `A` non-recursive (bound its depth with distinct types, or take the nested part \
             as a JSON string), or do not offer this tool to Gemini",
        )])
    );
    // OpenAI keeps the `$ref`s (and closes the objects in strict mode).
    assert_eq!(
        lower(STRICT, "cycle", schema),
        Ok(json!({
            "type": "object",
            "properties": {"a": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}},
            "required": ["a"],
            "$defs": {
                "A": {
                    "type": "object",
                    "properties": {"b": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}]}},
                    "required": ["b"],
                    "additionalProperties": false
                },
                "B": {
                    "type": "object",
                    "properties": {"a": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}},
                    "required": ["a"],
                    "additionalProperties": false
                }
            },
            "additionalProperties": false
        }))
    );
}

#[test]
fn a_recursive_ref_with_siblings_is_wrapped_for_openai() {
    let schema = json!({
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/Link"}},
        "required": ["head"],
        "$defs": {"Link": {
            "type": "object",
            "properties": {"next": {"$ref": "#/$defs/Link", "description": "The next link."}},
            "additionalProperties": false
        }}
    });
    assert_eq!(
        lower(OPENAI, "chain", schema),
        Ok(json!({
            "type": "object",
            "properties": {"head": {"$ref": "#/$defs/Link"}},
            "required": ["head"],
            "$defs": {"Link": {
                "type": "object",
                "properties": {"next": {
                    "anyOf": [{"$ref": "#/$defs/Link"}],
                    "description": "The next link."
                }},
                "additionalProperties": false
            }}
        }))
    );
}

#[test]
fn a_flattened_enum_spreads_its_struct_into_each_variant() {
    // What `#[serde(flatten)]` of a tagged enum into a struct means: the struct's properties
    // beside a `oneOf` of the variants, closed by `unevaluatedProperties`.
    let schema = json!({
        "type": "object",
        "properties": {"command": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "oneOf": [
                {"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind", "x"]},
                {"properties": {"kind": {"const": "b"}}, "required": ["kind"]}
            ],
            "unevaluatedProperties": false
        }},
        "required": ["command"],
        "additionalProperties": false
    });
    assert_eq!(
        lower(STRICT, "command", schema),
        Ok(json!({
            "type": "object",
            "properties": {"command": {"anyOf": [
                {
                    "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}, "name": {"type": "string"}},
                    "required": ["kind", "x", "name"],
                    "additionalProperties": false
                },
                {
                    "properties": {"kind": {"const": "b"}, "name": {"type": "string"}},
                    "required": ["kind", "name"],
                    "additionalProperties": false
                }
            ]}},
            "required": ["command"],
            "additionalProperties": false
        }))
    );
}

#[test]
fn strict_mode_describes_defaults_and_makes_defaulted_properties_nullable() {
    let schema = json!({
        "type": "object",
        "properties": {"page": {"type": "integer", "format": "uint32", "minimum": 0, "default": 1}},
        "additionalProperties": false
    });
    assert_eq!(
        lower(STRICT, "paged", schema.clone()),
        Ok(json!({
            "type": "object",
            "properties": {"page": {
                "type": ["integer", "null"],
                "minimum": 0,
                "description": "Default: 1. Constraints: an unsigned 32-bit integer."
            }},
            "required": ["page"],
            "additionalProperties": false
        }))
    );
    assert_eq!(
        lower(OPENAI, "paged", schema),
        Ok(json!({
            "type": "object",
            "properties": {"page": {
                "type": "integer",
                "minimum": 0,
                "default": 1,
                "description": "Constraints: an unsigned 32-bit integer."
            }},
            "additionalProperties": false
        }))
    );
}

/// A schema whose objects nest `levels` deep.
fn nested(levels: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 1..levels {
        schema = json!({
            "type": "object",
            "properties": {"inner": schema},
            "required": ["inner"],
            "additionalProperties": false
        });
    }
    json!({
        "type": "object",
        "properties": {"inner": schema},
        "required": ["inner"],
        "additionalProperties": false
    })
}

#[test]
fn strict_mode_limits_nesting_and_enum_values() {
    assert!(lower(STRICT, "deep", nested(10)).is_ok());
    let pointer = "/properties/inner".repeat(10);
    assert_eq!(
        lower(STRICT, "deep", nested(11)),
        Err(vec![incompatibility(
            STRICT,
            "deep",
            &pointer,
            "OpenAI strict mode: at most 10 levels of nested objects",
            "flatten the parameter types",
        )])
    );
    assert!(lower(OPENAI, "deep", nested(11)).is_ok());
    let values: Vec<String> = (0..1001).map(|n| format!("v{n}")).collect();
    let schema = json!({
        "type": "object",
        "properties": {"pick": {"type": "string", "enum": values}},
        "required": ["pick"],
        "additionalProperties": false
    });
    let problems = lower(STRICT, "huge", schema).unwrap_err();
    assert_eq!(
        problems
            .iter()
            .map(|p| (p.pointer.as_str(), p.rule.as_str()))
            .collect::<Vec<_>>(),
        [(
            "",
            "OpenAI strict mode: at most 1000 enum values in all; this schema has 1001"
        )]
    );
}

// ---------------------------------------------------------------------------------------------
// The checker, on exported JSON.

/// An OpenAI Chat tool object around `parameters`.
fn chat_tool(name: &str, parameters: Value, strict: bool) -> Value {
    json!({
        "type": "function",
        "function": {"name": name, "description": "A tool.", "parameters": parameters, "strict": strict}
    })
}

/// Each problem as `pointer: rule`, sorted.
fn found(problems: &[Incompatibility]) -> Vec<String> {
    let mut found: Vec<String> = problems
        .iter()
        .map(|p| format!("{}: {}", p.pointer, p.rule))
        .collect();
    found.sort();
    found
}

#[test]
fn the_checker_refuses_canonical_schemas_where_profiles_do_not_take_them() {
    let priority = canonical("set_priority");
    let problems = check_tool(STRICT, &chat_tool("set_priority", priority.clone(), true));
    assert_eq!(
        found(&problems),
        [
            "/function/parameters/$defs/Priority/oneOf: OpenAI strict mode: `oneOf` must become `anyOf`",
            "/function/parameters/properties/priority: OpenAI strict mode: a `$ref` may have no sibling \
             keywords (here description)",
            "/function/parameters/required: OpenAI strict mode: `required` lists every property (an \
             optional one is nullable); missing: cc, fallback",
        ]
    );
    let gemini = json!({"name": "set_priority", "description": "A tool.", "parameters": priority});
    let problems = check_tool(Profile::Gemini, &gemini);
    assert_eq!(
        found(&problems),
        [
            "/parameters/$defs/Priority/oneOf/0/const: Gemini: no `const`",
            "/parameters/$defs/Priority/oneOf/1/const: Gemini: no `const`",
            "/parameters/$defs/Priority/oneOf: Gemini: `oneOf` must become `anyOf`",
            "/parameters/$defs: Gemini rejects `$defs`: every type must be inlined",
            "/parameters/additionalProperties: Gemini: `additionalProperties` is rejected in `parameters`",
            "/parameters/properties/cc/anyOf/0/$ref: Gemini rejects `$ref`: every type must be inlined",
            "/parameters/properties/cc/anyOf: Gemini: `null` is said with `nullable: true`, not a \
             `{\"type\": \"null\"}` branch",
            "/parameters/properties/channel/$ref: Gemini rejects `$ref`: every type must be inlined",
            "/parameters/properties/fallback/anyOf/0/$ref: Gemini rejects `$ref`: every type must be inlined",
            "/parameters/properties/fallback/anyOf: Gemini: `null` is said with `nullable: true`, not a \
             `{\"type\": \"null\"}` branch",
            "/parameters/properties/priority/$ref: Gemini rejects `$ref`: every type must be inlined",
        ]
    );
    let primitives = json!({"name": "primitives", "input_schema": canonical("primitives")});
    assert_eq!(
        found(&check_tool(Profile::Anthropic, &primitives)),
        [
            "/input_schema/properties/count/format: Anthropic: the format \"uint32\" is not taken (only \
             date-time, time, date, duration, email, hostname, uri, ipv4, ipv6, uuid)",
            "/input_schema/properties/level/format: Anthropic: the format \"uint8\" is not taken (only \
             date-time, time, date, duration, email, hostname, uri, ipv4, ipv6, uuid)",
            "/input_schema/properties/offset/format: Anthropic: the format \"int64\" is not taken (only \
             date-time, time, date, duration, email, hostname, uri, ipv4, ipv6, uuid)",
            "/input_schema/properties/ratio/format: Anthropic: the format \"double\" is not taken (only \
             date-time, time, date, duration, email, hostname, uri, ipv4, ipv6, uuid)",
        ]
    );
    let tree = json!({"name": "grow_tree", "input_schema": canonical("grow_tree")});
    assert_eq!(
        found(&check_tool(Profile::Anthropic, &tree)),
        [
            "/input_schema/$defs/TreeNode/properties/children/items/$ref: Anthropic: `$ref` may not be \
          recursive; `TreeNode` refers to itself"
        ]
    );
}

#[test]
fn the_checker_applies_each_consumers_name_rule_and_the_portable_one() {
    let schema = json!({"type": "object", "properties": {}, "additionalProperties": false});
    let openai = check_tool(OPENAI, &chat_tool("get.status", schema.clone(), false));
    assert_eq!(
        found(&openai),
        [
            "/function/name: OpenAI: tool names match `^[a-zA-Z0-9_-]{1,64}$`; \"get.status\" does not"
        ]
    );
    let mcp = json!({"name": "get.status", "inputSchema": schema});
    assert_eq!(
        found(&check_tool(Profile::Mcp, &mcp)),
        [
            "/name: tool names must be valid for every consumer at once \
          (`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`); \"get.status\" is not"
        ]
    );
    let gemini = json!({"name": "1st"});
    assert_eq!(
        found(&check_tool(Profile::Gemini, &gemini)),
        [
            "/name: Gemini: tool names start with a letter or `_`, then letters, digits, `_ . : -`, at \
          most 64 characters (128 in newer documentation); \"1st\" does not"
        ]
    );
}

#[test]
fn the_checker_counts_tools_and_finds_duplicates() {
    let schema = json!({"type": "object", "properties": {}, "additionalProperties": false});
    let many: Vec<Value> = (0..129)
        .map(|n| chat_tool(&format!("tool_{n}"), schema.clone(), false))
        .collect();
    assert_eq!(
        found(&check_tools(OPENAI, &Value::Array(many))),
        [": OpenAI: at most 128 tools in a request; this list has 129"]
    );
    let twice = json!([
        chat_tool("ping", schema.clone(), false),
        chat_tool("ping", schema.clone(), false)
    ]);
    let problems = check_tools(OPENAI, &twice);
    assert_eq!(
        found(&problems),
        ["/function/name: OpenAI: tool names must be unique in a list"]
    );
    assert_eq!(problems[0].tool, "ping");
    let declarations: Vec<Value> = (0..513).map(|n| json!({"name": format!("f{n}")})).collect();
    assert_eq!(
        found(&check_tools(
            Profile::Gemini,
            &json!([{"functionDeclarations": declarations}])
        )),
        [": Gemini: at most 512 tools in a request; this list has 513"]
    );
    // A strict export must say so.
    assert_eq!(
        found(&check_tool(STRICT, &chat_tool("ping", schema, false))),
        ["/function/strict: OpenAI strict mode: the tool must say `strict: true`"]
    );
}

#[test]
fn the_checker_finds_strict_mode_limits() {
    let problems = check_tool(STRICT, &chat_tool("deep", nested(11), true));
    assert_eq!(
        found(&problems),
        [format!(
            "/function/parameters{}: OpenAI strict mode: at most 10 levels of nested objects",
            "/properties/inner".repeat(10)
        )]
    );
    assert_eq!(check_tool(STRICT, &chat_tool("deep", nested(10), true)), []);
}
