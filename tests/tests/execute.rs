//! Calling declared tools through a run, with `Run::call_blocking` and with `Run::call` driven
//! by a small executor: valid arguments, each kind of invalid argument with its exact message
//! and JSON pointer, `Option` parameters, tool errors, results that are not JSON, async tools
//! and the call context.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use registry_core::{Observation, Registry, ToolCall, ToolContext, tool};
use registry_tests::{failure, open_run, success};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

fn registry() -> Registry {
    Registry::from_inventory().expect("the tools of this file build a registry")
}

/// Calls `name` with `arguments` through a run both ways, blocking and awaited through
/// `Run::call`, checks that both give the same observation, and returns it.
fn call(name: &str, arguments: Value) -> Observation {
    let registry = registry();
    let run = open_run(&registry, &[]);
    let call = ToolCall::new("call_1", name, arguments);
    let blocking = run.call_blocking(call.clone());
    let awaited = pollster::block_on(run.call(call));
    assert_eq!(blocking, awaited, "call_blocking and call disagree");
    blocking
}

/// The problems of an invalid call, as (pointer, message) pairs.
#[track_caller]
fn problems(observation: &Observation) -> Vec<(String, String)> {
    registry_tests::problems(observation)
        .iter()
        .map(|problem| (problem.pointer.clone(), problem.message.clone()))
        .collect()
}

/// What the model reads when the arguments of `name` have the problems `listed`.
fn invalid_text(name: &str, listed: &str) -> String {
    format!(
        "invalid arguments for {name:?}: {listed}; call it again with arguments that match its \
         schema"
    )
}

fn problem(pointer: &str, message: &str) -> (String, String) {
    (pointer.to_owned(), message.to_owned())
}

// ---------------------------------------------------------------------------------------------
// The tools.

/// Read the current build status of a project.
#[tool(public, read_only)]
fn get_status(
    /// Project identifier, e.g. `web`.
    project: String,
    /// Include the last log lines.
    verbose: Option<bool>,
    /// How much detail, 0 to 255.
    level: Option<u8>,
) -> Result<String, String> {
    match project.as_str() {
        "web" => Ok(format!("web: green, verbose={verbose:?}, level={level:?}")),
        other => Err(format!("no project named {other:?}")),
    }
}

/// Which runs to list.
#[derive(Debug, Deserialize, JsonSchema)]
struct Filter {
    /// Only runs in this state.
    status: String,
    /// At most this many.
    limit: Option<u32>,
}

/// List the pipeline runs of a project.
#[tool(public)]
fn list_runs(project: String, filter: Filter, count: u32) -> Vec<String> {
    (0..count.min(filter.limit.unwrap_or(u32::MAX)))
        .map(|index| format!("{project}#{index} {}", filter.status))
        .collect()
}

/// Forget a key; returns nothing.
#[tool(public)]
fn forget(key: String) {
    let _ = key;
}

/// Return a map whose keys are not strings, which JSON cannot represent.
#[tool(public)]
fn unrepresentable() -> HashMap<Vec<u8>, u8> {
    HashMap::from([(vec![1, 2], 3)])
}

/// A future that is pending once (waking itself) before it is ready, as real I/O would be.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Fetch a page.
#[tool(public, open_world)]
async fn fetch(url: String) -> Result<String, String> {
    YieldOnce(false).await;
    match url.strip_prefix("https://") {
        Some(rest) => Ok(format!("<html>{rest}</html>")),
        None => Err(format!("only https is allowed, got {url:?}")),
    }
}

/// Say which call this is.
#[tool(public)]
fn whoami(ctx: &ToolContext, greeting: String) -> String {
    format!(
        "{greeting} from {} in call {}",
        ctx.tool_name(),
        ctx.call_id()
    )
}

/// Say which call this is, asynchronously.
#[tool(public)]
async fn whoami_later(ctx: &ToolContext) -> String {
    YieldOnce(false).await;
    format!("{} in call {}", ctx.tool_name(), ctx.call_id())
}

// ---------------------------------------------------------------------------------------------
// Valid calls.

