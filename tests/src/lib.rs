//! Integration tests of the workspace; see `tests/`.
//!
//! This library holds what the tests (and the `ui/pass` cases) share to call tools the only
//! way they can be called: through a run.

use registry_core::{ErrorKind, Observation, Registry, Run, Subject, call::ArgumentProblem};
use serde_json::Value;

/// The run id of the runs [`open_run`] opens.
pub const RUN_ID: &str = "run-1";

/// The tenant of the runs [`open_run`] opens.
pub const TENANT: &str = "tenant-a";

/// Opens the run [`RUN_ID`] of `registry` for a read-write subject of tenant [`TENANT`]
/// holding `scopes`: those the tools a test calls require.
pub fn open_run(registry: &Registry, scopes: &[&str]) -> Run {
    let subject = Subject::new(TENANT).with_scopes(scopes.iter().copied());
    registry.open_run(RUN_ID, &subject)
}

/// The result of a call that succeeded; panics, showing the observation, if it failed.
#[track_caller]
pub fn success(observation: Observation) -> Value {
    assert!(
        !observation.is_error(),
        "expected a result, got {observation:?}"
    );
    observation.into_json()
}

/// Every problem of a call refused for invalid arguments; panics, showing the observation,
/// if it was not.
#[track_caller]
pub fn problems(observation: &Observation) -> &[ArgumentProblem] {
    assert_eq!(
        observation.error_kind(),
        Some(ErrorKind::InvalidArguments),
        "expected invalid arguments, got {observation:?}"
    );
    observation.problems()
}

/// What a tool said when it ran and failed: the error text after
/// `the tool "<name>" failed: `. Panics, showing the observation, if the call did not end in
/// [`ErrorKind::ExecutionFailed`] with such a text.
#[track_caller]
pub fn failure(observation: &Observation) -> &str {
    assert_eq!(
        observation.error_kind(),
        Some(ErrorKind::ExecutionFailed),
        "expected a failure of the tool, got {observation:?}"
    );
    let prefix = format!("the tool \"{}\" failed: ", observation.tool_name());
    observation
        .error_text()
        .and_then(|text| text.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("expected a text starting {prefix:?}, got {observation:?}"))
}

/// Where `DynamicTool::new(<first_arg>, ...)` is called in `source` (a test file's text, from
/// `include_str!`): line and column, from 1. Panics unless there is exactly one such call.
#[track_caller]
pub fn site_of_new(source: &str, first_arg: &str) -> (u32, u32) {
    let call = "DynamicTool::new(";
    let sites: Vec<(u32, u32)> = source
        .match_indices(call)
        .filter(|(at, _)| {
            source[at + call.len()..]
                .trim_start()
                .starts_with(first_arg)
        })
        .map(|(at, _)| {
            let before = &source[..at];
            let line = before.matches('\n').count() + 1;
            let column = at - before.rfind('\n').map_or(0, |newline| newline + 1) + 1;
            (number(line), number(column))
        })
        .collect();
    assert_eq!(sites.len(), 1, "one `new({first_arg}` expected");
    sites[0]
}

/// Where the function `name` is declared in `source`: the line and the column of its name,
/// both from 1. Panics unless it is declared exactly once.
#[track_caller]
pub fn site_of_fn(source: &str, name: &str) -> (u32, u32) {
    let pattern = format!("fn {name}(");
    let sites: Vec<(u32, u32)> = source
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = line.trim_start();
            ["fn ", "pub fn ", "async fn ", "pub async fn "]
                .iter()
                .any(|start| line.starts_with(start))
        })
        .filter_map(|(index, line)| {
            let at = line.find(&pattern)? + "fn ".len();
            Some((number(index + 1), number(at + 1)))
        })
        .collect();
    assert_eq!(sites.len(), 1, "`fn {name}(` should be declared once");
    sites[0]
}

/// A line or column number as `Source` gives it.
fn number(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Sets its flag when dropped: put one in a tool's future to see that the future was dropped.
#[derive(Debug)]
pub struct DropFlag(pub std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Waits, as a synchronous tool would, until the call is cancelled or `limit` passes; true if
/// it was cancelled.
pub fn wait_until_cancelled(ctx: &registry_core::ToolContext, limit: std::time::Duration) -> bool {
    let begun = std::time::Instant::now();
    while !ctx.is_cancelled() && begun.elapsed() < limit {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    ctx.is_cancelled()
}

/// Compares each `(path, text)` with the golden file at `path`, or, with the environment
/// variable `UPDATE_GOLDEN=1`, writes it there; panics listing every stale file, with what
/// it should now hold.
#[track_caller]
pub fn assert_golden_files(files: impl IntoIterator<Item = (std::path::PathBuf, String)>) {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (path, text) in files {
        if update {
            std::fs::create_dir_all(path.parent().expect("a golden file is in a folder"))
                .expect("the golden folder can be made");
            std::fs::write(&path, &text).expect("the golden file can be written");
            continue;
        }
        let golden = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!("{}: {error}; run with UPDATE_GOLDEN=1", path.display())
        });
        if golden != text {
            stale.push(format!("{} differs; now:\n{text}", path.display()));
        }
    }
    assert!(
        stale.is_empty(),
        "{}\n(review the change, then run with UPDATE_GOLDEN=1)",
        stale.join("\n")
    );
}

/// Each tool object of a profile's tool list, as compact JSON (for Gemini, the function
/// declarations inside its one `Tool`): what a prompt cache sees, in order.
pub fn tool_objects(profile: registry_core::Profile, export: &Value) -> Vec<String> {
    let list = match profile {
        registry_core::Profile::Gemini => export
            .pointer("/0/functionDeclarations")
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
        _ => export.clone(),
    };
    list.as_array()
        .expect("a list of tools")
        .iter()
        .map(Value::to_string)
        .collect()
}

/// What a test reads of the audit trail: the events a registry's sink received.
pub mod audit {
    use std::sync::{Arc, Mutex};

    use registry_core::audit::{AuditEvent, CallEvent};

    /// The events an audit sink received, in order: a test's sink pushes each event here.
    pub type Events = Arc<Mutex<Vec<AuditEvent>>>;

    /// The call events among `events`, in order.
    pub fn calls(events: &Events) -> Vec<CallEvent> {
        events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                AuditEvent::Call(call) => Some(call.clone()),
                _ => None,
            })
            .collect()
    }
}

