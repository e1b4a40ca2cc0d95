//! Deferred sessions (`Run::deferred`): what each profile's first request holds, a search
//! round trip per profile against golden files (`tests/golden/<profile>/deferred.json`,
//! reviewed by eye against `docs/providers.md`), loading that only appends, and the rules a
//! session keeps: nothing outside the allowed set is found, loaded or named.
//!
//! `UPDATE_GOLDEN=1 cargo test -p registry-tests --test deferred` rewrites the golden files.

use std::path::PathBuf;

use registry_core::compat::check_tools;
use registry_core::{
    DynamicTool, ErrorKind, Profile, Registry, Subject, ToolCall,
    change::ReplaceOptions,
    deferred::{DeferredOptions, DeferredSession, SearchCall, SessionCall},
    tool,
};
use registry_tests::{assert_golden_files, tool_objects};
use serde_json::{Value, json};

/// Read the build status of a project: passed, failed or running.
#[tool(
    scopes = "build:read",
    read_only,
    always_loaded,
    title = "Build status"
)]
fn get_build_status(
    /// Project identifier, e.g. `web`.
    project: String,
) -> String {
    format!("{project}: passed")
}

/// List the recent builds of a project, newest first.
#[tool(scopes = "build:read", read_only)]
fn list_builds(
    /// Project identifier.
    project: String,
    /// How many builds to list.
    limit: Option<u32>,
) -> String {
    format!("{project}: {} builds", limit.unwrap_or(10))
}

/// Start a deployment of a project to an environment.
#[tool(scopes = "deploy:write", destructive)]
fn deploy_project(
    /// Project identifier.
    project: String,
    /// Where to deploy: staging or production.
    environment: String,
) -> String {
    format!("deploying {project} to {environment}")
}

/// Roll a deployment back to the previous release.
#[tool(scopes = "deploy:write", destructive, namespace = "deploy")]
fn rollback_deployment(
    /// Project identifier.
    project: String,
) -> String {
    format!("{project}: rolled back")
}

/// Post a message to the team's chat channel.
#[tool(scopes = "chat:write", namespace = "chat")]
fn post_chat_message(
    /// The message text.
    text: String,
) -> String {
    format!("posted: {text}")
}

/// Search the engineering handbook for a topic.
#[tool(public, read_only)]
fn search_handbook(
    /// What to look for.
    topic: String,
) -> String {
    format!("handbook: {topic}")
}

/// The tools of this file.
fn registry() -> Registry {
    Registry::builder()
        .declared_in([module_path!()])
        .build()
        .expect("the tools of this test build a registry")
}

/// A subject that may use every tool but `post_chat_message`.
fn subject() -> Subject {
    Subject::new("acme").with_scopes(["build:read", "deploy:write"])
}

const HIDDEN: &str = "post_chat_message";

/// What the model sends to search for `query`, in `profile`'s shape.
fn search_response(profile: Profile, query: &str) -> Value {
    let arguments = json!({ "query": query });
    match profile {
        Profile::OpenAiChat { .. } => json!({
            "role": "assistant",
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "search_tools", "arguments": arguments.to_string()}}],
        }),
        Profile::OpenAiResponses { .. } => json!({
            "output": [{"type": "tool_search_call", "id": "ts_1", "call_id": "call_1",
                "execution": "client", "status": "completed", "arguments": arguments}],
        }),
        Profile::Anthropic => json!({
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "search_tools", "input": arguments}],
        }),
        Profile::Gemini => json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"id": "call_1", "name": "search_tools", "args": arguments}}]}}],
        }),
        Profile::Mcp => json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_tools", "arguments": arguments},
        }),
        _ => unreachable!("every profile is listed"),
    }
}

/// The one search of `response`.
fn only_search(session: &DeferredSession, response: &Value) -> SearchCall {
    let calls = session.parse_calls(response).expect("the response parses");
    match calls.as_slice() {
        [SessionCall::Search(search)] => search.clone(),
        other => panic!("expected one search, got {other:?}"),
    }
}