#[test]
fn valid_arguments_run_the_tool_and_give_its_json_result() {
    assert_eq!(
        success(call(
            "get_status",
            json!({"project": "web", "verbose": true, "level": 255})
        )),
        json!("web: green, verbose=Some(true), level=Some(255)")
    );
    assert_eq!(
        success(call(
            "list_runs",
            json!({"project": "api", "filter": {"status": "failed", "limit": 2}, "count": 5})
        )),
        json!(["api#0 failed", "api#1 failed"])
    );
}

#[test]
fn an_absent_option_and_a_null_option_are_both_none() {
    let expected = json!("web: green, verbose=None, level=None");
    assert_eq!(
        success(call("get_status", json!({"project": "web"}))),
        expected
    );
    assert_eq!(
        success(call(
            "get_status",
            json!({"project": "web", "verbose": null, "level": null})
        )),
        expected
    );
}

#[test]
fn a_tool_returning_nothing_gives_null() {
    assert_eq!(success(call("forget", json!({"key": "k"}))), Value::Null);
}

// ---------------------------------------------------------------------------------------------
// Invalid arguments: one problem each.

#[test]
fn a_missing_required_argument_is_named() {
    let outcome = call("get_status", json!({"verbose": true}));
    assert_eq!(
        outcome.error_text(),
        Some(&*invalid_text(
            "get_status",
            r#"missing required property "project""#
        ))
    );
    assert_eq!(
        problems(&outcome),
        [problem("", r#"missing required property "project""#)]
    );
}

#[test]
fn an_unknown_argument_is_named() {
    let outcome = call("get_status", json!({"project": "web", "projct": "web"}));
    assert_eq!(
        outcome.error_text(),
        Some(&*invalid_text("get_status", r#"unknown property "projct""#))
    );
    assert_eq!(
        problems(&outcome),
        [problem("", r#"unknown property "projct""#)]
    );
}

#[test]
fn an_unknown_property_inside_a_struct_argument_points_at_the_struct() {
    let outcome = call(
        "list_runs",
        json!({"project": "api", "filter": {"status": "ok", "colour": "red"}, "count": 1}),
    );
    assert_eq!(
        outcome.error_text(),
        Some(&*invalid_text(
            "list_runs",
            r#"/filter: unknown property "colour""#
        ))
    );
    assert_eq!(
        problems(&outcome),
        [problem("/filter", r#"unknown property "colour""#)]
    );
}

#[test]
fn a_wrongly_typed_argument_says_what_was_expected_and_what_came() {
    let outcome = call("get_status", json!({"project": "web", "verbose": "yes"}));
    assert_eq!(
        outcome.error_text(),
        Some(&*invalid_text(
            "get_status",
            r#"/verbose: expected boolean or null, got string "yes""#
        ))
    );
    assert_eq!(
        problems(&outcome),
        [problem(
            "/verbose",
            r#"expected boolean or null, got string "yes""#
        )]
    );
    assert_eq!(
        problems(&call(
            "list_runs",
            json!({"project": "api", "filter": {"status": 7}, "count": 1.5})
        )),
        [
            problem("/count", "expected integer, got number 1.5"),
            problem("/filter/status", "expected string, got integer 7"),
        ]
    );
}

#[test]
fn a_long_string_is_shortened_in_the_message() {
    let long = "y".repeat(50);
    assert_eq!(
        problems(&call(
            "get_status",
            json!({"project": "web", "verbose": long})
        )),
        [problem(
            "/verbose",
            &format!(
                "expected boolean or null, got string {:?}...",
                "y".repeat(40)
            )
        )]
    );
}

#[test]
fn arguments_that_are_not_an_object_are_refused_whole() {
    for (arguments, got) in [
        (Value::Null, "null"),
        (json!(["web"]), "array"),
        (json!("web"), r#"string "web""#),
        (json!(42), "integer 42"),
    ] {
        let outcome = call("get_status", arguments);
        assert_eq!(
            outcome.error_text(),
            Some(&*invalid_text(
                "get_status",
                &format!("the arguments must be a JSON object, got {got}")
            ))
        );
        assert_eq!(
            problems(&outcome),
            [problem(
                "",
                &format!("the arguments must be a JSON object, got {got}")
            )]
        );
    }
    // Even a tool that takes nothing wants an object.
    assert_eq!(
        problems(&call("whoami_later", Value::Null)),
        [problem("", "the arguments must be a JSON object, got null")]
    );
}

#[test]
fn an_integer_out_of_range_of_u8_is_refused_by_the_schema() {
    assert_eq!(
        problems(&call("get_status", json!({"project": "web", "level": 256}))),
        [problem("/level", "must be at most 255, got 256")]
    );
    assert_eq!(
        problems(&call("get_status", json!({"project": "web", "level": -1}))),
        [problem("/level", "must be at least 0, got -1")]
    );
}

/// The schema of a `u32` has no maximum, so a too large value passes validation; decoding it
/// must still end in a clear `InvalidArguments` at the right pointer, not a panic.
#[test]
fn an_integer_out_of_range_of_u32_is_refused_when_decoded() {
    let outcome = call(
        "list_runs",
        json!({"project": "api", "filter": {"status": "ok"}, "count": 5_000_000_000u64}),
    );
    assert_eq!(
        outcome.error_text(),
        Some(&*invalid_text(
            "list_runs",
            "/count: invalid value: integer `5000000000`, expected u32"
        ))
    );
    assert_eq!(
        problems(&outcome),
        [problem(
            "/count",
            "invalid value: integer `5000000000`, expected u32"
        )]
    );
    assert_eq!(
        problems(&call(
            "list_runs",
            json!({"project": "api", "filter": {"status": "ok"}, "count": -3})
        )),
        [problem("/count", "must be at least 0, got -3")]
    );
}

// ---------------------------------------------------------------------------------------------
// Invalid arguments: every problem at once.

#[test]
fn every_problem_is_listed_at_once() {
    let outcome = call(
        "get_status",
        json!({"verbose": "yes", "level": 300, "projct": "web", "force": true}),
    );
    let listed = problems(&outcome);
    let mut found = listed.clone();
    found.sort();
    assert_eq!(
        found,
        [
            problem("", r#"missing required property "project""#),
            problem("", r#"unknown property "force""#),
            problem("", r#"unknown property "projct""#),
            problem("/level", "must be at most 255, got 300"),
            problem("/verbose", r#"expected boolean or null, got string "yes""#),
        ]
    );
    // Displayed in the order listed, `pointer: message` (the message alone at the root),
    // joined by `; `.
    let shown: Vec<String> = listed
        .iter()
        .map(|(pointer, message)| match pointer.as_str() {
            "" => message.clone(),
            pointer => format!("{pointer}: {message}"),
        })
        .collect();
    assert_eq!(
        outcome.error_text(),
        Some(&*invalid_text("get_status", &shown.join("; ")))
    );
}

#[test]
fn problems_inside_nested_values_are_listed_with_those_outside() {
    let mut found = problems(&call(
        "list_runs",
        json!({"project": 1, "filter": {"limit": "ten", "extra": 0}}),
    ));
    found.sort();
    assert_eq!(
        found,
        [
            problem("", r#"missing required property "count""#),
            problem("/filter", r#"missing required property "status""#),
            problem("/filter", r#"unknown property "extra""#),
            problem(
                "/filter/limit",
                r#"expected integer or null, got string "ten""#
            ),
            problem("/project", "expected string, got integer 1"),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Failures of the tool itself.

#[test]
fn an_err_of_the_tool_is_a_failure_with_its_text() {
    let outcome = call("get_status", json!({"project": "mobile"}));
    assert_eq!(failure(&outcome), r#"no project named "mobile""#);
    assert_eq!(
        outcome.error_text(),
        Some(r#"the tool "get_status" failed: no project named "mobile""#)
    );
}

#[test]
fn a_result_that_is_not_json_is_an_output_error() {
    let outcome = call("unrepresentable", json!({}));
    assert_eq!(
        failure(&outcome),
        "the tool's result could not be converted to JSON: key must be a string"
    );
}

// ---------------------------------------------------------------------------------------------
// Async tools and the context.

#[test]
fn an_async_tool_runs_with_call_and_with_call_blocking() {
    let registry = registry();
    let tool = registry.get("fetch").unwrap();
    assert!(tool.is_async());
    assert!(!registry.get("get_status").unwrap().is_async());
    let run = open_run(&registry, &[]);
    let fetch = ToolCall::new("call_1", "fetch", json!({"url": "https://example.org"}));
    assert_eq!(
        success(pollster::block_on(run.call(fetch.clone()))),
        json!("<html>example.org</html>")
    );
    assert_eq!(
        success(run.call_blocking(fetch)),
        json!("<html>example.org</html>")
    );
    assert_eq!(
        failure(&call("fetch", json!({"url": "http://example.org"}))),
        r#"only https is allowed, got "http://example.org""#
    );
    assert_eq!(
        problems(&call("fetch", json!({"uri": "https://example.org"}))),
        [
            problem("", r#"missing required property "url""#),
            problem("", r#"unknown property "uri""#),
        ]
    );
}

#[test]
fn a_tool_sees_the_context_of_its_call() {
    let registry = registry();
    let tool = registry.get("whoami").unwrap();
    assert_eq!(
        tool.definition().parameters["properties"],
        json!({"greeting": {"type": "string"}})
    );
    let run = open_run(&registry, &[]);
    assert_eq!(
        success(run.call_blocking(ToolCall::new(
            "toolu_01A",
            "whoami",
            json!({"greeting": "hello"})
        ))),
        json!("hello from whoami in call toolu_01A")
    );
    assert_eq!(
        success(pollster::block_on(run.call(ToolCall::new(
            "call_xyz",
            "whoami",
            json!({"greeting": "hi"})
        )))),
        json!("hi from whoami in call call_xyz")
    );
    // The context is not an argument: giving it as one is an unknown property.
    assert_eq!(
        problems(&call("whoami", json!({"greeting": "hi", "ctx": {}}))),
        [problem("", r#"unknown property "ctx""#)]
    );
}

#[test]
fn an_async_tool_sees_the_context_of_its_call() {
    let registry = registry();
    let tool = registry.get("whoami_later").unwrap();
    assert!(tool.is_async());
    let run = open_run(&registry, &[]);
    assert_eq!(
        success(pollster::block_on(run.call(ToolCall::new(
            "call_7",
            "whoami_later",
            json!({})
        )))),
        json!("whoami_later in call call_7")
    );
    assert_eq!(
        success(run.call_blocking(ToolCall::new("call_8", "whoami_later", json!({})))),
        json!("whoami_later in call call_8")
    );
}

#[test]
fn tools_can_be_called_from_other_threads() {
    let registry = registry();
    let handles: Vec<_> = (0..4)
        .map(|index| {
            let registry = registry.clone();
            std::thread::spawn(move || {
                let run = open_run(&registry, &[]);
                let url = format!("https://host{index}");
                let fetch = ToolCall::new("call_1", "fetch", json!({ "url": url }));
                success(pollster::block_on(run.call(fetch)))
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|handle| handle.join().unwrap())
        .collect();
    assert_eq!(
        results,
        (0..4)
            .map(|index| json!(format!("<html>host{index}</html>")))
            .collect::<Vec<_>>()
    );
}

/// Count lines, with a default.
#[registry_core::tool(public)]
fn count_lines(
    text: String,
    /// The separator; a newline by default.
    separator: Option<String>,
) -> usize {
    text.split(separator.as_deref().unwrap_or("\n")).count()
}

#[test]
fn null_for_an_optional_argument_means_absent_as_strict_models_send_it() {
    let registry = registry_core::Registry::from_inventory().unwrap();
    let run = open_run(&registry, &[]);
    let call = |arguments| run.call_blocking(ToolCall::new("c", "count_lines", arguments));
    let with_null = call(serde_json::json!({"text": "a\nb", "separator": null}));
    assert_eq!(success(with_null), serde_json::json!(2));
    // A required argument set to null is still an error.
    let error = call(serde_json::json!({"text": null}));
    assert_eq!(
        problems(&error),
        [problem("/text", "expected string, got null")]
    );
    assert_eq!(
        error.error_text(),
        Some(&*invalid_text(
            "count_lines",
            "/text: expected string, got null"
        ))
    );
}
