//! Two linked crates (`dup-one`, `dup-two`) declare tools of the same names: collecting them
//! all fails, listing every clash with both declaration sites; selecting one crate works.

use registry_core::{
    BuildProblem, DynamicTool, Registry, RegistryError, ToolCall, definition::Source,
};
use registry_tests::{open_run, site_of_fn, site_of_new, success};
use serde_json::json;

registry_core::link!(dup_one, dup_two);

const DUP_ONE_FILE: &str = include_str!("../crates/dup-one/src/lib.rs");
const DUP_TWO_FILE: &str = include_str!("../crates/dup-two/src/lib.rs");

/// A declaration site, as expected: crate, module, file, line and column.
#[derive(Debug, PartialEq)]
struct Site {
    krate: &'static str,
    module: &'static str,
    file: &'static str,
    line: u32,
    column: u32,
}

impl Site {
    fn of(krate: &'static str, module: &'static str, name: &str) -> Site {
        let (file, text) = match krate {
            "dup_one" => ("tests/crates/dup-one/src/lib.rs", DUP_ONE_FILE),
            "dup_two" => ("tests/crates/dup-two/src/lib.rs", DUP_TWO_FILE),
            other => panic!("no crate {other}"),
        };
        let (line, column) = site_of_fn(text, name);
        Site {
            krate,
            module,
            file,
            line,
            column,
        }
    }

    fn actual(source: Source) -> Site {
        Site {
            krate: source.crate_name().expect("a declared tool"),
            module: source.module_path().expect("a declared tool"),
            file: source.file(),
            line: source.line(),
            column: source.column(),
        }
    }

    /// How an error shows it.
    fn text(&self) -> String {
        format!(
            "`#[tool]` in {} at {}:{}:{}",
            self.module, self.file, self.line, self.column
        )
    }
}

/// The duplicates among `problems`, as (name, first site, second site).
fn duplicates(problems: &[BuildProblem]) -> Vec<(String, Site, Site)> {
    problems
        .iter()
        .map(|problem| match problem {
            BuildProblem::DuplicateName {
                name,
                first,
                second,
            } => (name.clone(), Site::actual(*first), Site::actual(*second)),
            other => panic!("expected only duplicates, got {other:?}"),
        })
        .collect()
}

fn duplicate_line(name: &str, first: &Site, second: &Site) -> String {
    format!(
        "\n  - two tools are named \"{name}\": {} and {}; rename one with `#[tool(name = \"...\")]`, \
         select one with `RegistryBuilder::declared_in`, or replace it explicitly with \
         `RegistryBuilder::replace`",
        first.text(),
        second.text()
    )
}

#[test]
fn collecting_everything_fails_listing_every_clash_with_both_sites() {
    let error = Registry::from_inventory().unwrap_err();
    let RegistryError::Build(problems) = &error else {
        panic!("expected a build error, got {error:?}");
    };
    let lookup_one = Site::of("dup_one", "dup_one::lookup", "lookup");
    let lookup_two = Site::of("dup_two", "dup_two", "lookup");
    let search_one = Site::of("dup_one", "dup_one", "search");
    let search_two = Site::of("dup_two", "dup_two::engine", "search");
    assert_eq!(
        duplicates(problems),
        [
            ("lookup".to_owned(), lookup_one, lookup_two),
            ("search".to_owned(), search_one, search_two),
        ]
    );
    let expected = format!(
        "the tool registry could not be built (2 problems):{}{}",
        duplicate_line(
            "lookup",
            &Site::of("dup_one", "dup_one::lookup", "lookup"),
            &Site::of("dup_two", "dup_two", "lookup"),
        ),
        duplicate_line(
            "search",
            &Site::of("dup_one", "dup_one", "search"),
            &Site::of("dup_two", "dup_two::engine", "search"),
        ),
    );
    assert_eq!(error.to_string(), expected);
}

#[test]
fn the_error_is_the_same_every_time() {
    assert_eq!(
        Registry::from_inventory().unwrap_err(),
        Registry::builder().declared().build().unwrap_err()
    );
}

