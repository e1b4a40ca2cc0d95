//! JSON Schema 2020-12 kept for MCP (SEP-2106): a tool whose schemas use composition,
//! conditionals, `$anchor`, `$ref`/`$defs` and `$schema` reaches rmcp's real client over
//! streamable HTTP on loopback exactly as declared, for a 2025-11-25 session and a 2026-07-28
//! stateless client alike; every call is validated against that same schema, the kept
//! keywords included (a call that breaks a conditional, or a `$ref` to an `$anchor`, is
//! refused with an observation that says why); and a schema beyond the resource bounds the
//! revision asks for is a build error naming the tool and the keyword. The MCP export of both
//! tools (one `DynamicTool`, one `#[tool]` whose parameter type declares a conditional) is the
//! golden file `tests/golden/mcp/json-schema-2020-12.json` (`UPDATE_GOLDEN=1` rewrites it).

mod mcp_support;

use std::path::PathBuf;

use mcp_support::*;
use registry_core::{BuildProblem, DynamicTool, Profile, Registry, Subject, ToolCall, tool};
use registry_mcp::{CancellationToken, HttpConfig, HttpServer, Principal, Tokens};
use registry_tests::assert_golden_files;
use rmcp::ServiceExt;
use rmcp::model::{ClientConfig, Tool};
use rmcp::service::{Peer, RoleClient};
use rmcp::transport::StreamableHttpClientTransport;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The arguments schema: the conformance scenario `json-schema-2020-12`'s, with a `$ref` to
/// the `$anchor`, `dependentRequired` and `dependentSchemas` besides.
fn arguments_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                "required": ["city"]
            }
        },
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

/// The result schema: `oneOf`, a `$ref` to an `$anchor`, `$defs`.
fn result_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"echo": {"$anchor": "echo", "type": "object"}},
        "properties": {"received": {"$ref": "#echo"}},
        "oneOf": [{"required": ["received"]}, {"required": ["nothing"]}]
    })
}

fn contact() -> DynamicTool {
    DynamicTool::new("contact", "Record how to reach a person.")
        .public()
        .parameters(arguments_schema())
        .output_schema(result_schema())
        .handler(|_ctx, arguments| Ok::<_, String>(json!({"received": arguments})))
}

/// How to reach someone.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Method {
    Phone,
    Email,
}

/// A way to reach someone: the number or the address of the chosen method must be given.
#[derive(Deserialize, JsonSchema)]
#[schemars(extend(
    "if" = {"properties": {"method": {"const": "phone"}}, "required": ["method"]},
    "then" = {"required": ["phone"]},
    "else" = {"required": ["email"]}
))]
#[allow(dead_code)] // Only deserialized.
struct Reach {
    /// How.
    method: Method,
    /// The phone number, when by phone.
    phone: Option<String>,
    /// The email address, when by email.
    email: Option<String>,
}

/// Remember how to reach someone.
#[tool(public)]
fn reach(
    /// The way to reach them.
    way: Reach,
) -> &'static str {
    let _ = way;
    "noted"
}

fn registry() -> Registry {
    Registry::builder()
        .declared_in([module_path!()])
        .tool(contact())
        .build()
        .expect("the tools build")
}

/// The registry served over streamable HTTP on a free loopback port, to loopback clients.
async fn serve() -> (String, CancellationToken) {
    let shutdown = CancellationToken::new();
    let config = HttpConfig::new(Tokens::new())
        .with_addr("127.0.0.1:0".parse().unwrap())
        .with_loopback_principal(Principal::new("local", Subject::new("acme")))
        .with_shutdown(shutdown.clone());
    let server = HttpServer::bind(registry(), config).await.unwrap();
    let url = server.url();
    tokio::spawn(server.serve());
    (url, shutdown)
}

/// The tool `contact` as listed, asserting the list is `contact` and `reach`.
async fn listed(peer: &Peer<RoleClient>) -> Tool {
    let (tools, _) = list_all(peer).await;
    assert_eq!(names(&tools), ["contact", "reach"]);
    tools.into_iter().next().unwrap()
}

fn as_value(object: &Map<String, Value>) -> Value {
    Value::Object(object.clone())
}

