//! Provider profiles: tool lists exported in each consumer's format, allowlists, tool calls
//! read from provider responses (fixtures under `tests/fixtures/<profile>/`, written from the
//! providers' documented shapes, malformed ones included) and observations rendered as each
//! consumer's result message.

use registry_core::{Profile, Registry, Run, Subject, lockfile::DIGEST_META_KEY, tool};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

/// The pipeline of a project, in numbers.
#[derive(Serialize, JsonSchema)]
struct Summary {
    /// The project.
    project: String,
    /// Steps that passed.
    passed: u32,
    /// Steps that failed.
    failed: u32,
}

/// Read the current build status of a project.
#[tool(public, title = "Build status", read_only, idempotent)]
fn get_status(
    /// Project identifier, e.g. `web`.
    project: String,
    /// Include the last log lines.
    verbose: Option<bool>,
) -> Result<String, String> {
    match project.as_str() {
        "nope" => Err(format!("no project named {project:?}")),
        _ if verbose == Some(true) => Ok(format!("{project}: green (12 steps)")),
        _ => Ok(format!("{project}: green")),
    }
}

/// Start a deployment of a project.
#[tool(public, destructive, open_world)]
fn deploy(
    /// Project identifier.
    project: String,
) -> String {
    format!("{project}: deploying")
}

/// Summarize a project's pipeline.
#[tool(public, read_only)]
fn summary(
    /// Project identifier.
    project: String,
) -> Summary {
    Summary {
        project,
        passed: 12,
        failed: 0,
    }
}

/// List every project.
#[tool(public, read_only)]
fn list_projects() -> Vec<String> {
    vec!["api".into(), "web".into()]
}

/// Reset everything; for administrators.
#[tool(scopes = "admin", destructive)]
fn admin_reset() -> String {
    "reset".into()
}

fn registry() -> Registry {
    Registry::builder()
        .declared_in(["providers"])
        .build()
        .unwrap()
}

fn run() -> Run {
    registry().open_run("run-1", &Subject::new("tenant-a"))
}