/// The workspace README's examples, compiled and run as doc tests
/// (`cargo test -p registry-tests --doc`). They live here, in a package that is never
/// published, because a published crate's archive holds only its own directory
/// (registry-core's own README is tested by registry-core).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct Readme;

/// The guide's examples, one page each, compiled and run as doc tests.
#[cfg(doctest)]
pub mod guide {
    /// `docs/guide/README.md`.
    #[doc = include_str!("../../docs/guide/README.md")]
    pub struct Index;

    /// `docs/guide/declare.md`.
    #[doc = include_str!("../../docs/guide/declare.md")]
    pub struct Declare;

    /// `docs/guide/register.md`.
    #[doc = include_str!("../../docs/guide/register.md")]
    pub struct Register;

    /// `docs/guide/discover.md`.
    #[doc = include_str!("../../docs/guide/discover.md")]
    pub struct Discover;

    /// `docs/guide/present.md`.
    #[doc = include_str!("../../docs/guide/present.md")]
    pub struct Present;

    /// `docs/guide/search.md`.
    #[doc = include_str!("../../docs/guide/search.md")]
    pub struct Search;

    /// `docs/guide/call.md`.
    #[doc = include_str!("../../docs/guide/call.md")]
    pub struct Call;

    /// `docs/guide/gate.md`.
    #[doc = include_str!("../../docs/guide/gate.md")]
    pub struct Gate;

    /// `docs/guide/tasks.md`.
    #[doc = include_str!("../../docs/guide/tasks.md")]
    pub struct Tasks;

    /// `docs/guide/serving.md`.
    #[doc = include_str!("../../docs/guide/serving.md")]
    pub struct Serving;

    /// `docs/guide/federation.md`.
    #[doc = include_str!("../../docs/guide/federation.md")]
    pub struct Federation;

    /// `docs/guide/scaling.md`.
    #[doc = include_str!("../../docs/guide/scaling.md")]
    pub struct Scaling;

    /// `docs/guide/security.md`.
    #[doc = include_str!("../../docs/guide/security.md")]
    pub struct Security;

    /// `docs/guide/performance.md`.
    #[doc = include_str!("../../docs/guide/performance.md")]
    pub struct Performance;

    /// `docs/guide/agent.md`.
    #[doc = include_str!("../../docs/guide/agent.md")]
    pub struct Agent;
}

/// A deterministic embedder for the tests: a text's vector counts its words, each word in
/// the dimension of its concept (the words of one group of [`WordEmbedder::CONCEPTS`] share
/// one; any other word hashes to one of 64 more), so "wipe" is near "delete" although no
/// letter of them is shared, as a real model would put them, and so is "zorp" (a word no
/// lexical table has: a product's own verb). Counts its calls.
#[derive(Debug, Default)]
pub struct WordEmbedder {
    /// How many times `embed` was called.
    pub calls: std::sync::atomic::AtomicUsize,
    /// How many texts `embed` was given, in all.
    pub texts: std::sync::atomic::AtomicUsize,
}

impl WordEmbedder {
    /// Words that mean one thing, one dimension a group.
    pub const CONCEPTS: &[&[&str]] = &[
        &["delete", "remove", "wipe", "erase", "purge", "zorp"],
        &["invoice", "bill", "billing", "charge"],
        &["deploy", "ship", "release", "rollout"],
        &["message", "chat", "ping", "dm"],
        &["weather", "forecast", "rain", "umbrella"],
    ];

    /// The vector of `text`.
    pub fn vector(text: &str) -> Vec<f32> {
        let mut vector = vec![0.0; Self::CONCEPTS.len() + 64];
        for word in text
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_ascii_lowercase)
        {
            let at = Self::CONCEPTS
                .iter()
                .position(|group| group.contains(&word.as_str()))
                .unwrap_or_else(|| {
                    let hash = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                    });
                    Self::CONCEPTS.len() + (hash % 64) as usize
                });
            vector[at] += 1.0;
        }
        vector
    }
}

impl registry_core::search::Embedder for WordEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, registry_core::search::EmbedError> {
        use std::sync::atomic::Ordering;
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.texts.fetch_add(texts.len(), Ordering::Relaxed);
        Ok(texts.iter().map(|text| Self::vector(text)).collect())
    }
}

/// An embedder shared with the test that gave it to a registry, to count its calls.
#[derive(Debug, Clone, Default)]
pub struct SharedEmbedder(pub std::sync::Arc<WordEmbedder>);

impl registry_core::search::Embedder for SharedEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, registry_core::search::EmbedError> {
        self.0.embed(texts)
    }
}