#[test]
fn selecting_one_crate_builds_with_its_tools_only() {
    for (krate, names, found) in [
        (
            "dup_one",
            ["lookup", "only_in_one", "search"],
            "dup-one found rust",
        ),
        (
            "dup_two",
            ["lookup", "only_in_two", "search"],
            "dup-two found rust",
        ),
    ] {
        let registry = Registry::builder().declared_in([krate]).build().unwrap();
        assert_eq!(registry.names().collect::<Vec<_>>(), names);
        for tool in &registry {
            assert_eq!(tool.source().crate_name(), Some(krate), "{}", tool.name());
        }
        let run = open_run(&registry, &[]);
        assert_eq!(
            success(run.call_blocking(ToolCall::new("call_1", "search", json!({"query": "rust"})))),
            json!(found)
        );
    }
}

#[test]
fn selecting_modules_of_both_crates_keeps_only_the_clashes_selected() {
    // `dup_two::engine` holds only dup-two's `search`: that one clash is left.
    let error = Registry::builder()
        .declared_in(["dup_one", "dup_two::engine"])
        .build()
        .unwrap_err();
    assert_eq!(
        duplicates(error.problems()),
        [(
            "search".to_owned(),
            Site::of("dup_one", "dup_one", "search"),
            Site::of("dup_two", "dup_two::engine", "search"),
        )]
    );
    assert_eq!(
        error.to_string(),
        format!(
            "the tool registry could not be built (1 problem):{}",
            duplicate_line(
                "search",
                &Site::of("dup_one", "dup_one", "search"),
                &Site::of("dup_two", "dup_two::engine", "search"),
            )
        )
    );

    // `lookup` from dup-one's module, `search` from dup-two's: no clash.
    let registry = Registry::builder()
        .declared_in(["dup_one::lookup", "dup_two::engine"])
        .build()
        .unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["lookup", "search"]);
    assert_eq!(
        registry.get("lookup").unwrap().source().module_path(),
        Some("dup_one::lookup")
    );
    assert_eq!(
        registry.get("search").unwrap().source().module_path(),
        Some("dup_two::engine")
    );
}

#[test]
fn a_name_used_three_times_gives_a_clash_per_extra_tool() {
    let error = Registry::builder()
        .declared_in(["dup_one", "dup_two"])
        .tool(
            DynamicTool::new("search", "Search a third index.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!([]))),
        )
        .build()
        .unwrap_err();
    let problems = error.problems();
    assert_eq!(problems.len(), 3, "{error}");
    assert_eq!(
        duplicates(&problems[..2]),
        [
            (
                "lookup".to_owned(),
                Site::of("dup_one", "dup_one::lookup", "lookup"),
                Site::of("dup_two", "dup_two", "lookup"),
            ),
            (
                "search".to_owned(),
                Site::of("dup_one", "dup_one", "search"),
                Site::of("dup_two", "dup_two::engine", "search"),
            ),
        ]
    );
    let BuildProblem::DuplicateName {
        name,
        first,
        second,
    } = &problems[2]
    else {
        panic!("expected a duplicate, got {:?}", problems[2]);
    };
    assert_eq!(name, "search");
    assert_eq!(
        Site::actual(*first),
        Site::of("dup_one", "dup_one", "search")
    );
    let (line, column) = site_of_new(include_str!("duplicates.rs"), "\"search\"");
    assert!(!second.is_declared());
    assert_eq!(
        (second.file(), second.line(), second.column()),
        (file!(), line, column)
    );
    assert!(
        error.to_string().ends_with(&format!(
            "\n  - two tools are named \"search\": {} and built at run time at {}:{line}:{}; \
             rename one with `#[tool(name = \"...\")]`, select one with \
             `RegistryBuilder::declared_in`, or replace it explicitly with \
             `RegistryBuilder::replace`",
            Site::of("dup_one", "dup_one", "search").text(),
            file!(),
            column,
        )),
        "{error}"
    );
}