/// Every string in `value`, at any depth.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(object) => {
            for (key, item) in object {
                out.push(key.clone());
                strings(item, out);
            }
        }
        _ => {}
    }
}

fn mentions(value: &Value, name: &str) -> bool {
    let mut all = Vec::new();
    strings(value, &mut all);
    all.iter().any(|text| text.contains(name))
}

fn golden_path(profile: Profile) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("golden")
        .join(profile.name())
        .join("deferred.json")
}

/// The first export, a search round trip and the next export, of `profile`.
fn round_trip(profile: Profile) -> Value {
    let registry = registry();
    let run = registry.open_run("deferred", &subject());
    let session = run.deferred(profile, DeferredOptions::new());
    let first = session
        .export()
        .unwrap_or_else(|error| panic!("{profile}: {error}"));
    let response = search_response(profile, "roll back a bad deployment");
    let answer = session.search(&only_search(&session, &response));
    let after = session
        .export()
        .unwrap_or_else(|error| panic!("{profile}: {error}"));
    json!({
        "export": first,
        "response": response,
        "answer": answer.message(),
        "loaded": answer.loaded(),
        "export_changed": answer.export_changed(),
        "export_after": after,
    })
}

#[test]
fn round_trips_match_the_golden_files() {
    assert_golden_files(Profile::ALL.iter().map(|&profile| {
        let mut text = serde_json::to_string_pretty(&round_trip(profile)).expect("JSON");
        text.push('\n');
        (golden_path(profile), text)
    }));
}

#[test]
fn every_tool_object_passes_the_checker() {
    // The checker knows tool objects, not Responses' namespaces and tool search: it reads
    // the functions inside them.
    for &profile in Profile::ALL {
        let trip = round_trip(profile);
        for key in ["export", "export_after"] {
            let list = match profile {
                Profile::OpenAiResponses { .. } => {
                    let mut functions = Vec::new();
                    for item in trip[key].as_array().unwrap() {
                        match item["type"].as_str() {
                            Some("namespace") => {
                                functions.extend(item["tools"].as_array().unwrap().iter().cloned())
                            }
                            Some("function") => functions.push(item.clone()),
                            _ => {}
                        }
                    }
                    Value::Array(functions)
                }
                _ => trip[key].clone(),
            };
            let problems = check_tools(profile, &list);
            assert!(problems.is_empty(), "{profile} {key}: {problems:#?}");
        }
    }
}

