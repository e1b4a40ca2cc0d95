//! One word per concept: a word retired for another (the glossary at the end of
//! `ARCHITECTURE.md`) does not come back in the sources of the workspace's crates (every
//! `src/` folder) or in `docs/`.
//!
//! The deprecated aliases that keep an old name compiling are the one place an old word
//! stays: a line carrying `#[deprecated(...)]` or `#[allow(deprecated)]`, and the few lines
//! under it (the item the attribute marks), are not read.

use std::path::{Path, PathBuf};

/// A word retired for another.
struct Retired {
    /// The text searched for, matched as a whole word where it starts or ends with one.
    word: &'static str,
    /// What replaced it.
    use_instead: &'static str,
    /// When the word alone has other meanings: texts of which one must be on the same line.
    only_with: &'static [&'static str],
}

const fn retired(word: &'static str, use_instead: &'static str) -> Retired {
    Retired {
        word,
        use_instead,
        only_with: &[],
    }
}

const RETIRED: &[Retired] = &[
    // A tool's version.
    retired("definition_fingerprint", "`ApprovalRequest::tool_version`"),
    retired(
        "definition fingerprint",
        "\"tool version\" (`Tool::version_fingerprint`)",
    ),
    // A tool's settings are not a policy.
    retired("ToolPolicy", "`registry_mcp::upstream::ToolSettings`"),
    retired(
        "PolicyOverride",
        "`registry_mcp::upstream::SettingsOverride`",
    ),
    retired("policy_of", "`UpstreamConfig::settings_of`"),
    retired("policy: ReplaceOptions", "`options: ReplaceOptions`"),
    retired("tool's policy", "\"tool's settings\""),
    retired("file's policy", "\"file's settings\""),
    Retired {
        word: "\"policy\"",
        use_instead: "`\"settings\"` (a tool's `ToolSettings`)",
        only_with: &[".field("],
    },
    // One way per job.
    retired(
        "content_handler",
        "`DynamicTool::handler`, which takes content too",
    ),
    retired(
        "async_content_handler",
        "`DynamicTool::async_handler`, which takes content too",
    ),
    retired("needs_approval(true)", "`needs_approval()`"),
    retired(
        "needs_approval(false)",
        "nothing: no approval is the default",
    ),
    retired("record_content(true)", "`Agent::record_content()`"),
    retired(
        "record_content(false)",
        "nothing: not recording is the default",
    ),
    retired(
        "Subject::read_only",
        "`Subject::with_access(Access::ReadOnly)`",
    ),
    Retired {
        word: ".read_only()",
        use_instead: "`with_access(Access::ReadOnly)` for a subject (`.read_only()` is a tool's hint)",
        only_with: &["Subject::new", "subject"],
    },
    // registry-agent: how a loop ended, as a task's `TaskEnd`; its bounds named as the core's.
    retired("AgentOutcome", "`registry_agent::AgentEnd`"),
    Retired {
        word: "Limits",
        use_instead: "`registry_agent::AgentLimits`",
        only_with: &["registry_agent"],
    },
    // Parse errors say `Parse<Thing>Error`, as `ParseProfileError` and std's `ParseIntError`.
    retired("TraceParseError", "`call::ParseTraceError`"),
];

/// How many lines under a `#[deprecated]` or `#[allow(deprecated)]` attribute belong to the
/// item it marks (further attributes, then the item's first line).
const ALIAS_LINES: usize = 3;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `.rs` and `.md` files under `dir` that are sources of a crate (under a `src` folder)
/// or guide pages (under `docs/`), as paths relative to the root.
fn files(dir: &Path, relative: &Path, in_scope: bool, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .expect("an entry has a name")
            .to_string_lossy()
            .into_owned();
        let relative = relative.join(&name);
        if path.is_dir() {
            // Build output, and the repository's own folders, are nobody's source.
            if name == "target" || name.starts_with('.') {
                continue;
            }
            let in_scope = in_scope || name == "src" || relative == Path::new("docs");
            files(&path, &relative, in_scope, out);
        } else if in_scope && (name.ends_with(".rs") || name.ends_with(".md")) {
            out.push(relative);
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `word` is in `line` as a whole word (where it starts or ends with a word character).
fn has_word(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        let starts_a_word = word.starts_with(is_ident);
        let ends_a_word = word.ends_with(is_ident);
        let joined_before = starts_a_word && before.is_some_and(is_ident);
        let joined_after = ends_a_word && after.is_some_and(is_ident);
        !joined_before && !joined_after
    })
}

/// Each use of a retired word in `text`, as (line number, the word, what replaced it).
fn retired_words(text: &str) -> Vec<(usize, &'static str, &'static str)> {
    let mut found = Vec::new();
    let mut since_alias = usize::MAX;
    for (index, line) in text.lines().enumerate() {
        if line.contains("#[deprecated") || line.contains("#[allow(deprecated)]") {
            since_alias = 0;
            continue;
        }
        since_alias = since_alias.saturating_add(1);
        if since_alias <= ALIAS_LINES {
            continue;
        }
        for retired in RETIRED {
            let with = retired.only_with.is_empty()
                || retired.only_with.iter().any(|with| line.contains(with));
            if with && has_word(line, retired.word) {
                found.push((index + 1, retired.word, retired.use_instead));
            }
        }
    }
    found
}

#[test]
fn no_retired_word_is_back_in_the_sources_or_the_docs() {
    let root = root();
    let mut paths = Vec::new();
    files(&root, Path::new(""), false, &mut paths);
    assert!(
        paths
            .iter()
            .any(|path| path.starts_with("registry-core/src"))
            && paths.iter().any(|path| path.starts_with("docs/guide")),
        "the walk missed the sources or the docs: {paths:?}"
    );
    let mut problems = Vec::new();
    for path in &paths {
        let text = std::fs::read_to_string(root.join(path))
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
        for (line, word, use_instead) in retired_words(&text) {
            problems.push(format!(
                "{}:{line}: `{word}` is a retired word; use {use_instead}",
                path.display()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "retired words are back (the glossary at the end of ARCHITECTURE.md says which word \
         replaced each):\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_retired_word_is_found_and_an_alias_is_not() {
    let text = "\
/// Restricts the run.
#[deprecated(note = \"use `with_access(Access::ReadOnly)`\")]
#[must_use]
pub fn needs_approval(true) -> Self {
}
let subject = Subject::new(\"acme\").read_only();
let tool = DynamicTool::new(\"x\", \"y\").read_only();
let request_version = request.definition_fingerprint();
let unrelated = my_definition_fingerprint_cache;
";
    let found: Vec<(usize, &str)> = retired_words(text)
        .into_iter()
        .map(|(line, word, _)| (line, word))
        .collect();
    assert_eq!(
        found,
        [(6, ".read_only()"), (8, "definition_fingerprint")],
        "the alias's lines, a tool's `.read_only()` and a longer identifier are not retired words"
    );
}
