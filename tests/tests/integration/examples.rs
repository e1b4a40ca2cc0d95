//! The README's demonstration and catalog, run as a user runs them, so that what the README
//! says they show cannot rot.

use crate::mcp_support;

use std::process::Command;

fn run(name: &str) -> String {
    let output = Command::new(mcp_support::example_binary(name))
        .env_remove("CHAT_WEBHOOK_URL")
        .output()
        .expect("the example runs");
    assert!(
        output.status.success(),
        "{name} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

#[test]
fn the_demo_shows_what_the_readme_says() {
    let out = run("demo");
    for expected in [
        // Runs and what each is shown.
        "== reader: tenant acme, scopes [build:read], read-only",
        "is shown 4 tools: changelog, get_status, list_builds, search_docs",
        "notify_chat: not ready: CHAT_WEBHOOK_URL is not set",
        // Every provider's export.
        "openai-chat (",
        "anthropic (",
        "gemini (",
        // The transcript's hostile calls.
        "-> unknown_tool: unknown tool \"get_build_status\"",
        "-> not_allowed: unknown tool \"deploy\"",
        "-> invalid_arguments: invalid arguments for \"list_builds\"",
        "-> execution_failed: the tool \"get_status\" failed",
        "-> panicked: the tool \"changelog\" failed with an internal error",
        // The gate.
        "-> waits for approval apr_",
        "(a deploy to production)",
        "[alice@acme] approves call_10",
        // A deployment id unique across clients and restarts: dep-<time>-<sequence>-<env>.
        "-> ok: \"dep-",
        "-production\"",
        "[bob@acme] denies call_11: pr-1234 is still under review",
        "-> denied: the call to \"drop_preview\" was denied",
        "-> rate_limited (retry after",
        "-> not_allowed: unknown tool \"notify_chat\"",
        // The revocation, and the audit log.
        "[operator] revokes \"deploy\"",
        "-> revoked: the tool \"deploy\" has been withdrawn",
        "== The audit log (argument values are never recorded)",
        "readiness  notify_chat not ready: CHAT_WEBHOOK_URL is not set",
        "approved by alice@acme",
    ] {
        assert!(
            out.contains(expected),
            "the demo no longer shows {expected:?}:\n{out}"
        );
    }
    // The destructive tool never ran, and no argument value reached the audit log.
    assert!(!out.contains("preview pr-1234 deleted"));
    let audit = &out[out.find("== The audit log").unwrap()..];
    assert!(!audit.contains("pr-1234"), "{audit}");
}

#[test]
fn the_catalog_lists_every_tool_with_its_gate() {
    let out = run("catalog");
    for expected in [
        "9 tools registered: changelog, deploy, drop_preview, get_status, list_builds, notify_chat, retry_build, rollback, search_docs",
        "== drop_preview",
        "gate:   every call waits for a person's approval",
        "gate:   at most 3/min per subject",
    ] {
        assert!(
            out.contains(expected),
            "the catalog no longer shows {expected:?}:\n{out}"
        );
    }
}

#[test]
fn the_catalog_prints_the_cedar_schema() {
    let output = Command::new(mcp_support::example_binary("catalog"))
        .arg("--cedar-schema")
        .output()
        .expect("the catalog runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let schema = String::from_utf8(output.stdout).unwrap();
    for expected in [
        "entity Principal = {",
        "\"tenant\": String,",
        "entity Tool = {",
        "\"needs_approval\": Bool,",
        "action \"list\" appliesTo {",
        "action \"call\" appliesTo {",
        // The example tools' arguments, each optional in the union.
        "\"project\"?: String,",
        "\"query\"?: String,",
        "\"caller\": String,",
    ] {
        assert!(
            schema.contains(expected),
            "{expected:?} missing from:\n{schema}"
        );
    }
    // A bad flag says so.
    let bad = Command::new(mcp_support::example_binary("catalog"))
        .arg("--cedar")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
