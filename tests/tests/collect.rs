//! `Registry::from_inventory` collects every `#[tool]` linked into the program: from modules of
//! this test and from a second crate (`extra-tools`, linked with `link!`); and knows where each
//! was declared.

use registry_core::{Registry, RegistryError, Tool, ToolCall};
use registry_tests::{open_run, site_of_fn, success};
use serde_json::json;

registry_core::link!(extra_tools);

mod build {
    use registry_core::tool;

    /// Read the current build status of a project.
    #[tool(scopes = "build:read", read_only)]
    fn get_status(project: String) -> String {
        format!("{project}: green")
    }

    pub mod deploy {
        use registry_core::tool;

        /// Deploy a build of a project.
        #[tool(scopes = "deploy:write, build:read", destructive)]
        fn deploy_build(project: String, build: u64) -> String {
            format!("{project}#{build} deployed")
        }
    }
}

mod search {
    use registry_core::tool;

    /// Search the documentation.
    #[tool(public, read_only, idempotent, open_world)]
    async fn search_docs(query: String) -> Vec<String> {
        vec![format!("result for {query}")]
    }
}

/// A registry is shared between threads and cloned cheaply.
const _: () = {
    const fn assert_send_sync_clone<T: Send + Sync + Clone>() {}
    assert_send_sync_clone::<Registry>();
    assert_send_sync_clone::<Tool>();
};

const THIS_FILE: &str = include_str!("collect.rs");
const EXTRA_TOOLS_FILE: &str = include_str!("../crates/extra-tools/src/lib.rs");

const ALL: [&str; 5] = [
    "count_words",
    "deploy_build",
    "get_status",
    "reverse_text",
    "search_docs",
];

#[test]
fn every_tool_of_both_modules_and_of_the_linked_crate_is_collected() {
    let registry = Registry::from_inventory().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ALL);
    assert_eq!(registry.len(), 5);
    assert_eq!(registry.names().len(), 5);
    assert!(!registry.is_empty());
    for name in ALL {
        assert!(registry.contains(name), "{name}");
        assert_eq!(registry.get(name).unwrap().name(), name);
        assert_eq!(registry.get(name).unwrap().name(), name);
    }
}

#[test]
fn iteration_is_in_name_order() {
    let registry = Registry::from_inventory().unwrap();
    assert_eq!(
        registry
            .iter()
            .map(|tool| tool.name().to_owned())
            .collect::<Vec<_>>(),
        ALL
    );
    let mut seen = Vec::new();
    for tool in &registry {
        seen.push(tool.name().to_owned());
    }
    assert_eq!(seen, ALL);
}

#[test]
fn an_unknown_name_is_none_and_a_change_to_it_an_error_naming_it() {
    let registry = Registry::from_inventory().unwrap();
    assert!(registry.get("get_stat").is_none());
    let error = registry.revoke("get_stat", "typo").unwrap_err();
    assert_eq!(
        error,
        RegistryError::UnknownTool {
            name: "get_stat".to_owned()
        }
    );
    assert_eq!(
        error.to_string(),
        r#"no tool named "get_stat" is registered"#
    );
    assert!(error.problems().is_empty());
    // Names are matched exactly.
    assert!(registry.get("Get_Status").is_none());
    assert!(registry.get("get_status ").is_none());
    assert!(!registry.contains(""));
}

#[test]
fn a_tool_of_this_crate_knows_its_module_file_and_line() {
    let registry = Registry::from_inventory().unwrap();
    for (name, module) in [
        ("get_status", "collect::build"),
        ("deploy_build", "collect::build::deploy"),
        ("search_docs", "collect::search"),
    ] {
        let source = registry.get(name).unwrap().source();
        let (line, column) = site_of_fn(THIS_FILE, name);
        assert!(source.is_declared(), "{name}");
        assert_eq!(source.crate_name(), Some("collect"), "{name}");
        assert_eq!(source.module_path(), Some(module), "{name}");
        assert_eq!(source.file(), "tests/tests/collect.rs", "{name}");
        assert_eq!(source.file(), file!(), "{name}");
        assert_eq!((source.line(), source.column()), (line, column), "{name}");
        assert_eq!(
            source.to_string(),
            format!("`#[tool]` in {module} at tests/tests/collect.rs:{line}:{column}")
        );
    }
}