fn fixture(profile: &str, name: &str) -> Value {
    let path = format!("{}/fixtures/{profile}/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Parses `fixture` as `profile`, calls every tool in `run` and renders each observation.
fn round_trip(profile: Profile, dir: &str, name: &str) -> Vec<Value> {
    let run = run();
    let calls = profile.parse_calls(&fixture(dir, name)).unwrap();
    calls
        .into_iter()
        .map(|call| profile.render(&run.call_blocking(call)))
        .collect()
}

/// The fixture directory of `profile`: strict and non-strict OpenAI share one.
fn dir(profile: Profile) -> &'static str {
    match profile {
        Profile::Mcp => "mcp",
        Profile::OpenAiChat { .. } => "openai-chat",
        Profile::OpenAiResponses { .. } => "openai-responses",
        Profile::Anthropic => "anthropic",
        Profile::Gemini => "gemini",
        _ => unreachable!("a new profile needs fixtures"),
    }
}

const CHAT: Profile = Profile::OpenAiChat { strict: false };
const CHAT_STRICT: Profile = Profile::OpenAiChat { strict: true };
const RESPONSES: Profile = Profile::OpenAiResponses { strict: false };
const RESPONSES_STRICT: Profile = Profile::OpenAiResponses { strict: true };

/// Stands for a lowered parameters schema in the exact tool objects below; lowering has its
/// own tests (`lowering.rs`, `golden.rs`).
const SCHEMA: &str = "<lowered parameters>";

/// The export of `profile` with each tool's parameters schema replaced by [`SCHEMA`], and
/// the property names of each schema, by tool.
fn envelope(profile: Profile) -> (Value, Vec<(String, Vec<String>)>) {
    let mut list = run().export(profile).unwrap();
    let (name, schema) = match profile {
        Profile::Mcp => ("/name", "/inputSchema"),
        Profile::OpenAiChat { .. } => ("/function/name", "/function/parameters"),
        Profile::Anthropic => ("/name", "/input_schema"),
        _ => ("/name", "/parameters"),
    };
    let tools = match profile {
        Profile::Gemini => list.pointer_mut("/0/functionDeclarations").unwrap(),
        _ => &mut list,
    };
    let mut properties = Vec::new();
    for tool in tools.as_array_mut().unwrap() {
        let tool_name = tool.pointer(name).unwrap().as_str().unwrap().to_owned();
        let Some(parameters) = tool.pointer_mut(schema) else {
            properties.push((tool_name, Vec::new()));
            continue;
        };
        let taken = std::mem::replace(parameters, json!(SCHEMA));
        assert_eq!(taken["type"], "object", "{profile}: {tool_name}");
        let names = taken["properties"]
            .as_object()
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default();
        properties.push((tool_name, names));
    }
    (list, properties)
}

/// The property names of each tool's parameters, in every profile.
fn expected_properties() -> Vec<(String, Vec<String>)> {
    [
        ("deploy", &["project"][..]),
        ("get_status", &["project", "verbose"][..]),
        ("list_projects", &[][..]),
        ("summary", &["project"][..]),
    ]
    .iter()
    .map(|(name, properties)| {
        (
            (*name).to_owned(),
            properties.iter().map(|p| (*p).to_owned()).collect(),
        )
    })
    .collect()
}

// Export.

#[test]
fn mcp_export_is_the_tools_of_a_tools_list_result() {
    let (list, properties) = envelope(Profile::Mcp);
    assert_eq!(properties, expected_properties());
    let output_schema = registry().get("summary").unwrap().output_schema().cloned();
    // Each tool's digest, which a client can pin (the `mcp` line of `Registry::lock`).
    let meta = |name: &str| {
        let registry = registry();
        let tool = registry.get(name).unwrap();
        json!({ DIGEST_META_KEY: tool.digest(Profile::Mcp).unwrap() })
    };
    assert_eq!(
        list,
        json!([
            {
                "name": "deploy",
                "_meta": meta("deploy"),
                "description": "Start a deployment of a project.",
                "inputSchema": SCHEMA,
                "annotations": {
                    "readOnlyHint": false,
                    "destructiveHint": true,
                    "idempotentHint": false,
                    "openWorldHint": true,
                },
            },
            {
                "name": "get_status",
                "_meta": meta("get_status"),
                "title": "Build status",
                "description": "Read the current build status of a project.",
                "inputSchema": SCHEMA,
                "annotations": {
                    "title": "Build status",
                    "readOnlyHint": true,
                    "destructiveHint": false,
                    "idempotentHint": true,
                    "openWorldHint": false,
                },
            },
            {
                "name": "list_projects",
                "_meta": meta("list_projects"),
                "description": "List every project.",
                "inputSchema": SCHEMA,
                "annotations": {
                    "readOnlyHint": true,
                    "destructiveHint": false,
                    "idempotentHint": false,
                    "openWorldHint": false,
                },
            },
            {
                "name": "summary",
                "_meta": meta("summary"),
                "description": "Summarize a project's pipeline.",
                "inputSchema": SCHEMA,
                "outputSchema": output_schema,
                "annotations": {
                    "readOnlyHint": true,
                    "destructiveHint": false,
                    "idempotentHint": false,
                    "openWorldHint": false,
                },
            },
        ])
    );
}

#[test]
fn mcp_output_schema_is_the_result_struct_and_only_for_structured_results() {
    let registry = registry();
    assert_eq!(
        registry.get("summary").unwrap().output_schema(),
        Some(&json!({
            "description": "The pipeline of a project, in numbers.",
            "type": "object",
            "properties": {
                "project": {"description": "The project.", "type": "string"},
                "passed": {"description": "Steps that passed.", "type": "integer", "format": "uint32", "minimum": 0},
                "failed": {"description": "Steps that failed.", "type": "integer", "format": "uint32", "minimum": 0},
            },
            "required": ["project", "passed", "failed"],
        }))
    );
    // A string and a list are not structured results.
    assert_eq!(registry.get("get_status").unwrap().output_schema(), None);
    assert_eq!(registry.get("list_projects").unwrap().output_schema(), None);
    let list = run().export(Profile::Mcp).unwrap();
    let with_output: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|tool| tool.get("outputSchema").is_some())
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(with_output, ["summary"]);
}

#[test]
fn openai_chat_export_is_function_tools() {
    for strict in [false, true] {
        let profile = Profile::OpenAiChat { strict };
        let (list, properties) = envelope(profile);
        assert_eq!(properties, expected_properties());
        let tool = |name: &str, description: &str| {
            json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": SCHEMA,
                    "strict": strict,
                },
            })
        };
        assert_eq!(
            list,
            json!([
                tool("deploy", "Start a deployment of a project."),
                tool("get_status", "Read the current build status of a project."),
                tool("list_projects", "List every project."),
                tool("summary", "Summarize a project's pipeline."),
            ]),
            "{profile}"
        );
    }
}

#[test]
fn openai_responses_export_is_flat_function_tools() {
    for strict in [false, true] {
        let profile = Profile::OpenAiResponses { strict };
        let (list, properties) = envelope(profile);
        assert_eq!(properties, expected_properties());
        let tool = |name: &str, description: &str| {
            json!({
                "type": "function",
                "name": name,
                "description": description,
                "parameters": SCHEMA,
                "strict": strict,
            })
        };
        assert_eq!(
            list,
            json!([
                tool("deploy", "Start a deployment of a project."),
                tool("get_status", "Read the current build status of a project."),
                tool("list_projects", "List every project."),
                tool("summary", "Summarize a project's pipeline."),
            ]),
            "{profile}"
        );
    }
}