#[test]
fn the_first_request_holds_the_loaded_tools_and_the_search_tool() {
    let registry = registry();
    let run = registry.open_run("first", &subject());
    let chat = run.deferred(
        Profile::OpenAiChat { strict: false },
        DeferredOptions::new(),
    );
    let names: Vec<String> = chat
        .export()
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["get_build_status", "search_tools"]);
    assert_eq!(chat.loaded(), ["get_build_status"]);

    // Anthropic: every allowed tool, those not loaded deferred, then the search tool.
    let anthropic = run.deferred(
        Profile::Anthropic,
        DeferredOptions::new().load(["list_builds"]),
    );
    let export = anthropic.export().unwrap();
    let tools = export.as_array().unwrap();
    let shown: Vec<(&str, bool)> = tools
        .iter()
        .map(|tool| {
            (
                tool["name"].as_str().unwrap(),
                tool.get("defer_loading").is_some(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("deploy_project", true),
            ("get_build_status", false),
            ("list_builds", false),
            ("rollback_deployment", true),
            ("search_handbook", true),
            ("search_tools", false),
        ]
    );

    // Responses: the loaded functions in their namespaces, then the client tool search.
    let responses = run.deferred(
        Profile::OpenAiResponses { strict: true },
        DeferredOptions::new()
            .load(["search_handbook"])
            .namespace_description("build", "Builds: status and history."),
    );
    let export = responses.export().unwrap();
    assert_eq!(export[0]["type"], "namespace");
    assert_eq!(export[0]["name"], "build");
    assert_eq!(export[0]["description"], "Builds: status and history.");
    assert_eq!(export[0]["tools"][0]["name"], "get_build_status");
    assert_eq!(export[1]["type"], "function");
    assert_eq!(export[1]["name"], "search_handbook");
    assert_eq!(export[2]["type"], "tool_search");
    assert_eq!(export[2]["execution"], "client");
    assert_eq!(export.as_array().unwrap().len(), 3);
}

#[test]
fn loading_only_appends() {
    let registry = registry();
    for &profile in Profile::ALL {
        let run = registry.open_run("append", &subject());
        let session = run.deferred(profile, DeferredOptions::new().results(1));
        let mut before = tool_objects(profile, &session.export().unwrap());
        for query in [
            "roll back a deployment",
            "list recent builds",
            "handbook",
            "deploy to production",
            "roll back",
        ] {
            let response = search_response(profile, query);
            let answer = session.search(&only_search(&session, &response));
            let after = tool_objects(profile, &session.export().unwrap());
            assert!(after.len() >= before.len(), "{profile}: {query}");
            assert_eq!(
                after[..before.len()],
                before[..],
                "{profile}: the earlier tools changed"
            );
            assert_eq!(
                answer.export_changed(),
                after.len() > before.len(),
                "{profile}: {query}"
            );
            before = after;
        }
        // The session loaded as it said, and byte-identically on a second export.
        assert_eq!(tool_objects(profile, &session.export().unwrap()), before);
    }
}

#[test]
fn nothing_outside_the_allowed_set_is_found_loaded_or_named() {
    let registry = registry();
    for &profile in Profile::ALL {
        let run = registry.open_run("hidden", &subject());
        let session = run.deferred(
            profile,
            DeferredOptions::new().load([HIDDEN, "list_builds"]),
        );
        assert_eq!(
            session.loaded(),
            ["get_build_status", "list_builds"],
            "{profile}"
        );
        assert!(!session.is_loaded(HIDDEN));
        for query in [
            "post a message to the team chat",
            HIDDEN,
            "chat",
            "message text",
        ] {
            let response = search_response(profile, query);
            let answer = session.search(&only_search(&session, &response));
            assert!(
                answer.hits().iter().all(|hit| hit.name() != HIDDEN),
                "{profile}"
            );
            assert!(
                !mentions(answer.message(), HIDDEN),
                "{profile}: {}",
                answer.message()
            );
        }
        let export = session.export().unwrap();
        assert!(!mentions(&export, HIDDEN), "{profile}: {export}");
        // The search tool's description names the groups it can load from: not `chat`.
        assert!(!mentions(&export, "chat"), "{profile}");
        // `explain` is for operators: it lists what the allowed set leaves out, whatever is
        // loaded; deferred tools are visible, not hidden.
        let explanation = run.explain();
        let hidden: Vec<&str> = explanation
            .hidden
            .iter()
            .map(|tool| tool.name.as_str())
            .collect();
        assert_eq!(hidden, [HIDDEN]);
        assert_eq!(explanation.visible, run.allowed().len());
    }
}

#[test]
fn a_call_to_an_allowed_tool_not_loaded_yet_is_resolved_as_usual() {
    let registry = registry();
    let run = registry.open_run("calls", &subject());
    let session = run.deferred(
        Profile::OpenAiChat { strict: false },
        DeferredOptions::new(),
    );
    assert!(!session.is_loaded("rollback_deployment"));
    let response = json!({"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "rollback_deployment", "arguments": "{\"project\": \"web\"}"}},
        {"id": "c2", "type": "function", "function": {"name": HIDDEN, "arguments": "{\"text\": \"hi\"}"}},
    ]});
    let calls = session.parse_calls(&response).unwrap();
    let [SessionCall::Call(rollback), SessionCall::Call(hidden)] = calls.as_slice() else {
        panic!("two tool calls: {calls:?}");
    };
    assert_eq!(
        run.call_blocking(rollback.clone()).json(),
        &json!("web: rolled back")
    );
    assert_eq!(
        run.call_blocking(hidden.clone()).error_kind(),
        Some(ErrorKind::NotAllowed)
    );
    // Calling does not load: the next request is unchanged.
    assert!(!session.is_loaded("rollback_deployment"));
}

