//! Compile-time diagnostics of `#[tool]`: each file in `ui/fail` makes one mistake, and its
//! `.stderr` is the exact error a user sees; each file in `ui/pass` is a supported form,
//! compiled and run.
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
    assert!(
        listing(PASS).iter().any(|name| name.ends_with(".rs")),
        "no pass cases in {PASS}"
    );

    let cases = trybuild::TestCases::new();
    cases.compile_fail(format!("{FAIL}/*.rs"));
    cases.pass(format!("{PASS}/*.rs"));
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