#[test]
fn a_tool_of_the_linked_crate_knows_its_crate_module_file_and_line() {
    let registry = Registry::from_inventory().unwrap();
    for (name, module) in [
        ("count_words", "extra_tools"),
        ("reverse_text", "extra_tools::text"),
    ] {
        let source = registry.get(name).unwrap().source();
        let (line, column) = site_of_fn(EXTRA_TOOLS_FILE, name);
        assert_eq!(source.crate_name(), Some("extra_tools"), "{name}");
        assert_eq!(source.module_path(), Some(module), "{name}");
        assert_eq!(
            source.file(),
            "tests/crates/extra-tools/src/lib.rs",
            "{name}"
        );
        assert_eq!((source.line(), source.column()), (line, column), "{name}");
    }
}

#[test]
fn the_policy_of_each_declaration_is_kept() {
    let registry = Registry::from_inventory().unwrap();
    let scopes = |name: &str| {
        registry
            .get(name)
            .unwrap()
            .settings()
            .scopes
            .iter()
            .map(|scope| scope.as_str().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(scopes("deploy_build"), ["deploy:write", "build:read"]);
    assert_eq!(scopes("get_status"), ["build:read"]);
    assert!(scopes("count_words").is_empty());
    let hints = |name: &str| {
        let hints = registry.get(name).unwrap().settings().hints;
        [
            hints.read_only,
            hints.destructive,
            hints.idempotent,
            hints.open_world,
        ]
    };
    assert_eq!(hints("get_status"), [true, false, false, false]);
    assert_eq!(hints("deploy_build"), [false, true, false, false]);
    assert_eq!(hints("search_docs"), [true, false, true, true]);
    assert_eq!(hints("count_words"), [true, false, true, false]);
    assert_eq!(hints("reverse_text"), [false; 4]);
    assert_eq!(
        registry
            .get("reverse_text")
            .unwrap()
            .definition()
            .title
            .as_deref(),
        Some("Reverse text")
    );
}

#[test]
fn tools_of_the_linked_crate_run() {
    let registry = Registry::from_inventory().unwrap();
    let run = open_run(&registry, &[]);
    assert_eq!(
        success(run.call_blocking(ToolCall::new(
            "call_1",
            "count_words",
            json!({"text": "one two  three"})
        ))),
        json!(3)
    );
    assert!(registry.get("reverse_text").unwrap().is_async());
    assert_eq!(
        success(pollster::block_on(run.call(ToolCall::new(
            "call_2",
            "reverse_text",
            json!({"text": "abc"})
        )))),
        json!("cba")
    );
}

#[test]
fn a_clone_shares_the_tools_and_crosses_threads() {
    let registry = Registry::from_inventory().unwrap();
    let clone = registry.clone();
    let names = std::thread::spawn(move || {
        // `deploy_build` needs both scopes, and a read-write run (it is destructive).
        let run = open_run(&clone, &["deploy:write", "build:read"]);
        let result = run.call_blocking(ToolCall::new(
            "call_2",
            "deploy_build",
            json!({"project": "web", "build": 7}),
        ));
        (clone.names().map(str::to_owned).collect::<Vec<_>>(), result)
    })
    .join()
    .unwrap();
    assert_eq!(names.0, ALL);
    assert_eq!(success(names.1), json!("web#7 deployed"));
    assert_eq!(registry.len(), 5);
}

#[test]
fn collecting_twice_gives_the_same_registry() {
    let first = Registry::from_inventory().unwrap();
    let second = Registry::from_inventory().unwrap();
    assert!(first.names().eq(second.names()));
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a.source(), b.source());
        assert_eq!(a.definition(), b.definition());
    }
}