#[test]
fn anthropic_export_is_tools_with_input_schema() {
    let (list, properties) = envelope(Profile::Anthropic);
    assert_eq!(properties, expected_properties());
    let tool = |name: &str, description: &str| json!({"name": name, "description": description, "input_schema": SCHEMA});
    assert_eq!(
        list,
        json!([
            tool("deploy", "Start a deployment of a project."),
            tool("get_status", "Read the current build status of a project."),
            tool("list_projects", "List every project."),
            tool("summary", "Summarize a project's pipeline."),
        ])
    );
}

#[test]
fn gemini_export_is_one_tool_holding_every_declaration() {
    let (list, properties) = envelope(Profile::Gemini);
    assert_eq!(properties, expected_properties());
    assert_eq!(
        list,
        json!([{
            "functionDeclarations": [
                {"name": "deploy", "description": "Start a deployment of a project.", "parameters": SCHEMA},
                {"name": "get_status", "description": "Read the current build status of a project.", "parameters": SCHEMA},
                // Gemini refuses an object schema without properties: no `parameters` at all.
                {"name": "list_projects", "description": "List every project."},
                {"name": "summary", "description": "Summarize a project's pipeline.", "parameters": SCHEMA},
            ],
        }])
    );
}

#[test]
fn exports_list_only_the_runs_visible_tools_in_name_order() {
    let registry = registry();
    let admin = registry.open_run(
        "run-admin",
        &Subject::new("tenant-a").with_scopes(["admin"]),
    );
    let names = |list: &Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names(&admin.export(Profile::Anthropic).unwrap()),
        [
            "admin_reset",
            "deploy",
            "get_status",
            "list_projects",
            "summary"
        ]
    );
    assert_eq!(
        names(&run().export(Profile::Anthropic).unwrap()),
        ["deploy", "get_status", "list_projects", "summary"]
    );
}

#[test]
fn an_empty_run_exports_empty_lists_and_no_allowlist() {
    let registry = Registry::builder().allow_empty().build().unwrap();
    let run = registry.open_run("run-empty", &Subject::new("tenant-a"));
    for &profile in Profile::ALL {
        assert_eq!(run.export(profile).unwrap(), json!([]), "{profile}");
        assert_eq!(run.allowlist(profile), None, "{profile}");
    }
}

