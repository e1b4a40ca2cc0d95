//! Golden files of `run.export(profile)` for the representative tools, one per profile
//! (`tests/golden/<profile>/tools.json`), reviewed by eye against `docs/providers.md`; the
//! compatibility checker over every golden file and every example tool; and the byte stability
//! of an export across processes. The MCP golden file holds each tool's digest in `_meta`
//! (the `mcp` line of `Registry::lock`; see `lockfile.rs`).
//!
//! `UPDATE_GOLDEN=1 cargo test -p registry-tests --test golden` rewrites the golden files.

mod representative;

use std::path::PathBuf;
use std::process::Command;

use registry_core::compat::check_tools;
use registry_core::{Profile, Registry, Subject};
use registry_tests::assert_golden_files;
use serde_json::Value;

registry_core::link!(registry_examples);

/// The environment variable that makes `print_export` print (in a child process).
const PRINT: &str = "REGISTRY_GOLDEN_PRINT";

/// The registry of the representative tools.
fn representative() -> Registry {
    Registry::builder()
        .declared_in([concat!(module_path!(), "::representative")])
        .build()
        .expect("the representative tools build a registry")
}

/// The subject whose run sees every representative tool `profile` can take: not the map and
/// any-value tool in OpenAI strict mode, not the recursive one for Anthropic and Gemini.
fn subject(profile: Profile) -> Subject {
    let mut scopes = Vec::new();
    if !profile.is_strict() {
        scopes.push(representative::OPEN_SCOPE);
    }
    if !matches!(profile, Profile::Anthropic | Profile::Gemini) {
        scopes.push(representative::TREE_SCOPE);
    }
    Subject::new("tenant-a").with_scopes(scopes)
}

/// The export of the representative tools for `profile`, pretty-printed, with a final newline.
fn export_text(profile: Profile) -> String {
    let registry = representative();
    let run = registry.open_run("golden", &subject(profile));
    let export = run
        .export(profile)
        .unwrap_or_else(|error| panic!("{profile}: {error}"));
    // The text form, made from each tool's kept text, is the same bytes; twice, the second
    // from what the tools kept.
    for _ in 0..2 {
        assert_eq!(
            run.export_text(profile).unwrap(),
            export.to_string(),
            "{profile}"
        );
    }
    let mut text = serde_json::to_string_pretty(&export).expect("JSON");
    text.push('\n');
    text
}

fn golden_path(profile: Profile) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("golden")
        .join(profile.name())
        .join("tools.json")
}

#[test]
fn exports_match_the_golden_files() {
    assert_golden_files(
        Profile::ALL
            .iter()
            .map(|&profile| (golden_path(profile), export_text(profile))),
    );
}

#[test]
fn every_golden_file_passes_the_checker() {
    for &profile in Profile::ALL {
        let path = golden_path(profile);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let list: Value = serde_json::from_str(&text).expect("a golden file is JSON");
        let problems = check_tools(profile, &list);
        assert!(problems.is_empty(), "{}: {problems:#?}", path.display());
        let expected = if profile == Profile::Gemini {
            list[0]["functionDeclarations"].as_array().map(Vec::len)
        } else {
            list.as_array().map(Vec::len)
        };
        let tools = representative().len();
        let left_out = usize::from(profile.is_strict())
            + usize::from(matches!(profile, Profile::Anthropic | Profile::Gemini));
        assert_eq!(
            expected,
            Some(tools - left_out),
            "{profile}: tools in the golden file"
        );
    }
}

#[test]
fn the_golden_files_leave_out_only_what_a_profile_cannot_take() {
    let registry = representative();
    for &profile in Profile::ALL {
        let everything = Subject::new("tenant-a")
            .with_scopes([representative::OPEN_SCOPE, representative::TREE_SCOPE]);
        let run = registry.open_run("all", &everything);
        // The text form fails on the same tools.
        assert_eq!(
            run.export_text(profile)
                .err()
                .map(|error| error.to_string()),
            run.export(profile).err().map(|error| error.to_string()),
            "{profile}"
        );
        let error = run.export(profile).err();
        let mut tools: Vec<String> = error
            .map(|error| {
                error
                    .into_incompatibilities()
                    .into_iter()
                    .map(|problem| problem.tool)
                    .collect()
            })
            .unwrap_or_default();
        tools.dedup();
        let expected: &[&str] = match profile {
            Profile::Anthropic | Profile::Gemini => &["grow_tree"],
            p if p.is_strict() => &["annotate"],
            _ => &[],
        };
        assert_eq!(tools, expected, "{profile}");
    }
}

/// The example programs' tools (the crates `registry-examples` and `build-tools`).
fn examples() -> Registry {
    Registry::builder()
        .declared_in(["registry_examples", "build_tools"])
        .build()
        .expect("the example tools build a registry")
}

#[test]
fn every_example_tool_is_compatible_with_every_profile() {
    let registry = examples();
    assert!(
        registry.len() >= 7,
        "the example tools are linked: {registry:?}"
    );
    registry.assert_compatible(Profile::ALL);
    let everyone =
        Subject::new("tenant-a").with_scopes(["build:read", "build:write", "deploy:write"]);
    for &profile in Profile::ALL {
        let run = registry.open_run("examples", &everyone);
        let export = run
            .export(profile)
            .unwrap_or_else(|error| panic!("{profile}: {error}"));
        let problems = check_tools(profile, &export);
        assert!(problems.is_empty(), "{profile}: {problems:#?}");
    }
}

/// Prints every profile's export between markers, when run as the child process of
/// `exports_are_byte_identical_across_processes`; does nothing otherwise.
#[test]
fn print_export() {
    if std::env::var_os(PRINT).is_none() {
        return;
    }
    for &profile in Profile::ALL {
        let registry = representative();
        let run = registry.open_run("golden", &subject(profile));
        let export = run.export(profile).expect("exports");
        let bytes = serde_json::to_string(&export).expect("JSON");
        // A line of its own: the test harness may have written on the current one.
        println!("\n<<<{profile}\n{bytes}\n{profile}>>>");
    }
}

/// Runs `print_export` in a new process of this test binary and returns what it printed.
fn export_in_child() -> String {
    let exe = std::env::current_exe().expect("the test binary");
    let output = Command::new(exe)
        .args(["print_export", "--exact", "--nocapture", "--test-threads=1"])
        .env(PRINT, "1")
        .output()
        .expect("the test binary runs again");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    let mut exports = String::new();
    let mut inside = false;
    for line in stdout.lines() {
        if line.starts_with("<<<") {
            inside = true;
        }
        if !inside {
            continue;
        }
        exports.push_str(line);
        exports.push('\n');
        if line.ends_with(">>>") {
            inside = false;
        }
    }
    exports
}

#[test]
fn exports_are_byte_identical_across_processes() {
    let first = export_in_child();
    let second = export_in_child();
    assert_eq!(
        first.matches("<<<").count(),
        Profile::ALL.len(),
        "every profile printed: {first}"
    );
    assert_eq!(first, second, "two processes exported different bytes");
    for &profile in Profile::ALL {
        let registry = representative();
        let run = registry.open_run("golden", &subject(profile));
        let here = serde_json::to_string(&run.export(profile).unwrap()).unwrap();
        assert!(
            first.contains(&format!("<<<{profile}\n{here}\n{profile}>>>")),
            "{profile}: this process exported other bytes than the child processes"
        );
    }
}