#[test]
fn revoked_and_replaced_tools_disappear_from_searches_as_from_calls() {
    let registry = registry();
    let run = registry.open_run("changes", &subject());
    assert_eq!(
        run.search("roll back a deployment", 1)[0].name(),
        "rollback_deployment"
    );
    registry.revoke("rollback_deployment", "broken").unwrap();
    let names: Vec<String> = run
        .search("roll back a deployment", 5)
        .iter()
        .map(|h| h.name().to_owned())
        .collect();
    assert!(
        !names.contains(&"rollback_deployment".to_owned()),
        "{names:?}"
    );

    // A replacement that keeps old runs on their version: the old run finds the old text,
    // a new run the new one.
    let old = registry.open_run("old", &subject());
    let newer = DynamicTool::new("list_builds", "Show the pipeline history of a repository.")
        .scopes(["build:read"])
        .read_only()
        .handler(|_ctx, _args| Ok::<_, String>(json!("history")));
    registry
        .replace(newer, ReplaceOptions::keep_old_runs("reworded"))
        .unwrap();
    let new = registry.open_run("new", &subject());
    assert_eq!(
        old.search("recent builds newest first", 1)[0].name(),
        "list_builds"
    );
    assert!(
        old.search("pipeline history", 5)
            .iter()
            .all(|hit| hit.name() != "list_builds")
    );
    assert_eq!(new.search("pipeline history", 1)[0].name(), "list_builds");

    // One that revokes old runs' version: the old run no longer finds it.
    let again = DynamicTool::new("list_builds", "List builds.")
        .scopes(["build:read"])
        .read_only()
        .handler(|_ctx, _args| Ok::<_, String>(json!("builds")));
    registry
        .replace(again, ReplaceOptions::revoke_old_runs("reworded again"))
        .unwrap();
    assert!(
        new.search("pipeline history", 5)
            .iter()
            .all(|hit| hit.name() != "list_builds")
    );
}

#[test]
fn invalid_searches_are_answered_not_panicked_on() {
    let registry = registry();
    let run = registry.open_run("invalid", &subject());
    for &profile in Profile::ALL {
        let session = run.deferred(profile, DeferredOptions::new());
        for arguments in [
            json!({}),
            json!({"query": ""}),
            json!({"query": 3}),
            json!([1]),
            json!({"query": "x", "k": 2}),
        ] {
            let answer = session.search(&SearchCall::new("c1", arguments.clone()));
            assert!(answer.loaded().is_empty(), "{profile}: {arguments}");
            let text = answer.message().to_string();
            match profile {
                Profile::OpenAiResponses { .. } => assert_eq!(answer.message()["tools"], json!([])),
                _ => assert!(
                    text.contains("invalid arguments for \\\"search_tools\\\""),
                    "{profile}: {text}"
                ),
            }
        }
    }
    // Malformed JSON text from OpenAI Chat.
    let session = run.deferred(
        Profile::OpenAiChat { strict: false },
        DeferredOptions::new(),
    );
    let response = json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "search_tools", "arguments": "{\"query\": "}}]});
    let answer = session.search(&only_search(&session, &response));
    assert!(
        answer.message()["content"]
            .as_str()
            .unwrap()
            .starts_with("invalid arguments")
    );
}