#[test]
fn exports_are_byte_identical_across_registries_and_calls() {
    for &profile in Profile::ALL {
        let first = serde_json::to_string(&run().export(profile).unwrap()).unwrap();
        let run = run();
        let second = serde_json::to_string(&run.export(profile).unwrap()).unwrap();
        let third = serde_json::to_string(&run.export(profile).unwrap()).unwrap();
        assert_eq!(first, second, "{profile}");
        assert_eq!(second, third, "{profile}");
        let allowlist = |run: &Run| serde_json::to_string(&run.allowlist(profile)).unwrap();
        assert_eq!(allowlist(&run), allowlist(&self::run()), "{profile}");
    }
    // Keys are sorted, whatever order the code wrote them in.
    let text = serde_json::to_string(&run().export(Profile::Mcp).unwrap()).unwrap();
    assert!(
        text.starts_with(r#"[{"_meta":{"io.github.tool-registry/digest":"sha256:"#),
        "{text}"
    );
    assert!(text.contains(r#""},"annotations":{"destructiveHint":true,"idempotentHint":false,"openWorldHint":true,"readOnlyHint":false},"description":"Start a deployment of a project.","inputSchema":"#), "{text}");
}

// Allowlists.

#[test]
fn allowlists_name_the_runs_allowed_tools() {
    let run = run();
    let chat = json!({
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "auto",
            "tools": [
                {"type": "function", "function": {"name": "deploy"}},
                {"type": "function", "function": {"name": "get_status"}},
                {"type": "function", "function": {"name": "list_projects"}},
                {"type": "function", "function": {"name": "summary"}},
            ],
        },
    });
    assert_eq!(run.allowlist(CHAT), Some(chat.clone()));
    assert_eq!(run.allowlist(CHAT_STRICT), Some(chat));
    let responses = json!({
        "type": "allowed_tools",
        "mode": "auto",
        "tools": [
            {"type": "function", "name": "deploy"},
            {"type": "function", "name": "get_status"},
            {"type": "function", "name": "list_projects"},
            {"type": "function", "name": "summary"},
        ],
    });
    assert_eq!(run.allowlist(RESPONSES), Some(responses.clone()));
    assert_eq!(run.allowlist(RESPONSES_STRICT), Some(responses));
    assert_eq!(
        run.allowlist(Profile::Gemini),
        Some(json!({
            "functionCallingConfig": {
                "mode": "VALIDATED",
                "allowedFunctionNames": ["deploy", "get_status", "list_projects", "summary"],
            },
        }))
    );
    assert_eq!(run.allowlist(Profile::Mcp), None);
    assert_eq!(run.allowlist(Profile::Anthropic), None);
}

#[test]
fn allowlists_follow_the_subjects_scopes() {
    let run = registry().open_run(
        "run-admin",
        &Subject::new("tenant-a").with_scopes(["admin"]),
    );
    assert_eq!(
        run.allowlist(Profile::Gemini).unwrap()["functionCallingConfig"]["allowedFunctionNames"],
        json!([
            "admin_reset",
            "deploy",
            "get_status",
            "list_projects",
            "summary"
        ])
    );
    assert_eq!(
        run.allowlist(RESPONSES).unwrap()["tools"][0],
        json!({"type": "function", "name": "admin_reset"})
    );
}

// Round trips: response fixture -> calls -> observations -> result messages.

const RETRY: &str = "call it again with arguments that match its schema";

fn invalid(name: &str, problem: &str) -> String {
    format!("invalid arguments for \"{name}\": {problem}; {RETRY}")
}

#[test]
fn openai_chat_round_trip() {
    let expected = json!([
        {"role": "tool", "tool_call_id": "call_8Jx2hKcL0x1Vd3sPq9", "content": "web: green"},
        {"role": "tool", "tool_call_id": "call_Q4m1cY7rTz0bWn2Ke5", "content": "{\"failed\":0,\"passed\":12,\"project\":\"web\"}"},
        {"role": "tool", "tool_call_id": "call_Zr5pX0vN3aH8uL6tJ1", "content": "[\"api\",\"web\"]"},
    ]);
    for profile in [CHAT, CHAT_STRICT] {
        assert_eq!(
            Value::Array(round_trip(profile, "openai-chat", "tool_calls.json")),
            expected
        );
    }
}

#[test]
fn openai_chat_malformed_arguments_are_answered_per_call() {
    assert_eq!(
        Value::Array(round_trip(CHAT, "openai-chat", "malformed_arguments.json")),
        json!([
            {
                "role": "tool",
                "tool_call_id": "call_truncated",
                "content": invalid("deploy", "the arguments are not valid JSON: EOF while parsing a string at line 1 column 15"),
            },
            {
                "role": "tool",
                "tool_call_id": "call_single_quotes",
                "content": invalid("get_status", "the arguments are not valid JSON: key must be a string at line 1 column 2"),
            },
            {
                "role": "tool",
                "tool_call_id": "call_trailing",
                "content": invalid("get_status", "the arguments are not valid JSON: trailing characters at line 1 column 19"),
            },
            {
                "role": "tool",
                "tool_call_id": "call_duplicate_key",
                "content": invalid("deploy", "the arguments are not valid JSON: the key \"project\" is repeated at line 1 column 28"),
            },
            // An empty text (a function without parameters) is an empty object.
            {"role": "tool", "tool_call_id": "call_empty", "content": "[\"api\",\"web\"]"},
            {
                "role": "tool",
                "tool_call_id": "call_wrong_type",
                "content": invalid("get_status", "/project: expected string, got integer 42"),
            },
        ])
    );
}

#[test]
fn openai_chat_unknown_hidden_and_failing_calls() {
    let listed = "the tools you can call are: deploy, get_status, list_projects, summary";
    assert_eq!(
        Value::Array(round_trip(CHAT, "openai-chat", "unknown_and_hidden.json")),
        json!([
            {"role": "tool", "tool_call_id": "call_unknown", "content": format!("unknown tool \"delete_everything\"; {listed}")},
            {"role": "tool", "tool_call_id": "call_hidden", "content": format!("unknown tool \"admin_reset\"; {listed}")},
            {"role": "tool", "tool_call_id": "call_case", "content": format!("unknown tool \"Get_Status\"; {listed}")},
            {"role": "tool", "tool_call_id": "call_failing", "content": "the tool \"get_status\" failed: no project named \"nope\""},
        ])
    );
}

#[test]
fn openai_chat_reads_a_message_and_a_tool_calls_array_too() {
    let response = fixture("openai-chat", "tool_calls.json");
    let from_response = CHAT.parse_calls(&response).unwrap();
    let message = &response["choices"][0]["message"];
    assert_eq!(CHAT.parse_calls(message).unwrap(), from_response);
    assert_eq!(
        CHAT.parse_calls(&message["tool_calls"]).unwrap(),
        from_response
    );
    assert_eq!(CHAT_STRICT.parse_calls(&response).unwrap(), from_response);
    // Custom tool calls are the application's own.
    let calls = CHAT
        .parse_calls(&fixture("openai-chat", "custom_tool_call.json"))
        .unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id(), "call_fn");
}

#[test]
fn openai_responses_round_trip() {
    assert_eq!(
        Value::Array(round_trip(
            RESPONSES,
            "openai-responses",
            "function_calls.json"
        )),
        json!([
            {"type": "function_call_output", "call_id": "call_12345xyz", "output": "web: green (12 steps)"},
            {"type": "function_call_output", "call_id": "call_67890abc", "output": "{\"failed\":0,\"passed\":12,\"project\":\"web\"}"},
            {
                "type": "function_call_output",
                "call_id": "call_truncated",
                "output": invalid("deploy", "the arguments are not valid JSON: EOF while parsing a string at line 1 column 23"),
            },
        ])
    );
    assert_eq!(
        Value::Array(round_trip(
            RESPONSES_STRICT,
            "openai-responses",
            "input_items.json"
        )),
        json!([{"type": "function_call_output", "call_id": "call_list", "output": "[\"api\",\"web\"]"}])
    );
}

#[test]
fn anthropic_round_trip() {
    assert_eq!(
        Value::Array(round_trip(Profile::Anthropic, "anthropic", "tool_use.json")),
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": "web: green (12 steps)"},
            {"type": "tool_result", "tool_use_id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "content": "{\"failed\":0,\"passed\":12,\"project\":\"web\"}"},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01Kd9sPq3LmXw8RtY2vB5nC7",
                "content": invalid("deploy", "unknown property \"force\""),
                "is_error": true,
            },
        ])
    );
    assert_eq!(
        Value::Array(round_trip(
            Profile::Anthropic,
            "anthropic",
            "assistant_message.json"
        )),
        json!([{"type": "tool_result", "tool_use_id": "toolu_01Xy", "content": "[\"api\",\"web\"]"}])
    );
}