/// The kept keywords, as the conformance scenario checks them, and the whole schemas.
fn assert_kept(tool: &Tool) {
    let input = as_value(&tool.input_schema);
    for pointer in [
        "/$schema",
        "/$defs/address/$anchor",
        "/properties/address/$ref",
        "/properties/home/$ref",
        "/allOf/0/anyOf",
        "/if",
        "/then",
        "/else",
        "/dependentRequired",
        "/dependentSchemas",
        "/additionalProperties",
    ] {
        assert!(input.pointer(pointer).is_some(), "{pointer} kept: {input}");
    }
    assert_eq!(input, arguments_schema());
    let output = tool.output_schema.as_deref().map(as_value);
    assert_eq!(output, Some(result_schema()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_clients_list_the_schemas_as_declared() {
    let (url, shutdown) = serve().await;
    // A 2025-11-25 client, with a session.
    let session = within(
        "initialize",
        ClientConfig::default().serve(StreamableHttpClientTransport::from_uri(url.as_str())),
    )
    .await
    .expect("a session client connects");
    assert_kept(&listed(session.peer()).await);
    // A 2026-07-28 client, stateless.
    let (modern, _subscription) =
        modern_client(StreamableHttpClientTransport::from_uri(url.as_str())).await;
    assert_kept(&listed(modern.peer()).await);
    shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_validated_against_the_schema_shown_with_its_kept_keywords() {
    let (url, shutdown) = serve().await;
    let (client, _subscription) =
        modern_client(StreamableHttpClientTransport::from_uri(url.as_str())).await;
    let peer = client.peer();
    let valid = json!({"name": "Ada", "contactMethod": "phone", "phone": "+47 1",
        "home": {"city": "Oslo"}});
    let result = call(peer, "contact", valid.clone()).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(result.structured_content, Some(json!({"received": valid})));
    // Each call breaks one kept keyword, and the observation says how.
    for (arguments, says) in [
        // `then`: phone is the method, and no phone is given (an email satisfies `anyOf`).
        (
            json!({"contactMethod": "phone", "email": "ada@example.com", "name": "Ada"}),
            "missing required property \"phone\" (the schema's `if` condition holds, so this applies)",
        ),
        // `else`.
        (
            json!({"contactMethod": "email", "phone": "+47 1", "name": "Ada"}),
            "missing required property \"email\" (the schema's `if` condition does not hold, so this applies)",
        ),
        // `allOf` of `anyOf`: neither phone nor email.
        (
            json!({"name": "Ada"}),
            "does not match any of the accepted forms",
        ),
        // A `$ref` to the `$anchor`.
        (
            json!({"email": "a@b", "name": "Ada", "home": {"city": 7}}),
            "/home/city: expected string, got integer 7",
        ),
        (
            json!({"email": "a@b", "name": "Ada", "home": {}}),
            "/home: missing required property \"city\"",
        ),
        // `dependentRequired` and `dependentSchemas`.
        (
            json!({"phone": "+47 1"}),
            "missing required property \"name\" (another property present requires it, by `dependentRequired`)",
        ),
        (
            json!({"email": "a@b", "name": ""}),
            "/name: must be at least 1 characters long (this applies when the property \"email\" is present)",
        ),
        // `additionalProperties: false` at the root, beside the composition.
        (
            json!({"email": "a@b", "name": "Ada", "fax": "1"}),
            "unknown property \"fax\"",
        ),
    ] {
        let result = call(peer, "contact", arguments.clone()).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{arguments}: {result:?}");
        let text = text(&result);
        assert!(text.contains("invalid arguments"), "{arguments}: {text}");
        assert!(text.contains(says), "{arguments}: {text}");
    }
    shutdown.cancel();
}

#[test]
fn the_mcp_export_matches_its_golden_file() {
    let run = registry().open_run("golden", &Subject::new("acme"));
    let mut text = serde_json::to_string_pretty(&run.export(Profile::Mcp).unwrap()).unwrap();
    text.push('\n');
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden/mcp/json-schema-2020-12.json");
    assert_golden_files([(path, text)]);
}

/// A `#[tool]` type's conditional is kept for MCP and, being a condition, is not closed on
/// its own: the object beside it is closed with `unevaluatedProperties`, so that a call that
/// meets `if` and gives its `then` is taken (a closed `if` would be false for it).
#[test]
fn a_tool_types_conditional_is_kept_open_and_enforced() {
    let registry = registry();
    let run = registry.open_run("t", &Subject::new("acme"));
    let export = run.export(Profile::Mcp).unwrap();
    let schema = &export[1]["inputSchema"];
    let reach = &schema["$defs"]["Reach"];
    assert_eq!(
        reach["if"]["properties"]["method"]["const"], "phone",
        "{schema}"
    );
    assert_eq!(reach["if"].get("additionalProperties"), None, "{schema}");
    assert_eq!(reach["then"], json!({"required": ["phone"]}), "{schema}");
    assert_eq!(reach["unevaluatedProperties"], false, "{schema}");
    assert_eq!(reach.get("additionalProperties"), None, "{schema}");
    let call = |arguments: Value| run.call_blocking(ToolCall::new("c", "reach", arguments));
    let by_phone = call(json!({"way": {"method": "phone", "phone": "+47 1"}}));
    assert!(!by_phone.is_error(), "{by_phone:?}");
    let by_email = call(json!({"way": {"method": "email", "email": "a@b"}}));
    assert!(!by_email.is_error(), "{by_email:?}");
    let refused = call(json!({"way": {"method": "phone", "email": "a@b"}}));
    assert_eq!(
        refused.error_text(),
        Some(
            "invalid arguments for \"reach\": /way: missing required property \"phone\" (the \
             schema's `if` condition holds, so this applies); call it again with arguments that \
             match its schema"
        ),
        "{refused:?}"
    );
    let unknown = call(json!({"way": {"method": "email", "email": "a@b", "fax": "1"}}));
    assert!(
        unknown
            .error_text()
            .unwrap_or_default()
            .contains("unknown property \"fax\""),
        "{unknown:?}"
    );
}

#[test]
fn in_process_the_same_schema_refuses_the_same_calls() {
    let registry = registry();
    let run = registry.open_run("t", &Subject::new("acme"));
    let export = run.export(Profile::Mcp).unwrap();
    assert_eq!(export[0]["inputSchema"], arguments_schema());
    assert_eq!(export[0]["outputSchema"], result_schema());
    let refused = run.call_blocking(ToolCall::new(
        "c1",
        "contact",
        json!({"contactMethod": "phone", "email": "a@b", "name": "Ada"}),
    ));
    assert!(refused.is_error());
    assert!(
        refused
            .error_text()
            .unwrap_or_default()
            .contains("`if` condition holds"),
        "{refused:?}"
    );
}

#[test]
fn the_profiles_that_cannot_take_the_conditionals_say_which_keyword() {
    let registry = registry();
    let run = registry.open_run("t", &Subject::new("acme"));
    for &profile in Profile::ALL {
        if profile == Profile::Mcp {
            continue;
        }
        let error = run.export(profile).expect_err("no conditionals");
        let mut tools: Vec<String> = error
            .incompatibilities()
            .iter()
            .filter(|problem| problem.pointer.ends_with("/if"))
            .map(|problem| problem.tool.clone())
            .collect();
        tools.dedup();
        assert_eq!(tools, ["contact", "reach"], "{profile}: {error}");
    }
}

/// The problem of building a registry of the tool `contact` with `schema` as its arguments
/// schema (or, with `result`, as its result schema).
fn refused(schema: Value, result: bool) -> BuildProblem {
    let tool = if result {
        contact().output_schema(schema)
    } else {
        contact().parameters(schema)
    };
    let error = Registry::builder().tool(tool).build().unwrap_err();
    let [problem] = error.problems() else {
        panic!("one problem: {error}");
    };
    problem.clone()
}

#[test]
fn a_schema_beyond_the_bounds_is_a_build_error_naming_the_tool_and_the_keyword() {
    let mut network = arguments_schema();
    network["properties"]["address"]["$ref"] = json!("https://example.com/address.json");
    let mut deep = json!({"type": "string"});
    for _ in 0..100 {
        deep = json!({"items": deep});
    }
    let mut composed = json!({"type": "string"});
    for _ in 0..20 {
        composed = json!({"anyOf": [composed]});
    }
    let mut draft7 = arguments_schema();
    draft7["$schema"] = json!("http://json-schema.org/draft-07/schema#");
    let mut missing_anchor = result_schema();
    missing_anchor["properties"]["received"]["$ref"] = json!("#nowhere");
    for (schema, result, which, keyword, says) in [
        (
            network,
            false,
            "arguments",
            "$ref",
            "MCP forbids dereferencing a network URI",
        ),
        (
            json!({"type": "object", "properties": {"p": deep}}),
            false,
            "arguments",
            "items",
            "more than 64 levels deep",
        ),
        (
            json!({"type": "object", "properties": {"p": composed}}),
            false,
            "arguments",
            "anyOf",
            "more than 16 levels deep",
        ),
        (
            draft7,
            false,
            "arguments",
            "$schema",
            "only JSON Schema 2020-12",
        ),
        (missing_anchor, true, "result", "$ref", "names no schema"),
    ] {
        let problem = refused(schema, result);
        let BuildProblem::SchemaBeyondBounds {
            tool,
            schema,
            keyword: found,
            ..
        } = &problem
        else {
            panic!("beyond the bounds: {problem:?}");
        };
        assert_eq!(
            (tool.as_str(), *schema, found.as_str()),
            ("contact", which, keyword)
        );
        let text = problem.to_string();
        assert!(
            text.starts_with(&format!("tool \"contact\": the {which} schema ")),
            "{text}"
        );
        assert!(text.contains(says), "{text}");
        assert!(text.contains(&format!("(`{keyword}`)")), "{text}");
    }
}
