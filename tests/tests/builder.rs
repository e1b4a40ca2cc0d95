//! `Registry::builder`: tools built at run time (`DynamicTool`), every check reported in one
//! build with the place each tool was built, duplicates between declared and built tools,
//! explicit replacements, selecting declarations by module, and required tools.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use registry_core::{
    BuildProblem, DynamicTool, Registry, RegistryError, ToolCall,
    call::ArgumentProblem,
    definition::{NameError, Source},
    tool,
};
use registry_tests::{failure, open_run, problems, site_of_fn, site_of_new, success};
use serde_json::{Value, json};

const THIS_FILE: &str = include_str!("builder.rs");

/// How errors show the place a tool was built.
fn built_at(first_arg: &str) -> String {
    let (line, column) = site_of_new(THIS_FILE, first_arg);
    format!("built at run time at tests/tests/builder.rs:{line}:{column}")
}

fn assert_built_at(source: Source, first_arg: &str) {
    assert!(!source.is_declared());
    assert_eq!(source.module_path(), None);
    assert_eq!(source.crate_name(), None);
    assert_eq!(source.file(), file!());
    assert_eq!(
        (source.line(), source.column()),
        site_of_new(THIS_FILE, first_arg)
    );
    assert_eq!(source.to_string(), built_at(first_arg));
}

fn names(registry: &Registry) -> Vec<&str> {
    registry.names().collect()
}

/// A future that is pending once (waking itself) before it is ready.
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

// ---------------------------------------------------------------------------------------------
// Declared tools of this file.

/// Read the current build status of a project.
#[tool(public, read_only)]
fn get_status(project: String) -> String {
    format!("{project}: green")
}

mod a {
    use registry_core::tool;

    /// In `a`.
    #[tool(public)]
    fn in_a() {}

    pub mod b {
        use registry_core::tool;

        /// In `a::b`.
        #[tool(public)]
        fn in_b() {}

        pub mod c {
            use registry_core::tool;

            /// In `a::b::c`.
            #[tool(public)]
            fn in_b_c() {}
        }
    }

    pub mod bc {
        use registry_core::tool;

        /// In `a::bc`, whose path starts like `a::b`'s.
        #[tool(public)]
        fn in_bc() {}
    }
}

// ---------------------------------------------------------------------------------------------
// DynamicTool.

fn echo_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "What to repeat."}},
        "required": ["text"],
        "additionalProperties": false
    })
}