#[test]
fn gemini_round_trip_without_ids() {
    let calls = Profile::Gemini
        .parse_calls(&fixture("gemini", "function_calls_without_ids.json"))
        .unwrap();
    let ids: Vec<(&str, bool)> = calls
        .iter()
        .map(|call| (call.id(), call.has_generated_id()))
        .collect();
    assert_eq!(
        ids,
        [
            ("call_0", true),
            ("call_1", true),
            ("call_2", true),
            ("call_3", true)
        ]
    );
    // The generated ids are not echoed: Gemini matches them by name and order.
    assert_eq!(
        Value::Array(round_trip(
            Profile::Gemini,
            "gemini",
            "function_calls_without_ids.json"
        )),
        json!([
            {"functionResponse": {"name": "get_status", "response": {"output": "web: green"}}},
            {"functionResponse": {"name": "summary", "response": {"output": {"project": "web", "passed": 12, "failed": 0}}}},
            {"functionResponse": {"name": "list_projects", "response": {"output": ["api", "web"]}}},
            {
                "functionResponse": {
                    "name": "deploy",
                    "response": {"error": invalid("deploy", "/project: expected string, got integer 42")},
                },
            },
        ])
    );
}

#[test]
fn gemini_round_trip_with_ids_echoes_them() {
    assert_eq!(
        Value::Array(round_trip(
            Profile::Gemini,
            "gemini",
            "function_calls_with_ids.json"
        )),
        json!([
            {"functionResponse": {"id": "fc-7f3a2c", "name": "get_status", "response": {"output": "api: green"}}},
            {"functionResponse": {"name": "summary", "response": {"output": {"project": "api", "passed": 12, "failed": 0}}}},
        ])
    );
    let calls = Profile::Gemini
        .parse_calls(&fixture("gemini", "content.json"))
        .unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id(), calls[0].has_generated_id()),
        ("call_0", true)
    );
}

#[test]
fn gemini_ids_are_stable() {
    let response = fixture("gemini", "function_calls_without_ids.json");
    let first = Profile::Gemini.parse_calls(&response).unwrap();
    let second = Profile::Gemini.parse_calls(&response).unwrap();
    assert_eq!(first, second);
    // The parts alone give the same calls.
    let parts = &response["candidates"][0]["content"]["parts"];
    assert_eq!(Profile::Gemini.parse_calls(parts).unwrap(), first);
}

#[test]
fn mcp_round_trip_with_structured_content() {
    assert_eq!(
        Value::Array(round_trip(Profile::Mcp, "mcp", "tools_call.json")),
        json!([{
            "content": [{"type": "text", "text": "{\"failed\":0,\"passed\":12,\"project\":\"web\"}"}],
            "isError": false,
            "structuredContent": {"project": "web", "passed": 12, "failed": 0},
        }])
    );
    let calls = Profile::Mcp
        .parse_calls(&fixture("mcp", "tools_call.json"))
        .unwrap();
    assert_eq!((calls[0].id(), calls[0].has_generated_id()), ("7", false));
}

