//! The linking trap: `unlinked-tools` and `extra-tools` are dependencies of this test (see
//! `tests/Cargo.toml`), compiled with it, but never named here, so the compiler leaves them out
//! of the program and their tools are not collected. `require` turns that into an error naming
//! the missing tools and pointing at `link!`.
//!
//! (`collect.rs` links `extra-tools` with `link!` and finds its tools.)

use registry_core::{BuildProblem, Registry, RegistryError, tool};

/// Answer pong.
#[tool(public)]
fn ping() -> &'static str {
    "pong"
}

#[test]
fn the_crates_are_dependencies_of_this_test() {
    // Without this, the tests below would prove nothing.
    let manifest = include_str!("../Cargo.toml");
    let dev_dependencies = manifest
        .split("[dev-dependencies]")
        .nth(1)
        .expect("a [dev-dependencies] table");
    for line in [
        r#"unlinked-tools = { path = "crates/unlinked-tools" }"#,
        r#"extra-tools = { path = "crates/extra-tools" }"#,
    ] {
        assert!(
            dev_dependencies.lines().any(|entry| entry.trim() == line),
            "{line}"
        );
    }
}

#[test]
fn tools_of_a_crate_that_is_never_named_are_missing() {
    let registry = Registry::from_inventory().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["ping"]);
    for name in [
        "send_invoice",
        "cancel_invoice",
        "count_words",
        "reverse_text",
    ] {
        assert!(!registry.contains(name), "{name} should not be linked");
    }
}

#[test]
fn selecting_the_unlinked_crate_is_an_error_that_says_to_link_it() {
    // A crate that is not linked has no declaration to select: the builder says so rather
    // than building an empty registry.
    let error = Registry::builder()
        .declared_in(["unlinked_tools"])
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the tool registry could not be built (1 problem):\n  - no `#[tool]` linked into this \
         program is declared under `unlinked_tools`; check the module path, and if it is another \
         crate, make sure it is linked: `registry_core::link!(that_crate);`"
    );
}

const MISSING: &str = "is not registered; if it is declared in another crate, make sure that \
                       crate is linked: name it in your code, e.g. `registry_core::link!(that_crate);`";

#[test]
fn requiring_the_missing_tools_fails_naming_them_and_link() {
    let error = Registry::builder()
        .declared()
        .require(["send_invoice", "ping", "count_words"])
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        RegistryError::Build(vec![
            BuildProblem::MissingTool {
                name: "send_invoice".to_owned()
            },
            BuildProblem::MissingTool {
                name: "count_words".to_owned()
            },
        ])
    );
    assert_eq!(
        error.to_string(),
        format!(
            "the tool registry could not be built (2 problems):\
             \n  - the required tool \"send_invoice\" {MISSING}\
             \n  - the required tool \"count_words\" {MISSING}"
        )
    );
    assert!(error.to_string().contains("link!"));
}

#[test]
fn requiring_present_tools_builds() {
    let registry = Registry::builder()
        .declared()
        .require(["ping"])
        .build()
        .unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["ping"]);
}