#[test]
fn a_valid_dynamic_tool_registers_and_runs() {
    let echo = DynamicTool::new("echo", "Repeat the text back.")
        .title("Echo")
        .parameters(echo_schema())
        .scopes(["chat:read", "chat.echo"])
        .read_only()
        .idempotent()
        .handler(|ctx, args| {
            let text = args["text"].as_str().unwrap_or_default();
            if text.is_empty() {
                return Err("nothing to repeat");
            }
            Ok(json!(format!("{}: {text}", ctx.call_id())))
        });
    assert_eq!(echo.name(), "echo");
    let registry = Registry::builder().tool(echo).build().unwrap();
    assert_eq!(names(&registry), ["echo"]);

    let tool = registry.get("echo").unwrap();
    assert_eq!(
        serde_json::to_value(&*tool.definition()).unwrap(),
        json!({
            "name": "echo",
            "description": "Repeat the text back.",
            "title": "Echo",
            "parameters": echo_schema()
        })
    );
    let policy = tool.settings();
    let scopes: Vec<&str> = policy.scopes.iter().map(|scope| scope.as_str()).collect();
    assert_eq!(scopes, ["chat:read", "chat.echo"]);
    assert!(policy.hints.read_only && policy.hints.idempotent);
    assert!(!policy.hints.destructive && !policy.hints.open_world);
    assert!(!tool.is_async());
    assert_built_at(tool.source(), r#""echo""#);

    let run = open_run(&registry, &["chat:read", "chat.echo"]);
    let call = |id: &str, arguments| run.call_blocking(ToolCall::new(id, "echo", arguments));
    assert_eq!(
        success(call("call_1", json!({"text": "hi"}))),
        json!("call_1: hi")
    );
    assert_eq!(
        success(pollster::block_on(run.call(ToolCall::new(
            "call_2",
            "echo",
            json!({"text": "yo"})
        )))),
        json!("call_2: yo")
    );
    assert_eq!(
        failure(&call("call_3", json!({"text": ""}))),
        "nothing to repeat"
    );
    assert_eq!(
        problems(&call("call_4", json!({"txt": "hi"}))),
        [
            ArgumentProblem::new("", r#"missing required property "text""#),
            ArgumentProblem::new("", r#"unknown property "txt""#),
        ]
    );
}

#[test]
fn a_dynamic_tool_without_parameters_takes_an_empty_closed_object() {
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("now", "Tell the time.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!(0))),
        )
        .build()
        .unwrap();
    let tool = registry.get("now").unwrap();
    assert_eq!(
        tool.definition().parameters,
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    assert_eq!(tool.definition().title, None);
    let run = open_run(&registry, &[]);
    assert_eq!(
        problems(&run.call_blocking(ToolCall::new("call_1", "now", json!({"at": "noon"})))),
        [ArgumentProblem::new("", r#"unknown property "at""#)]
    );
}

#[test]
fn a_dynamic_schema_is_used_as_given_even_open() {
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("open", "Take anything beside `a`.")
                .public()
                .parameters(json!({"type": "object", "properties": {"a": {"type": "string"}}}))
                .handler(|_, args| Ok::<_, String>(args)),
        )
        .build()
        .unwrap();
    let tool = registry.get("open").unwrap();
    assert_eq!(
        tool.definition().parameters,
        json!({"type": "object", "properties": {"a": {"type": "string"}}})
    );
    let run = open_run(&registry, &[]);
    let call = |arguments| run.call_blocking(ToolCall::new("call_1", "open", arguments));
    assert_eq!(
        success(call(json!({"a": "x", "b": 1}))),
        json!({"a": "x", "b": 1})
    );
    assert_eq!(
        problems(&call(json!({"a": 1}))),
        [ArgumentProblem::new("/a", "expected string, got integer 1")]
    );
}

#[test]
fn an_async_dynamic_tool_runs_both_ways() {
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("later", "Answer later.")
                .public()
                .parameters(echo_schema())
                .async_handler(|ctx, args| async move {
                    YieldOnce(false).await;
                    match args["text"].as_str() {
                        Some("fail") => Err(format!("{} failed", ctx.tool_name())),
                        text => Ok(json!(text)),
                    }
                }),
        )
        .build()
        .unwrap();
    let tool = registry.get("later").unwrap();
    assert!(tool.is_async());
    let run = open_run(&registry, &[]);
    let call = |arguments| ToolCall::new("call_1", "later", arguments);
    assert_eq!(
        success(pollster::block_on(run.call(call(json!({"text": "a"}))))),
        json!("a")
    );
    assert_eq!(
        success(run.call_blocking(call(json!({"text": "b"})))),
        json!("b")
    );
    assert_eq!(
        failure(&run.call_blocking(call(json!({"text": "fail"})))),
        "later failed"
    );
}

// ---------------------------------------------------------------------------------------------
// Every check, in one build.

#[test]
fn every_problem_of_every_tool_is_reported_in_one_build_with_its_site() {
    let error = Registry::builder()
        .tool(
            DynamicTool::new("1st tool", "  ")
                .scopes(["build::read", "deploy:write"])
                .parameters(json!({"type": "array"}))
                .read_only()
                .destructive(),
        )
        .tool(
            DynamicTool::new("broken_schema", "Has a schema that does not compile.")
                .public()
                .parameters(json!({"type": "object", "properties": {"x": {"type": "strin"}}}))
                .handler(|_, _| Ok::<_, String>(Value::Null)),
        )
        .tool(
            DynamicTool::new("get.status", "A dot in the name.")
                .scopes(["build:read!"])
                .handler(|_, _| Ok::<_, String>(Value::Null)),
        )
        .tool(
            DynamicTool::new("fine", "Nothing wrong.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!(1))),
        )
        .build()
        .unwrap_err();

    let (first, schema, dotted) = (
        built_at(r#""1st tool""#),
        built_at(r#""broken_schema""#),
        built_at(r#""get.status""#),
    );
    let problems = error.problems();
    assert_eq!(problems.len(), 9, "{error}");
    // The reason a schema does not compile is the validator's own text.
    let reason = r#""strin" is not valid under any of the schemas listed in the 'anyOf' keyword"#;
    let BuildProblem::InvalidSchema {
        tool,
        reason: actual,
        site,
    } = &problems[6]
    else {
        panic!("expected an invalid schema, got {:?}", problems[6]);
    };
    assert_eq!((tool.as_str(), actual.as_str()), ("broken_schema", reason));
    assert_eq!(site.to_string(), schema);
    let lines: Vec<String> = error.to_string().lines().map(str::to_owned).collect();
    assert_eq!(
        lines,
        [
            "the tool registry could not be built (9 problems):".to_owned(),
            format!(
                "  - the tool name \"1st tool\" starts with `1`; it must start with an ASCII \
                 letter or `_` ({first})"
            ),
            format!(
                "  - tool \"1st tool\" has no description, and a model cannot use an \
                 undescribed tool ({first})"
            ),
            format!(
                "  - tool \"1st tool\": the scope \"build::read\" has an empty segment; write \
                 segments joined by `:`, e.g. `build:read` ({first})"
            ),
            format!(
                "  - tool \"1st tool\" is marked both read-only and destructive; keep the one \
                 that is true ({first})"
            ),
            format!(
                "  - tool \"1st tool\": invalid schema: the arguments schema must \
                 have `\"type\": \"object\"` at its root, since arguments are a JSON \
                 object ({first})"
            ),
            format!(
                "  - tool \"1st tool\" has no handler; give it one with `.handler(...)` or \
                 `.async_handler(...)` ({first})"
            ),
            format!("  - tool \"broken_schema\": invalid schema: {reason} ({schema})"),
            format!(
                "  - the tool name \"get.status\" contains `.`; use only ASCII letters, digits, \
                 `_` and `-` ({dotted})"
            ),
            format!(
                "  - tool \"get.status\": the scope \"build:read!\" contains `!`; a scope uses \
                 ASCII letters, digits, `_`, `.` and `-`, with `:` between segments ({dotted})"
            ),
        ]
    );
}

#[test]
fn a_name_too_long_or_empty_is_refused() {
    let long = "a".repeat(65);
    let error = Registry::builder()
        .tool(
            DynamicTool::new(long.clone(), "Long.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!(1))),
        )
        .tool(
            DynamicTool::new("", "Empty.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!(1))),
        )
        .tool(
            DynamicTool::new("a".repeat(64), "Just short enough.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!(1))),
        )
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems(),
        [
            BuildProblem::InvalidName {
                name: long.clone(),
                site: site(&error.problems()[0]),
                reason: NameError::TooLong {
                    name: long.clone(),
                    length: 65,
                },
            },
            BuildProblem::InvalidName {
                name: String::new(),
                site: site(&error.problems()[1]),
                reason: NameError::Empty,
            },
        ]
    );
    assert_eq!(
        error.problems()[0].to_string().split(" (").next(),
        Some(
            format!("the tool name \"{long}\" is 65 characters long; providers accept at most 64")
                .as_str()
        )
    );
    assert_built_at(site(&error.problems()[0]), "long.clone()");
    assert_built_at(site(&error.problems()[1]), r#""""#);
}

/// The site of a problem about one tool.
fn site(problem: &BuildProblem) -> Source {
    match problem {
        BuildProblem::InvalidName { site, .. }
        | BuildProblem::InvalidScope { site, .. }
        | BuildProblem::InvalidSchema { site, .. }
        | BuildProblem::MissingDescription { site, .. }
        | BuildProblem::MissingHandler { site, .. }
        | BuildProblem::ContradictoryHints { site, .. }
        | BuildProblem::NothingToReplace { site, .. } => *site,
        other => panic!("no single site in {other:?}"),
    }
}

#[test]
fn a_tool_without_handler_is_refused() {
    let error = Registry::builder()
        .declared()
        .tool(DynamicTool::new("no_handler", "Has no handler.").public())
        .build()
        .unwrap_err();
    let [BuildProblem::MissingHandler { tool, site }] = error.problems() else {
        panic!("expected a missing handler, got {error:?}");
    };
    assert_eq!(tool, "no_handler");
    assert_built_at(*site, r#""no_handler""#);
}

// ---------------------------------------------------------------------------------------------
// Duplicates between declared and dynamic tools.

#[test]
fn a_dynamic_tool_named_like_a_declared_one_is_a_duplicate_naming_both() {
    let error = Registry::builder()
        .declared()
        .tool(
            DynamicTool::new("get_status", "Another status.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("?"))),
        )
        .build()
        .unwrap_err();
    let [
        BuildProblem::DuplicateName {
            name,
            first,
            second,
        },
    ] = error.problems()
    else {
        panic!("expected one duplicate, got {error:?}");
    };
    assert_eq!(name, "get_status");
    let (line, column) = site_of_fn(THIS_FILE, "get_status");
    assert_eq!(first.module_path(), Some("builder"));
    assert_eq!(
        (first.file(), first.line(), first.column()),
        (file!(), line, column)
    );
    assert_built_at(*second, r#""get_status", "Another"#);
    assert_eq!(
        error.to_string(),
        format!(
            "the tool registry could not be built (1 problem):\n  - two tools are named \
             \"get_status\": `#[tool]` in builder at tests/tests/builder.rs:{line}:{column} and \
             {}; rename one with `#[tool(name = \"...\")]`, select one with \
             `RegistryBuilder::declared_in`, or replace it explicitly with \
             `RegistryBuilder::replace`",
            built_at(r#""get_status", "Another"#)
        )
    );
}

#[test]
fn two_dynamic_tools_of_one_name_are_a_duplicate() {
    let error = Registry::builder()
        .tool(
            DynamicTool::new("twin", "One.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!(1))),
        )
        .tool(
            DynamicTool::new("twin", "Two.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!(2))),
        )
        .build()
        .unwrap_err();
    let [BuildProblem::DuplicateName { first, second, .. }] = error.problems() else {
        panic!("expected one duplicate, got {error:?}");
    };
    assert_built_at(*first, r#""twin", "One"#);
    assert_built_at(*second, r#""twin", "Two"#);
}

// ---------------------------------------------------------------------------------------------
// Replacements.

#[test]
fn replace_swaps_a_declared_tool_and_records_it() {
    let declared = Registry::from_inventory().unwrap();
    let declared_source = declared.get("get_status").unwrap().source();
    let registry = Registry::builder()
        .declared()
        .replace(
            DynamicTool::new("get_status", "Report a canned status, for tests.")
                .public()
                .parameters(json!({
                    "type": "object",
                    "properties": {"project": {"type": "string"}},
                    "required": ["project"],
                    "additionalProperties": false
                }))
                .handler(|_, args| Ok::<_, String>(json!(format!("{}: stubbed", args["project"])))),
            "the CI server is not reachable from tests",
        )
        .build()
        .unwrap();
    assert_eq!(names(&registry), names(&declared));
    let tool = registry.get("get_status").unwrap();
    assert_eq!(
        tool.definition().description,
        "Report a canned status, for tests."
    );
    let run = open_run(&registry, &[]);
    assert_eq!(
        success(run.call_blocking(ToolCall::new(
            "call_1",
            "get_status",
            json!({"project": "web"})
        ))),
        json!("\"web\": stubbed")
    );
    assert_built_at(tool.source(), r#""get_status", "Report"#);
    // The replacement's own policy, not the declaration's `read_only`.
    assert!(!tool.settings().hints.read_only);

    let [replacement] = registry.replacements() else {
        panic!("expected one replacement: {:?}", registry.replacements());
    };
    assert_eq!(
        (
            replacement.name.as_str(),
            replacement.replaced,
            replacement.by,
            replacement.reason.as_str()
        ),
        (
            "get_status",
            declared_source,
            tool.source(),
            "the CI server is not reachable from tests"
        )
    );
    assert_eq!(
        (declared_source.line(), declared_source.column()),
        site_of_fn(THIS_FILE, "get_status")
    );
    assert!(declared.replacements().is_empty());
}

#[test]
fn replace_swaps_a_dynamic_tool_too_in_order() {
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("clock", "Tell the time.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("real"))),
        )
        .replace(
            DynamicTool::new("clock", "A fixed time.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("fixed"))),
            "deterministic tests",
        )
        .replace(
            DynamicTool::new("clock", "A frozen time.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("frozen"))),
            "even more deterministic",
        )
        .build()
        .unwrap();
    assert_eq!(
        success(open_run(&registry, &[]).call_blocking(ToolCall::new(
            "call_1",
            "clock",
            json!({})
        ))),
        json!("frozen")
    );
    let records: Vec<(&str, u32, u32, &str)> = registry
        .replacements()
        .iter()
        .map(|r| {
            (
                r.name.as_str(),
                r.replaced.line(),
                r.by.line(),
                r.reason.as_str(),
            )
        })
        .collect();
    let line = |first_arg| site_of_new(THIS_FILE, first_arg).0;
    assert_eq!(
        records,
        [
            (
                "clock",
                line(r#""clock", "Tell"#),
                line(r#""clock", "A fixed"#),
                "deterministic tests"
            ),
            (
                "clock",
                line(r#""clock", "A fixed"#),
                line(r#""clock", "A frozen"#),
                "even more deterministic"
            ),
        ]
    );
}

#[test]
fn replacing_a_name_that_is_not_registered_is_an_error() {
    // `get_status` is declared at the crate root, outside `builder::a`.
    let error = Registry::builder()
        .declared_in(["builder::a"])
        .replace(
            DynamicTool::new("get_status", "Not there to replace.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!(1))),
            "a stub",
        )
        .build()
        .unwrap_err();
    let site = built_at(r#""get_status", "Not there"#);
    let [BuildProblem::NothingToReplace { name, site: source }] = error.problems() else {
        panic!("expected nothing to replace, got {error:?}");
    };
    assert_eq!(name, "get_status");
    assert_eq!(source.to_string(), site);
    assert_eq!(
        error.to_string(),
        format!(
            "the tool registry could not be built (1 problem):\n  - cannot replace \
             \"get_status\": no tool of that name is registered; use `RegistryBuilder::tool` \
             to add it ({site})"
        )
    );
}

#[test]
fn a_replacement_is_checked_like_any_tool() {
    let error = Registry::builder()
        .declared()
        .replace(DynamicTool::new("get_status", "").public(), "broken stub")
        .build()
        .unwrap_err();
    let site = built_at(r#""get_status", """#);
    assert_eq!(
        error.to_string(),
        format!(
            "the tool registry could not be built (2 problems):\
             \n  - tool \"get_status\" has no description, and a model cannot use an undescribed \
             tool ({site})\
             \n  - tool \"get_status\" has no handler; give it one with `.handler(...)` or \
             `.async_handler(...)` ({site})"
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Selecting declarations by module.

#[test]
fn declared_in_takes_a_module_and_those_below_it_by_whole_segments() {
    let select = |paths: &[&str]| {
        let registry = Registry::builder()
            .declared_in(paths.iter().copied())
            .build()
            .unwrap();
        registry.names().map(str::to_owned).collect::<Vec<_>>()
    };
    assert_eq!(select(&["builder::a::b"]), ["in_b", "in_b_c"]);
    assert_eq!(select(&["builder::a::b::c"]), ["in_b_c"]);
    assert_eq!(select(&["builder::a::bc"]), ["in_bc"]);
    assert_eq!(select(&["builder::a"]), ["in_a", "in_b", "in_b_c", "in_bc"]);
    assert_eq!(
        select(&["builder"]),
        ["get_status", "in_a", "in_b", "in_b_c", "in_bc"]
    );
    // Not a whole segment: nothing, and that is an error naming the path, not a silently
    // empty registry.
    for path in ["builder::a::", "builde", "a::b"] {
        let error = Registry::builder().declared_in([path]).build().unwrap_err();
        assert_eq!(
            error.problems(),
            [BuildProblem::EmptySelection {
                path: path.to_owned()
            }]
        );
    }
    // No path at all takes nothing: an empty registry, which must be asked for.
    let none = Registry::builder().declared_in(Vec::<String>::new());
    assert_eq!(
        none.build().unwrap_err().problems(),
        [BuildProblem::NoTools { declared: false }]
    );
    let none = Registry::builder().declared_in(Vec::<String>::new());
    assert!(none.allow_empty().build().unwrap().is_empty());
    // Overlapping paths take each declaration once.
    assert_eq!(
        select(&["builder::a::b", "builder::a", "builder::a::b::c"]),
        ["in_a", "in_b", "in_b_c", "in_bc"]
    );
}

#[test]
fn declared_in_accumulates_and_declared_takes_everything() {
    let registry = Registry::builder()
        .declared_in(["builder::a::b::c"])
        .declared_in(vec!["builder::a::bc".to_owned()])
        .build()
        .unwrap();
    assert_eq!(names(&registry), ["in_b_c", "in_bc"]);

    let all = Registry::from_inventory().unwrap();
    for builder in [
        Registry::builder()
            .declared()
            .declared_in(["builder::a::b"]),
        Registry::builder()
            .declared_in(["builder::a::b"])
            .declared(),
    ] {
        assert_eq!(names(&builder.build().unwrap()), names(&all));
    }
    assert_eq!(
        names(&all),
        ["get_status", "in_a", "in_b", "in_b_c", "in_bc"]
    );
}

#[test]
fn an_empty_builder_is_an_error_naming_declared_unless_it_allows_empty() {
    // The likely cause: `.declared()` forgotten.
    let error = Registry::builder().build().unwrap_err();
    let RegistryError::Build(problems) = &error else {
        panic!("{error:?}");
    };
    assert!(
        matches!(problems[..], [BuildProblem::NoTools { declared: false }]),
        "{problems:?}"
    );
    let text = error.to_string();
    assert!(text.contains("`.declared()` was not called"), "{text}");
    assert!(text.contains("`.allow_empty()`"), "{text}");
    // A selection that takes nothing says so itself, once.
    let error = Registry::builder()
        .declared_in(["no_such_module"])
        .build()
        .unwrap_err();
    let RegistryError::Build(problems) = &error else {
        panic!("{error:?}");
    };
    assert!(
        matches!(problems[..], [BuildProblem::EmptySelection { .. }]),
        "{problems:?}"
    );

    let registry = Registry::builder().allow_empty().build().unwrap();
    assert!(registry.is_empty());
    assert_eq!(registry.len(), 0);
    assert_eq!(registry.names().count(), 0);
    assert!(registry.replacements().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Required tools.

#[test]
fn require_lists_every_missing_name() {
    let error = Registry::builder()
        .declared_in(["builder::a::b"])
        .tool(
            DynamicTool::new("ping", "Answer pong.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("pong"))),
        )
        .require(["in_b", "in_bc", "ping"])
        .require(vec!["nope".to_owned(), "in_a".to_owned()])
        .build()
        .unwrap_err();
    let missing = |name: &str| BuildProblem::MissingTool {
        name: name.to_owned(),
    };
    assert_eq!(
        error,
        RegistryError::Build(vec![missing("in_bc"), missing("nope"), missing("in_a")])
    );
    let line = |name: &str| {
        format!(
            "\n  - the required tool \"{name}\" is not registered; if it is declared in another \
             crate, make sure that crate is linked: name it in your code, e.g. \
             `registry_core::link!(that_crate);`"
        )
    };
    assert_eq!(
        error.to_string(),
        format!(
            "the tool registry could not be built (3 problems):{}{}{}",
            line("in_bc"),
            line("nope"),
            line("in_a")
        )
    );
}

#[test]
fn every_kind_of_problem_is_reported_together() {
    let error = Registry::builder()
        .declared()
        .tool(
            DynamicTool::new("in_a", "Clashes.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!(1))),
        )
        .tool(
            DynamicTool::new("bad name", "Invalid.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!(1))),
        )
        .replace(
            DynamicTool::new("ghost", "Replaces nothing.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!(1))),
            "why not",
        )
        .require(["missing_one"])
        .build()
        .unwrap_err();
    let kinds: Vec<&str> = error
        .problems()
        .iter()
        .map(|problem| match problem {
            BuildProblem::InvalidName { .. } => "invalid name",
            BuildProblem::DuplicateName { .. } => "duplicate",
            BuildProblem::NothingToReplace { .. } => "nothing to replace",
            BuildProblem::MissingTool { .. } => "missing",
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        ["invalid name", "duplicate", "nothing to replace", "missing"]
    );
    assert!(
        error
            .to_string()
            .starts_with("the tool registry could not be built (4 problems):\n"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// Least privilege by default: a tool that restricts nothing says `public`.

#[test]
fn a_dynamic_tool_that_restricts_nothing_must_say_public_and_every_problem_is_reported() {
    let error = Registry::builder()
        .tool(
            // add_public: leave (restricts nothing, on purpose)
            DynamicTool::new("clock_time", "Tell the server's time.")
                .handler(|_, _| Ok::<_, String>(json!("12:00"))),
        )
        .tool(
            DynamicTool::new("read_build", "Read a build.")
                .public()
                .scopes(["build:read"])
                .handler(|_, _| Ok::<_, String>(json!("passed"))),
        )
        .tool(
            DynamicTool::new("nightly_job", "Run the nightly report.")
                .public()
                .tenants(["acme"])
                .handler(|_, _| Ok::<_, String>(json!("sent"))),
        )
        // add_public: leave (restricts nothing, on purpose)
        .tool(DynamicTool::new("handlerless", "Has no handler."))
        .build()
        .unwrap_err();
    let (time, build, nightly, handlerless) = (
        built_at(r#""clock_time""#),
        built_at(r#""read_build""#),
        built_at(r#""nightly_job""#),
        built_at(r#""handlerless""#),
    );
    let lines: Vec<String> = error.to_string().lines().map(str::to_owned).collect();
    assert_eq!(
        lines,
        [
            "the tool registry could not be built (5 problems):".to_owned(),
            format!(
                "  - tool \"clock_time\" restricts nothing, so every subject of every tenant \
                 would see and call it; name the scopes it needs (`.scopes([\"build:read\"])`, \
                 `scopes = \"build:read\"`) or the tenants that may use it \
                 (`.tenants([\"acme\"])`, `tenants = \"acme\"`), or, if anyone may call it, say \
                 so with `.public()` (`#[tool(public)]`) ({time})"
            ),
            format!(
                "  - tool \"read_build\" is marked public but requires scopes or names tenants, \
                 so it is not visible to everyone; remove `public`, or the scopes and tenants \
                 ({build})"
            ),
            format!(
                "  - tool \"nightly_job\" is marked public but requires scopes or names tenants, so \
                 it is not visible to everyone; remove `public`, or the scopes and tenants \
                 ({nightly})"
            ),
            format!(
                "  - tool \"handlerless\" restricts nothing, so every subject of every tenant \
                 would see and call it; name the scopes it needs (`.scopes([\"build:read\"])`, \
                 `scopes = \"build:read\"`) or the tenants that may use it \
                 (`.tenants([\"acme\"])`, `tenants = \"acme\"`), or, if anyone may call it, say \
                 so with `.public()` (`#[tool(public)]`) ({handlerless})"
            ),
            format!(
                "  - tool \"handlerless\" has no handler; give it one with `.handler(...)` or \
                 `.async_handler(...)` ({handlerless})"
            ),
        ]
    );
    assert!(matches!(
        error.problems()[3],
        BuildProblem::Unrestricted { ref tool, .. } if tool == "handlerless"
    ));
    assert!(matches!(
        error.problems()[1],
        BuildProblem::PublicButRestricted { ref tool, .. } if tool == "read_build"
    ));
}

#[test]
fn a_public_tool_is_public_in_its_policy_and_a_restricted_one_is_not() {
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("server_time", "Tell the server's time.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("12:00"))),
        )
        .tool(
            DynamicTool::new("nightly", "Run the nightly report.")
                .tenants(["acme"])
                .handler(|_, _| Ok::<_, String>(json!("sent"))),
        )
        .build()
        .unwrap();
    assert!(registry.get("server_time").unwrap().settings().is_public());
    assert!(!registry.get("nightly").unwrap().settings().is_public());
    // Every subject of every tenant sees the public tool; only acme's the restricted one.
    let globex = registry.open_run("r1", &registry_core::Subject::new("globex"));
    assert_eq!(
        globex.allowed().names().collect::<Vec<_>>(),
        ["server_time"]
    );
    let acme = registry.open_run("r2", &registry_core::Subject::new("acme"));
    assert_eq!(
        acme.allowed().names().collect::<Vec<_>>(),
        ["nightly", "server_time"]
    );
}

#[test]
fn a_replacement_at_run_time_that_restricts_nothing_is_refused_and_changes_nothing() {
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("nightly", "Run the nightly report.")
                .tenants(["acme"])
                .handler(|_, _| Ok::<_, String>(json!("sent"))),
        )
        .build()
        .unwrap();
    let error = registry
        .replace(
            // add_public: leave (restricts nothing, on purpose)
            DynamicTool::new("nightly", "Run the nightly report for everyone.")
                .handler(|_, _| Ok::<_, String>(json!("sent"))),
            registry_core::change::ReplaceOptions::keep_old_runs("open it to everyone"),
        )
        .unwrap_err();
    assert!(
        matches!(error.problems(), [BuildProblem::Unrestricted { tool, .. }] if tool == "nightly"),
        "{error}"
    );
    let globex = registry.open_run("r1", &registry_core::Subject::new("globex"));
    assert_eq!(globex.allowed().len(), 0);
    assert_eq!(
        registry.get("nightly").unwrap().settings().tenants,
        ["acme".to_owned()]
    );
}

// Undocumented parameters (#55): an opt-in build problem.

/// A tool whose parameters schema has a field with and without a description at every depth.
fn nested_schema_tool() -> DynamicTool {
    DynamicTool::new("import_rows", "Import rows into a table.")
        .public()
        .parameters(json!({
            "type": "object",
            "properties": {
                "table": {"type": "string", "description": "The table."},
                "mode": {"type": "string"},
                "rows": {
                    "type": "array",
                    "description": "The rows.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "integer"},
                            "note": {"type": "string", "description": "  "}
                        }
                    }
                },
                "labels": {
                    "type": "object",
                    "description": "Labels by name.",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"color": {"type": "string"}}
                    }
                },
                "range": {"$ref": "#/$defs/Range"},
                "tree": {"$ref": "#/$defs/Node", "description": "A tree of rows."}
            },
            "$defs": {
                "Range": {
                    "type": "object",
                    "description": "A range of ids.",
                    "properties": {
                        "from": {"type": "integer", "description": "The first id."},
                        "to": {"anyOf": [{"type": "integer"}, {"type": "null"}]}
                    }
                },
                "Node": {
                    "type": "object",
                    "properties": {
                        "label": {"type": "string"},
                        "children": {
                            "type": "array",
                            "description": "Its children.",
                            "items": {"$ref": "#/$defs/Node"}
                        }
                    }
                }
            }
        }))
        .handler(|_ctx, _args| Ok::<_, String>(json!("imported")))
}

#[test]
fn require_documented_parameters_names_every_parameter_and_field_without_a_description() {
    // Off by default.
    Registry::builder()
        .tool(nested_schema_tool())
        .build()
        .unwrap();

    let error = Registry::builder()
        .tool(nested_schema_tool())
        .require_documented_parameters()
        .build()
        .unwrap_err();
    let found: Vec<(&str, Vec<&str>)> = error
        .problems()
        .iter()
        .map(|problem| match problem {
            BuildProblem::UndocumentedParameters { tool, paths, .. } => {
                (tool.as_str(), paths.iter().map(String::as_str).collect())
            }
            other => panic!("unexpected {other}"),
        })
        .collect();
    assert_eq!(
        found,
        [(
            "import_rows",
            vec![
                "labels.*.color",
                "mode",
                "range.to",
                "rows[].id",
                "rows[].note",
                "tree.label",
            ]
        ),]
    );
    let message = error.to_string();
    assert!(
        message.contains(&format!(
            "tool \"import_rows\": parameters with no description: labels.*.color, mode, \
             range.to, rows[].id, rows[].note, tree.label; describe each, with a \"description\" \
             in the parameters schema given to `DynamicTool::parameters`, or a doc comment on \
             the field of the type it was derived from ({})",
            built_at("\"import_rows\"")
        )),
        "{message}"
    );

    // Fully described, it builds.
    let described = DynamicTool::new("ping", "Answer pong.")
        .public()
        .parameters(json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "What to repeat."}}
        }))
        .handler(|_ctx, _args| Ok::<_, String>(json!("pong")));
    Registry::builder()
        .tool(described)
        .require_documented_parameters()
        .build()
        .unwrap();
}

#[test]
fn a_replacement_is_held_to_require_documented_parameters() {
    let described = |property: Value| {
        DynamicTool::new("repeat", "Repeat a text.")
            .public()
            .parameters(json!({"type": "object", "properties": {"text": property}}))
            .handler(|_ctx, args| Ok::<_, String>(args["text"].clone()))
    };
    let strict = Registry::builder()
        .tool(described(
            json!({"type": "string", "description": "What to repeat."}),
        ))
        .require_documented_parameters()
        .build()
        .unwrap();
    let error = strict
        .replace(
            described(json!({"type": "string"})),
            registry_core::change::ReplaceOptions::keep_old_runs("shorter"),
        )
        .unwrap_err();
    assert!(
        matches!(
            error.problems(),
            [BuildProblem::UndocumentedParameters { tool, paths, .. }] if tool == "repeat" && paths == &["text"]
        ),
        "{error}"
    );
    // A registry built without it takes the same replacement.
    let lax = Registry::builder()
        .tool(described(
            json!({"type": "string", "description": "What to repeat."}),
        ))
        .build()
        .unwrap();
    lax.replace(
        described(json!({"type": "string"})),
        registry_core::change::ReplaceOptions::keep_old_runs("shorter"),
    )
    .unwrap();
}