#[test]
fn mcp_round_trip_of_a_batch() {
    let text = |text: &str, error: bool| json!({"content": [{"type": "text", "text": text}], "isError": error});
    assert_eq!(
        Value::Array(round_trip(Profile::Mcp, "mcp", "batch.json")),
        json!([
            text("web: green", false),
            text(
                "the tool \"get_status\" failed: no project named \"nope\"",
                true
            ),
            text(&invalid("deploy", "unknown property \"extra\""), true),
            // A list is not a structured result: text only.
            text("[\"api\",\"web\"]", false),
        ])
    );
    let ids: Vec<String> = Profile::Mcp
        .parse_calls(&fixture("mcp", "batch.json"))
        .unwrap()
        .iter()
        .map(|call| call.id().to_owned())
        .collect();
    assert_eq!(ids, ["req-1", "req-2", "req-3", "req-4"]);
}

#[test]
fn mcp_reads_bare_params() {
    let calls = Profile::Mcp
        .parse_calls(&fixture("mcp", "params.json"))
        .unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name(), "get_status");
    assert_eq!(
        calls[0].arguments(),
        Some(&json!({"project": "web", "verbose": true}))
    );
    assert!(calls[0].has_generated_id());
}

#[test]
fn a_hidden_tool_is_rendered_exactly_like_an_unknown_one() {
    let run = run();
    for &profile in Profile::ALL {
        let render = |name: &str| {
            let call = registry_core::ToolCall::new("call_x", name, json!({}));
            let text = serde_json::to_string(&profile.render(&run.call_blocking(call))).unwrap();
            text.replace(name, "NAME")
        };
        assert_eq!(render("admin_reset"), render("no_such_tool"), "{profile}");
    }
}

#[test]
fn errors_render_with_each_consumers_error_marker() {
    let run = run();
    let observation = run.call_blocking(registry_core::ToolCall::new(
        "call_9",
        "get_status",
        json!({"project": "nope"}),
    ));
    let text = "the tool \"get_status\" failed: no project named \"nope\"";
    let rendered: Vec<Value> = Profile::ALL
        .iter()
        .map(|profile| profile.render(&observation))
        .collect();
    assert_eq!(
        Value::Array(rendered),
        json!([
            {"content": [{"type": "text", "text": text}], "isError": true},
            {"role": "tool", "tool_call_id": "call_9", "content": text},
            {"role": "tool", "tool_call_id": "call_9", "content": text},
            {"type": "function_call_output", "call_id": "call_9", "output": text},
            {"type": "function_call_output", "call_id": "call_9", "output": text},
            {"type": "tool_result", "tool_use_id": "call_9", "content": text, "is_error": true},
            {"functionResponse": {"id": "call_9", "name": "get_status", "response": {"error": text}}},
        ])
    );
}

#[test]
fn structured_content_only_for_structured_successes() {
    let run = run();
    let call = |name: &str, arguments: Value| {
        Profile::Mcp.render(&run.call_blocking(registry_core::ToolCall::new("c", name, arguments)))
    };
    assert!(
        call("summary", json!({"project": "web"}))
            .get("structuredContent")
            .is_some()
    );
    assert!(
        call("get_status", json!({"project": "web"}))
            .get("structuredContent")
            .is_none()
    );
    assert!(
        call("list_projects", json!({}))
            .get("structuredContent")
            .is_none()
    );
    // An error of a tool with an output schema is text.
    assert_eq!(
        call("summary", json!({})),
        json!({
            "content": [{"type": "text", "text": invalid("summary", "missing required property \"project\"")}],
            "isError": true,
        })
    );
}

// Responses without calls, and responses of the wrong shape.

#[test]
fn responses_without_tool_calls_are_empty() {
    for (profile, name) in [
        (CHAT, "no_tool_calls.json"),
        (Profile::Anthropic, "text_only.json"),
        (Profile::Gemini, "blocked_prompt.json"),
        (Profile::Gemini, "safety_stop.json"),
        (Profile::Mcp, "tools_list.json"),
    ] {
        assert_eq!(
            profile.parse_calls(&fixture(dir(profile), name)).unwrap(),
            [],
            "{profile} {name}"
        );
    }
    assert_eq!(CHAT.parse_calls(&json!([])).unwrap(), []);
    assert_eq!(
        Profile::Anthropic
            .parse_calls(&json!({"role": "assistant", "content": "Done."}))
            .unwrap(),
        []
    );
}