#[test]
fn the_search_tool_name_must_be_free() {
    let taken = Registry::builder()
        .tool(
            DynamicTool::new("search_tools", "Search the team's tools wiki.")
                .public()
                .handler(|_ctx, _args| Ok::<_, String>(json!("wiki"))),
        )
        .build()
        .unwrap();
    let run = taken.open_run("taken", &Subject::new("acme"));
    let error = run
        .deferred(Profile::Anthropic, DeferredOptions::new())
        .export()
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("search tool is named \"search_tools\", as is a tool of the run"),
        "{error}"
    );
    // OpenAI Responses' tool search has no name: nothing to clash with.
    assert!(
        run.deferred(
            Profile::OpenAiResponses { strict: false },
            DeferredOptions::new()
        )
        .export()
        .is_ok()
    );
    let renamed = run.deferred(
        Profile::Anthropic,
        DeferredOptions::new().search_tool_name("find_tools"),
    );
    assert_eq!(renamed.export().unwrap()[1]["name"], "find_tools");
    let invalid = run.deferred(
        Profile::Mcp,
        DeferredOptions::new().search_tool_name("find tools"),
    );
    assert!(
        invalid
            .export()
            .unwrap_err()
            .to_string()
            .contains("cannot be made")
    );
}

#[test]
fn a_request_never_holds_more_tools_than_the_provider_takes() {
    let mut builder = Registry::builder();
    for index in 0..200 {
        builder = builder.tool(
            DynamicTool::new(
                format!("report_{index:03}"),
                format!("Report number {index} of the quarterly report set."),
            )
            .public()
            .handler(|_ctx, _args| Ok::<_, String>(json!("ok"))),
        );
    }
    let registry = builder.build().unwrap();
    let run = registry.open_run("full", &Subject::new("acme"));
    let session = run.deferred(
        Profile::OpenAiChat { strict: false },
        DeferredOptions::new().results(1),
    );
    let mut loaded = 0;
    for index in 0..200 {
        let answer = session.search(&SearchCall::new(
            "c",
            json!({"query": format!("report number {index}")}),
        ));
        assert_eq!(answer.hits()[0].name(), format!("report_{index:03}"));
        loaded += answer.loaded().len();
    }
    // 200 searches would load 200: 127 fit beside the search tool.
    assert_eq!(loaded, 127);
    assert_eq!(session.export().unwrap().as_array().unwrap().len(), 128);
    let answer = session.search(&SearchCall::new("c", json!({"query": "report number 199"})));
    assert!(
        answer.message()["content"]
            .as_str()
            .unwrap()
            .contains("did not fit"),
        "{}",
        answer.message()
    );
}

#[test]
fn responses_searches_and_calls_are_read_in_order() {
    let registry = registry();
    let run = registry.open_run("order", &subject());
    let session = run.deferred(
        Profile::OpenAiResponses { strict: false },
        DeferredOptions::new(),
    );
    let response = json!({"output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "get_build_status", "namespace": "build", "arguments": "{\"project\": \"web\"}"},
        {"type": "tool_search_call", "call_id": "s1", "execution": "client", "status": "completed", "arguments": {"query": "rollback"}},
        {"type": "tool_search_call", "id": "ts_2", "execution": "server", "status": "completed", "arguments": {"query": "x"}},
        {"type": "function_call", "call_id": "c2", "name": "list_builds", "arguments": "{}"},
        {"type": "tool_search_call", "call_id": "s2", "execution": "client", "arguments": "{\"query\": \"handbook\"}"},
    ]});
    let calls = session.parse_calls(&response).unwrap();
    let ids: Vec<(&str, &str)> = calls
        .iter()
        .map(|call| match call {
            SessionCall::Call(call) => ("tool", call.id()),
            SessionCall::Search(search) => ("search", search.id()),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("tool", "c1"),
            ("search", "s1"),
            ("tool", "c2"),
            ("search", "s2")
        ]
    );
    // The plain reading skips searches.
    let plain = Profile::OpenAiResponses { strict: false }
        .parse_calls(&response)
        .unwrap();
    assert_eq!(
        plain.iter().map(ToolCall::id).collect::<Vec<_>>(),
        ["c1", "c2"]
    );
    let SessionCall::Search(search) = &calls[3] else {
        unreachable!()
    };
    assert_eq!(search.query(), Ok("handbook"));
}

