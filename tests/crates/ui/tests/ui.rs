//! Compile-time diagnostics of `#[tool]`: each file in `ui/fail` makes one mistake, and its
//! `.stderr` is the exact error a user sees.
//!
//! Each file in `ui/pass` is a supported form: a program of its own, compiled and run by
//! `cargo test` as a test target of `registry-tests` (`pass_<name>` in `tests/Cargo.toml`,
//! `harness = false`), not by trybuild: a pass case makes trybuild build every dependency with
//! code generation (`cargo build`), where the compile-fail cases need only `cargo check`. This
//! test checks that every pass case is listed there.
//!
//! The cases are in `tests/tests/ui` (`tests/ui` here links to it); this package holds only
//! what they use, since trybuild builds all of it (see its manifest). Regenerate the `.stderr`
//! files with `TRYBUILD=overwrite cargo test -p registry-ui-tests --test ui`, then review
//! every change like code.

use std::path::Path;

/// Relative to this crate's root (`tests/crates/ui/`, whose `tests/ui` links to
/// `tests/tests/ui`), as trybuild resolves globs.
const FAIL: &str = "tests/ui/fail";
const PASS: &str = "tests/ui/pass";

#[test]
fn ui() {
    // A glob that matches nothing passes silently, and a case without its expected output (or
    // an output left behind by a removed case) is easy to miss: check the listing first.
    let fail = listing(FAIL);
    let cases: Vec<&String> = fail.iter().filter(|name| name.ends_with(".rs")).collect();
    let outputs: Vec<&String> = fail
        .iter()
        .filter(|name| name.ends_with(".stderr"))
        .collect();
    assert!(!cases.is_empty(), "no compile-fail cases in {FAIL}");
    for case in &cases {
        let stderr = case.replace(".rs", ".stderr");
        assert!(
            fail.contains(&stderr),
            "{FAIL}/{case} has no {stderr}: run with TRYBUILD=overwrite and review it"
        );
    }
    for output in &outputs {
        let case = output.replace(".stderr", ".rs");
        assert!(
            fail.contains(&case),
            "{FAIL}/{output} belongs to no case: remove it"
        );
    }

    let cases = trybuild::TestCases::new();
    cases.compile_fail(format!("{FAIL}/*.rs"));
}

/// Every pass case is a test target of `registry-tests`, run by `cargo test` as a program
/// (`harness = false`: its `main` is the test), and every such target is a case.
#[test]
fn pass_cases_are_test_targets() {
    let cases: Vec<String> = listing(PASS)
        .into_iter()
        .filter(|name| name.ends_with(".rs"))
        .collect();
    assert!(!cases.is_empty(), "no pass cases in {PASS}");
    let manifest_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let manifest = std::fs::read_to_string(&manifest_path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", manifest_path.display()));
    let targets = pass_targets(&manifest);
    for case in &cases {
        let stem = case.trim_end_matches(".rs");
        let expected = (format!("pass_{stem}"), format!("tests/ui/pass/{case}"));
        assert!(
            targets.contains(&expected),
            "{PASS}/{case} is not a test target: add to tests/Cargo.toml\n\
             [[test]]\nname = \"{}\"\npath = \"{}\"\nharness = false",
            expected.0,
            expected.1
        );
    }
    assert_eq!(
        targets.len(),
        cases.len(),
        "tests/Cargo.toml lists a pass case that {PASS} does not have: {targets:?}"
    );
}

/// The `(name, path)` of each `[[test]]` of `manifest` whose path is a pass case, checking
/// that it says `harness = false` (with the harness, its `main` would never run).
fn pass_targets(manifest: &str) -> Vec<(String, String)> {
    let mut targets = Vec::new();
    for section in manifest.split("[[test]]").skip(1) {
        let section = section.split("\n[").next().unwrap_or(section);
        let value = |key: &str| {
            section.lines().find_map(|line| {
                let (name, value) = line.split_once('=')?;
                (name.trim() == key).then(|| value.trim().trim_matches('"').to_owned())
            })
        };
        let (Some(name), Some(path)) = (value("name"), value("path")) else {
            continue;
        };
        if !path.starts_with("tests/ui/pass/") {
            continue;
        }
        assert_eq!(
            value("harness").as_deref(),
            Some("false"),
            "the pass case {path} needs `harness = false` in tests/Cargo.toml"
        );
        targets.push((name, path));
    }
    targets
}

/// The names of the files in `dir`, sorted.
fn listing(dir: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        .map(|entry| {
            entry
                .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}
