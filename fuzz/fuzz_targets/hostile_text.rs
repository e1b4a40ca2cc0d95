//! Tool names, call ids and descriptions holding anything: NUL, line breaks, bidi controls,
//! soft hyphens, variation selectors, tag characters. None may come out raw where people or
//! models read it, and none may get past the description lint.
//!
//! Input (bytes; each part read as UTF-8 with invalid sequences replaced; `0xFF` never occurs
//! in UTF-8, so that any text fits in a part):
//!
//! ```text
//! TOOL_NAME 0xFF CALL_ID 0xFF DESCRIPTION
//! ```
//!
//! - `registry_lint::check(DESCRIPTION)`: every finding on character boundaries, its excerpt
//!   and message escaped; a description holding a character of [`never_raw`] has an invisible
//!   finding.
//! - A `DynamicTool` named TOOL_NAME described by DESCRIPTION (also as a parameter's
//!   `description`, an `enum` value and a `default`): it builds only when the name is valid
//!   and every text passes the lint; a problem's message shows no such character raw.
//! - A call with CALL_ID to TOOL_NAME in the fuzz registry: the id and name come back as sent,
//!   the error text shows them escaped, each profile renders JSON with no raw control
//!   character, and every `tracing` audit event is one line with nothing of [`never_raw`] in it.

#![no_main]

#[path = "common/tools.rs"]
mod tools;

use std::fmt::Write;
use std::sync::Once;

use libfuzzer_sys::fuzz_target;
use registry_core::{BuildProblem, DynamicTool, Profile, Registry, RegistryError, ToolCall, audit::AUDIT_TARGET};
use serde_json::json;
use tools::fixture;

/// Characters that must never be shown as they are: control characters but the tab and the
/// line feed, and a selection of invisible ones (soft hyphen, zero-width, bidi, invisible
/// operators, the Mongolian vowel separator, the combining grapheme joiner, tags and
/// variation selectors 17 to 256). Written here independently of `registry-lint`'s tables.
fn never_raw(c: char) -> bool {
    matches!(
        c,
        '\0'..='\u{8}'
            | '\u{B}'..='\u{1F}'
            | '\u{7F}'..='\u{9F}'
            | '\u{AD}'
            | '\u{34F}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// Whether `text` shows something of [`never_raw`], or breaks a line.
fn raw_in(text: &str) -> bool {
    text.chars().any(|c| c == '\n' || never_raw(c))
}

/// A subscriber that renders each audit event as a log line would be (`key=value` with the
/// value's `Debug`, as `tracing-subscriber`'s formatter writes fields) and checks it.
struct OneLine;

impl tracing::Subscriber for OneLine {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        if event.metadata().target() != AUDIT_TARGET {
            return;
        }
        let mut line = String::new();
        event.record(
            &mut |field: &tracing::field::Field, value: &dyn std::fmt::Debug| {
                let _ = write!(line, " {}={value:?}", field.name());
            },
        );
        assert!(
            !raw_in(&line),
            "an audit event is not one line with every character escaped: {line:?}"
        );
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

fn lint(description: &str) {
    let findings = registry_lint::check(description);
    for finding in &findings {
        assert!(finding.range.start <= finding.range.end);
        assert!(description.is_char_boundary(finding.range.start));
        assert!(description.is_char_boundary(finding.range.end));
        assert!(!raw_in(&finding.excerpt), "{finding:?}");
        assert!(!raw_in(&finding.message), "{finding:?}");
    }
    assert!(!raw_in(&registry_lint::escape(description)));
    if description.chars().any(never_raw) {
        assert!(
            findings
                .iter()
                .any(|finding| finding.rule.family() == registry_lint::Family::Invisible),
            "{description:?}: {findings:?}"
        );
    }
}

fn build(name: &str, description: &str) {
    let tool = DynamicTool::new(name, description)
        .scopes(["fuzz:read"])
        .parameters(json!({
            "type": "object",
            "properties": {
                "q": {
                    "type": "string",
                    "description": description,
                    "enum": [name, "plain"],
                    "default": "plain"
                }
            },
            "additionalProperties": false
        }))
        .handler(|_, _| Ok::<_, String>(json!("ok")));
    match Registry::builder().tool(tool).build() {
        Ok(_registry) => {
            assert!(registry_core::definition::check_tool_name(name).is_ok(), "{name:?}");
            assert!(!description.chars().any(never_raw), "{description:?}");
            assert!(!name.chars().any(never_raw), "{name:?}");
            assert!(registry_lint::check(description).is_empty());
        }
        Err(RegistryError::Build(problems)) => {
            for problem in &problems {
                if matches!(
                    problem,
                    BuildProblem::UnsafeDescription { .. } | BuildProblem::InvalidName { .. }
                ) {
                    let message = problem.to_string();
                    assert!(!raw_in(&message), "{message:?}");
                }
            }
        }
        Err(other) => panic!("a build fails only with build problems: {other}"),
    }
}

fn call(n: u64, name: &str, id: &str) {
    let run = fixture()
        .registry
        .open_run(format!("fuzz-{n}"), &tools::subject(n));
    let observation = run.call_blocking(ToolCall::new(id, name, json!({})));
    assert_eq!(observation.call_id(), id);
    assert_eq!(observation.tool_name(), name);
    if let Some(text) = observation.error_text() {
        assert!(!text.chars().any(never_raw), "{text:?}");
    }
    for &profile in Profile::ALL {
        let rendered = serde_json::to_string(&profile.render(&observation)).unwrap_or_default();
        assert!(
            !rendered.contains(['\0', '\n', '\r']),
            "{profile:?}: {rendered:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    static SUBSCRIBER: Once = Once::new();
    SUBSCRIBER.call_once(|| {
        let _ = tracing::subscriber::set_global_default(OneLine);
    });
    let n = fixture()
        .inputs
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    fixture().approvals.reset();
    let mut parts = data.split(|byte| *byte == 0xFF);
    let mut part = || String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let (name, id, description) = (part(), part(), part());
    lint(&description);
    build(&name, &description);
    call(n, &name, &id);
});
