//! The docs say what the code is: the public modules that `README.md`, `ARCHITECTURE.md` and
//! `docs/guide/README.md` list are those of `registry-core/src/lib.rs`, the README's count of
//! compile-fail cases is the number of `tests/tests/ui/fail/*.rs`, its fuzz seconds are those
//! of `.ci/run`, and it stays short while naming every guide page and every directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The README's cap, in lines: what is longer belongs in the guide or the CHANGELOG.
const README_MAX_LINES: usize = 300;

/// The longest line of `ARCHITECTURE.md`'s code map, in characters.
const ARCHITECTURE_MAX_LINE: usize = 120;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(relative: &str) -> String {
    let path = root().join(relative);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

/// The public modules of `registry-core`, read from `lib.rs`: every top-level `pub mod NAME`
/// (a file module or an inline one) and every `pub use PATH::NAME` whose path is a module of
/// the crate (a file or folder under `src/`). Hidden modules (`__private`) are not counted.
fn public_modules() -> BTreeSet<String> {
    let src = root().join("registry-core/src");
    let lib = read("registry-core/src/lib.rs");
    let mut modules = BTreeSet::new();
    let mut hidden = false;
    for line in lib.lines() {
        if line.starts_with("#[doc(hidden)]") {
            hidden = true;
            continue;
        }
        if line.starts_with("#[") || line.starts_with("//") {
            continue;
        }
        let was_hidden = std::mem::take(&mut hidden);
        if let Some(rest) = line.strip_prefix("pub mod ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !was_hidden && !name.starts_with("__") {
                modules.insert(name);
            }
        } else if let Some(rest) = line.strip_prefix("pub use ") {
            for path in use_paths(rest.trim_end_matches(';')) {
                let segments: Vec<&str> = path
                    .split("::")
                    .filter(|segment| !matches!(*segment, "crate" | "self"))
                    .collect();
                let relative = segments.join("/");
                let is_module = src.join(format!("{relative}.rs")).is_file()
                    || src.join(&relative).join("mod.rs").is_file()
                    || (!relative.is_empty() && src.join(&relative).is_dir());
                let name = segments.last().copied().unwrap_or_default();
                if is_module && !was_hidden && !name.starts_with("__") {
                    modules.insert(name.to_owned());
                }
            }
        }
    }
    assert!(
        modules.len() >= 10,
        "registry-core/src/lib.rs: found only {modules:?} as public modules; the reading of \
         `pub mod NAME` and `pub use PATH::NAME` in tests/tests/integration/docs.rs needs updating"
    );
    modules
}

/// The paths of one `use` tree: `a::b` or `a::{b, c::d}` (one level of braces).
fn use_paths(tree: &str) -> Vec<String> {
    match tree.split_once('{') {
        None => vec![tree.trim().to_owned()],
        Some((prefix, rest)) => rest
            .trim_end_matches('}')
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| format!("{prefix}{item}"))
            .collect(),
    }
}

/// The paragraph of `text` that contains "public modules": its backticked names that could be
/// a module's (lowercase letters and `_`), and the number written just before the words, if any.
fn listed_modules(file: &str, text: &str) -> (BTreeSet<String>, Option<usize>) {
    let paragraph = text
        .split("\n\n")
        .find(|paragraph| paragraph.contains("public modules"))
        .unwrap_or_else(|| {
            panic!(
                "{file}: no paragraph says \"public modules\"; list registry-core's public \
                 modules there in one paragraph, each name in backticks"
            )
        });
    let names = paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|name| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
        })
        .map(str::to_owned)
        .collect();
    let count = numbers_before(paragraph, " public modules")
        .into_iter()
        .next();
    (names, count)
}

/// Every number written just before `suffix` in `text` ("90 compile-fail cases").
fn numbers_before(text: &str, suffix: &str) -> Vec<usize> {
    text.match_indices(suffix)
        .filter_map(|(at, _)| {
            let before = &text[..at];
            let digits: String = before
                .chars()
                .rev()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.chars().rev().collect::<String>().parse().ok()
        })
        .collect()
}

#[test]
fn the_docs_list_the_public_modules_of_lib_rs() {
    let modules = public_modules();
    for file in ["README.md", "ARCHITECTURE.md", "docs/guide/README.md"] {
        let (listed, count) = listed_modules(file, &read(file));
        let missing: Vec<_> = modules.difference(&listed).collect();
        let extra: Vec<_> = listed.difference(&modules).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{file}: its paragraph on the public modules does not match registry-core/src/lib.rs: \
             missing {missing:?}, not a public module {extra:?}; list exactly {modules:?}"
        );
        if let Some(count) = count {
            assert_eq!(
                count,
                modules.len(),
                "{file}: says {count} public modules, registry-core/src/lib.rs has {}; write {}",
                modules.len(),
                modules.len()
            );
        }
    }
}