#[test]
fn wrong_shapes_are_errors_naming_what_and_where() {
    let cases = [
        (
            CHAT,
            "invalid_tool_calls_not_array.json",
            "/choices/0/message/tool_calls",
            "expected an array of tool calls, found an object",
        ),
        (
            CHAT,
            "invalid_missing_name.json",
            "/choices/0/message/tool_calls/1/function/name",
            "expected the tool name, a string, found nothing",
        ),
        (
            CHAT,
            "invalid_arguments_object.json",
            "/tool_calls/0/function/arguments",
            "expected the arguments as JSON text, a string, found an object",
        ),
        (
            CHAT,
            "invalid_several_choices.json",
            "/choices",
            "found 2 choices, which are alternatives, not calls to make together; pass the choice to continue with (e.g. `/choices/0`)",
        ),
        (
            CHAT,
            "invalid_error_response.json",
            "/error",
            "the provider answered with an error: Invalid schema for function 'get_status': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'verbose'.",
        ),
        (
            RESPONSES,
            "invalid_arguments_object.json",
            "/output/0/arguments",
            "expected the arguments as JSON text, a string, found an object",
        ),
        (
            RESPONSES,
            "invalid_missing_call_id.json",
            "/output/1/call_id",
            "expected the call id, a string, found nothing",
        ),
        (
            RESPONSES,
            "invalid_output_not_array.json",
            "/output",
            "expected an array of output items, found a string",
        ),
        (
            RESPONSES,
            "invalid_failed_response.json",
            "/error",
            "the provider answered with an error: The model produced invalid content.",
        ),
        (
            Profile::Anthropic,
            "invalid_input_string.json",
            "/content/0/input",
            "expected the arguments object, found a string",
        ),
        (
            Profile::Anthropic,
            "invalid_missing_id.json",
            "/content/1/id",
            "expected the call id, a string, found nothing",
        ),
        (
            Profile::Anthropic,
            "invalid_block_without_type.json",
            "/content/0/type",
            "expected the type, a string, found nothing",
        ),
        (
            Profile::Anthropic,
            "invalid_overloaded.json",
            "/error",
            "the provider answered with an error: Overloaded",
        ),
        (
            Profile::Gemini,
            "invalid_args_string.json",
            "/candidates/0/content/parts/0/functionCall/args",
            "expected the arguments object, found a string",
        ),
        (
            Profile::Gemini,
            "invalid_parts_object.json",
            "/candidates/0/content/parts",
            "expected an array of parts, found an object",
        ),
        (
            Profile::Gemini,
            "invalid_missing_name.json",
            "/candidates/0/content/parts/1/functionCall/name",
            "expected the tool name, a string, found nothing",
        ),
        (
            Profile::Gemini,
            "invalid_quota.json",
            "/error",
            "the provider answered with an error: Resource has been exhausted (e.g. check quota).",
        ),
        (
            Profile::Mcp,
            "invalid_arguments_string.json",
            "/params/arguments",
            "expected the arguments object, found a string",
        ),
        (
            Profile::Mcp,
            "invalid_missing_name.json",
            "/params/name",
            "expected the tool name, a string, found nothing",
        ),
        (
            Profile::Mcp,
            "invalid_missing_id.json",
            "/id",
            "expected the request id (a string or a number), found nothing",
        ),
        (
            Profile::Mcp,
            "invalid_error_response.json",
            "/error",
            "the provider answered with an error: Unknown tool: invalid_tool_name",
        ),
    ];
    for (profile, name, pointer, message) in cases {
        let error = profile
            .parse_calls(&fixture(dir(profile), name))
            .unwrap_err();
        assert_eq!(
            (
                error.profile,
                error.pointer.as_str(),
                error.message.as_str()
            ),
            (profile, pointer, message),
            "{name}"
        );
        assert_eq!(
            error.to_string(),
            format!("cannot read {profile} tool calls: at {pointer}: {message}")
        );
    }
}

#[test]
fn a_response_that_is_no_response_is_an_error() {
    for &profile in Profile::ALL {
        for response in [
            json!(null),
            json!("get_status"),
            json!(42),
            json!({"foo": 1}),
        ] {
            let error = profile.parse_calls(&response).unwrap_err();
            assert_eq!(error.pointer, "", "{profile} {response}");
            assert!(error.message.starts_with("expected "), "{error}");
        }
    }
}

