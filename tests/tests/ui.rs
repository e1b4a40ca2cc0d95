//! Compile-time diagnostics of `#[tool]`: each file in `ui/fail` makes one mistake, and its
//! `.stderr` is the exact error a user sees; each file in `ui/pass` is a supported form,
//! compiled and run.
//!
//! Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p registry-tests --test ui`, then review every change like
//! code.

use std::path::Path;

/// Relative to this crate's root (`tests/`), as trybuild resolves globs.
const FAIL: &str = "tests/ui/fail";
const PASS: &str = "tests/ui/pass";

#[test]
fn ui() {
    // A glob that matches nothing passes silently: make sure the directories the globs name
    // hold cases.
    assert!(cases_in(FAIL) >= 24, "compile-fail cases missing in {FAIL}");
    assert!(cases_in(PASS) >= 1, "pass cases missing in {PASS}");

    let cases = trybuild::TestCases::new();
    cases.compile_fail(format!("{FAIL}/*.rs"));
    cases.pass(format!("{PASS}/*.rs"));
}

fn cases_in(dir: &str) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|entry| entry.path().extension().is_some_and(|ext| ext == "rs"))
        })
        .count()
}
