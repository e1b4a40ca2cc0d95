//! The fuzz target `cedar_context`'s committed inputs (fuzz/corpus/cedar_context, and any
//! regression under fuzz/regressions/cedar_context), replayed through its oracle
//! (fuzz/cedar/oracle.rs, compiled here by its path) on every test run: hostile arguments and
//! data domains never slip a call past a Cedar forbid or permit. The fuzzing itself is
//! `fuzz/run cedar_context SECONDS` (bench/fuzz/README.md).

#[path = "../../fuzz/cedar/oracle.rs"]
mod oracle;

use std::path::Path;

#[test]
fn the_fuzz_targets_committed_inputs_hold() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut replayed = 0;
    for dir in ["corpus/cedar_context", "regressions/cedar_context"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut paths: Vec<_> = entries.map(|entry| entry.unwrap().path()).collect();
        paths.sort();
        for path in paths {
            oracle::check(&std::fs::read(&path).unwrap());
            replayed += 1;
        }
    }
    // The seeds (fuzz/seeds.py) are there: a replay of nothing would pass.
    assert!(replayed >= 100, "only {replayed} inputs replayed");
}