#[test]
fn gemini_answers_echo_only_ids_the_model_sent() {
    let registry = registry();
    let run = registry.open_run("gemini", &subject());
    let session = run.deferred(Profile::Gemini, DeferredOptions::new());
    let response = json!({"candidates": [{"content": {"parts": [
        {"functionCall": {"name": "search_tools", "args": {"query": "rollback"}}}]}}]});
    let answer = session.search(&only_search(&session, &response));
    assert_eq!(answer.message()["functionResponse"]["name"], "search_tools");
    assert!(answer.message()["functionResponse"].get("id").is_none());
}

#[test]
fn mcp_searches_say_when_the_list_changed() {
    let registry = registry();
    let run = registry.open_run("mcp", &subject());
    let session = run.deferred(Profile::Mcp, DeferredOptions::new());
    let first = session.search(&SearchCall::new(
        "1",
        json!({"query": "roll back a deployment"}),
    ));
    assert!(first.export_changed());
    assert!(first.loaded().contains(&"rollback_deployment".to_owned()));
    let again = session.search(&SearchCall::new(
        "2",
        json!({"query": "roll back a deployment"}),
    ));
    assert!(!again.export_changed());
    assert!(again.loaded().is_empty());
    assert_eq!(again.message()["isError"], false);
    // A new run (after a registry change, say) can start with what this one loaded.
    let next = registry
        .open_run("mcp-2", &subject())
        .deferred(Profile::Mcp, DeferredOptions::new().load(session.loaded()));
    assert_eq!(next.loaded().len(), session.loaded().len());
}

#[test]
fn namespaces_default_to_the_first_scopes_first_segment() {
    let tool = |name: &str, scopes: &[&str]| {
        let tool = DynamicTool::new(name, "Do one thing.")
            .scopes(scopes.iter().copied())
            .handler(|_ctx, _args| Ok::<_, String>(json!("ok")));
        if scopes.is_empty() {
            tool.public()
        } else {
            tool
        }
    };
    let registry = Registry::builder()
        .tool(tool("a", &["build.v2:read", "deploy:write"]))
        .tool(tool("b", &["2fa:verify"]))
        .tool(tool("c", &[]))
        .tool(
            tool("d", &["deploy:write"])
                .namespace("releases")
                .always_loaded(),
        )
        .build()
        .unwrap();
    let namespace = |name: &str| registry.get(name).unwrap().settings().namespace.clone();
    assert_eq!(namespace("a").as_deref(), Some("build_v2"));
    assert_eq!(namespace("b"), None, "not a valid name: no namespace");
    assert_eq!(namespace("c"), None);
    assert_eq!(namespace("d").as_deref(), Some("releases"));
    assert!(registry.get("d").unwrap().settings().always_loaded);

    let error = Registry::builder()
        .tool(tool("e", &[]).namespace("release tools"))
        .build()
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("tool \"e\": the namespace \"release tools\" contains ` `"),
        "{error}"
    );
}

#[test]
fn sessions_and_answers_move_between_threads() {
    fn shared<T: Send + Sync + 'static>() {}
    shared::<DeferredSession>();
    shared::<registry_core::deferred::SearchAnswer>();
    shared::<registry_core::search::SearchHit>();
    // Searches from several threads at once: each answered whole, none loaded twice.
    let registry = registry();
    let run = registry.open_run("threads", &subject());
    let session = std::sync::Arc::new(run.deferred(Profile::Mcp, DeferredOptions::new()));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let session = session.clone();
            std::thread::spawn(move || {
                session
                    .search(&SearchCall::new(
                        "c",
                        json!({"query": "deployment builds handbook"}),
                    ))
                    .loaded()
                    .len()
            })
        })
        .collect();
    let loaded: usize = threads
        .into_iter()
        .map(|thread| thread.join().unwrap())
        .sum();
    assert_eq!(loaded + 1, session.loaded().len());
}