/// Every fixture, read by every profile: its own profile reads it, or refuses it when it is
/// named `invalid_*`; the others give a result or an error, never a panic.
#[test]
fn every_fixture_is_read_or_refused_by_every_profile() {
    let root = format!("{}/fixtures", env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for &own in Profile::ALL {
        let mut names: Vec<String> = std::fs::read_dir(format!("{root}/{}", dir(own)))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        for name in names {
            let response = fixture(dir(own), &name);
            let result = own.parse_calls(&response);
            assert_eq!(
                result.is_err(),
                name.starts_with("invalid_"),
                "{own} {name}: {result:?}"
            );
            for &other in Profile::ALL {
                let _ = other.parse_calls(&response);
            }
            seen += 1;
        }
    }
    assert!(seen >= 50, "{seen} fixtures read");
}

mod fuzz {
    use proptest::prelude::*;
    use registry_core::Profile;
    use serde_json::{Map, Value};

    fn json() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            Just("choices".to_owned()),
            Just("message".to_owned()),
            Just("tool_calls".to_owned()),
            Just("function".to_owned()),
            Just("name".to_owned()),
            Just("arguments".to_owned()),
            Just("id".to_owned()),
            Just("type".to_owned()),
            Just("output".to_owned()),
            Just("call_id".to_owned()),
            Just("content".to_owned()),
            Just("input".to_owned()),
            Just("candidates".to_owned()),
            Just("parts".to_owned()),
            Just("functionCall".to_owned()),
            Just("args".to_owned()),
            Just("method".to_owned()),
            Just("params".to_owned()),
            Just("error".to_owned()),
            Just("role".to_owned()),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            prop_oneof![
                Just("function".to_owned()),
                Just("function_call".to_owned()),
                Just("tool_use".to_owned()),
                Just("tools/call".to_owned()),
                Just("{\"a\":".to_owned()),
                ".{0,8}".prop_map(String::from),
            ]
            .prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..5)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    proptest! {
        #[test]
        fn reading_any_json_never_panics(response in json()) {
            for &profile in Profile::ALL {
                let _ = profile.parse_calls(&response);
            }
        }
    }
}

/// Programmatic tool calling: a call made by code the model wrote is read as `Caller::Code`;
/// one that says `direct`, `null` or nothing is the model's; an unknown or malformed caller is
/// never taken for the model.
#[test]
fn calls_made_by_code_are_read_as_code_and_unknown_callers_too() {
    use registry_core::call::Caller;
    let read = |profile: Profile, dir: &str| -> Vec<(String, Caller)> {
        (profile
            .parse_calls(&fixture(dir, "programmatic.json"))
            .unwrap())
        .iter()
        .map(|call| (call.id().to_owned(), call.caller()))
        .collect()
    };
    let owned = |pairs: &[(&str, Caller)]| -> Vec<(String, Caller)> {
        pairs
            .iter()
            .map(|(id, caller)| ((*id).to_owned(), *caller))
            .collect()
    };
    assert_eq!(
        read(Profile::Anthropic, "anthropic"),
        owned(&[
            ("toolu_01Direct", Caller::Model),
            ("toolu_01FromCode", Caller::Code),
            ("toolu_01FromOldCode", Caller::Code),
            ("toolu_01Unknown", Caller::Code),
            ("toolu_01NoCaller", Caller::Model),
        ])
    );
    for strict in [false, true] {
        assert_eq!(
            read(Profile::OpenAiResponses { strict }, "openai-responses"),
            owned(&[
                ("call_direct", Caller::Model),
                ("call_program", Caller::Code),
                ("call_null", Caller::Model),
                ("call_odd", Caller::Code),
            ])
        );
    }
}

/// A tool declared `callable_from_code` says so where the provider's tool object has a field
/// for it (Anthropic's and OpenAI Responses' `allowed_callers`); the others' exports do not
/// change.
#[test]
fn exports_mark_the_tools_code_may_call() {
    use registry_core::DynamicTool;
    let tool = |name: &str| {
        DynamicTool::new(name, "Read a value.")
            .public()
            .handler(|_, _| Ok::<_, String>(json!(1)))
    };
    let registry = Registry::builder()
        .tool(tool("from_code").callable_from_code())
        .tool(tool("direct_only"))
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &Subject::new("tenant-a"));
    let callers = |profile: Profile| -> Vec<Option<Value>> {
        let list = run.export(profile).unwrap();
        let list = match profile {
            Profile::Gemini => list[0]["functionDeclarations"].clone(),
            _ => list,
        };
        (list.as_array().unwrap().iter())
            .map(|tool| tool.get("allowed_callers").cloned())
            .collect()
    };
    // Name order: direct_only, from_code.
    assert_eq!(
        callers(Profile::Anthropic),
        [None, Some(json!(["direct", "code_execution_20260120"]))]
    );
    for strict in [false, true] {
        assert_eq!(
            callers(Profile::OpenAiResponses { strict }),
            [None, Some(json!(["direct", "programmatic"]))]
        );
    }
    for profile in [
        Profile::OpenAiChat { strict: false },
        Profile::Mcp,
        Profile::Gemini,
    ] {
        assert_eq!(callers(profile), [None, None], "{profile}");
    }
}