#[test]
fn the_readme_counts_the_compile_fail_cases() {
    let cases = std::fs::read_dir(root().join("tests/tests/ui/fail"))
        .unwrap()
        .filter(|entry| {
            let path = entry.as_ref().unwrap().path();
            path.extension().is_some_and(|ext| ext == "rs")
        })
        .count();
    let readme = read("README.md");
    let mut stated = numbers_before(&readme, " compile-fail cases");
    // The comparison table's row: "| compile-fail tests | 90 cases | ...".
    for line in readme.lines() {
        if let Some(rest) = line.strip_prefix("| compile-fail tests |") {
            stated.extend(numbers_before(
                rest.split('|').next().unwrap_or(""),
                " cases",
            ));
        }
    }
    assert!(
        !stated.is_empty(),
        "README.md: states no count of compile-fail cases; write \"{cases} compile-fail cases\" \
         (the number of tests/tests/ui/fail/*.rs)"
    );
    for count in stated {
        assert_eq!(
            count, cases,
            "README.md: says {count} compile-fail cases, tests/tests/ui/fail/ holds {cases}; \
             write {cases}"
        );
    }
}

#[test]
fn the_readme_states_the_fuzz_seconds_of_ci() {
    let ci = read(".ci/run");
    let seconds: Vec<usize> = ci
        .lines()
        .filter(|line| !line.trim_start().starts_with('#') && line.contains("fuzz/run smoke"))
        .filter_map(|line| line.split_whitespace().last()?.parse().ok())
        .collect();
    assert_eq!(
        seconds.len(),
        1,
        ".ci/run: expected one command `fuzz/run smoke SECONDS`, found {seconds:?}; update \
         tests/tests/integration/docs.rs if the fuzz phase changed shape"
    );
    let readme = read("README.md");
    let stated = numbers_before(&readme, "-second");
    assert!(
        !stated.is_empty(),
        "README.md: does not say how long CI fuzzes each target; write \"a {}-second run\"",
        seconds[0]
    );
    for count in stated {
        assert_eq!(
            count, seconds[0],
            "README.md: says a {count}-second fuzz run, .ci/run runs `fuzz/run smoke {}`; write \
             \"{}-second\"",
            seconds[0], seconds[0]
        );
    }
}

#[test]
fn the_readme_is_short() {
    let lines = read("README.md").lines().count();
    assert!(
        lines < README_MAX_LINES,
        "README.md: {lines} lines, the cap is under {README_MAX_LINES}; move history to \
         CHANGELOG.md and details to a page of docs/guide/"
    );
}

#[test]
fn the_readme_names_every_guide_page() {
    let readme = read("README.md");
    let section = readme
        .split("\n## The guide\n")
        .nth(1)
        .map(|rest| rest.split("\n## ").next().unwrap_or(rest))
        .unwrap_or_else(|| panic!("README.md: no \"## The guide\" section; add one that links every page of docs/guide/"));
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs/guide"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .collect();
    pages.sort();
    let missing: Vec<_> = pages
        .iter()
        .filter(|page| !section.contains(&format!("docs/guide/{page}")))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md: does not link the guide pages {missing:?}; add each to its \"The guide\" \
         section as docs/guide/PAGE"
    );
}

#[test]
fn the_readme_layout_has_a_row_for_every_directory() {
    let readme = read("README.md");
    let mut directories: Vec<String> = std::fs::read_dir(root())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.is_dir()
                && ["Cargo.toml", "README.md", "package.json"]
                    .iter()
                    .any(|file| path.join(file).is_file())
        })
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    directories.sort();
    assert!(
        directories.iter().any(|name| name == "registry-core"),
        "tests/tests/integration/docs.rs: found no crate directories at {}",
        root().display()
    );
    let missing: Vec<_> = directories
        .iter()
        .filter(|name| !readme.contains(&format!("\n| `{name}/`")))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md: its Layout table has no row for {missing:?}; add a row \"| `NAME/` | what \
         it holds |\" for each"
    );
}

#[test]
fn the_code_map_has_short_lines() {
    let architecture = read("ARCHITECTURE.md");
    let map = architecture
        .split("\n## Glossary")
        .next()
        .unwrap_or(&architecture);
    let long: Vec<_> = map
        .lines()
        .enumerate()
        .filter(|(_, line)| line.chars().count() > ARCHITECTURE_MAX_LINE)
        .map(|(index, _)| index + 1)
        .collect();
    assert!(
        long.is_empty(),
        "ARCHITECTURE.md: lines {long:?} are over {ARCHITECTURE_MAX_LINE} characters; write one \
         sentence per line and split long ones"
    );
}

#[test]
fn the_code_map_has_a_section_per_folder_and_crate() {
    let architecture = read("ARCHITECTURE.md");
    let headings: Vec<&str> = architecture
        .lines()
        .filter(|line| line.starts_with("### "))
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("registry-core/src")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let wanted = format!("`registry-core/src/{name}/`");
            if !headings.iter().any(|heading| heading.contains(&wanted)) {
                missing.push(wanted);
            }
        }
    }
    for entry in std::fs::read_dir(root()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("registry-") && path.join("Cargo.toml").is_file() {
            let wanted = format!("`{name}`");
            if !headings.iter().any(|heading| heading.contains(&wanted)) {
                missing.push(wanted);
            }
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md: its code map has no `###` section for {missing:?}; add one short \
         section for each folder of registry-core/src and each crate"
    );
}
