//! SIGHUP reloads the set from its directory (one test in its own process: it signals
//! itself).
#![cfg(unix)]

use std::time::{Duration, Instant};

use registry_cedar::{CedarError, CedarPolicies, ReloadOnHangup};
use registry_core::{DynamicTool, ErrorKind, Registry, Subject, ToolCall};
use serde_json::json;

fn wait_for_reloads(listener: &ReloadOnHangup, count: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while listener.reloads() < count {
        assert!(Instant::now() < deadline, "no reload within 10 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn sighup_reloads_the_directory_and_a_broken_file_changes_nothing() {
    let dir = std::env::temp_dir().join(format!("registry-cedar-hangup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |text: &str| std::fs::write(dir.join("rules.cedar"), text).unwrap();
    write(
        r#"permit(principal, action, resource);
           @id("no-refunds") forbid(principal, action == Action::"call", resource == Tool::"refund");"#,
    );
    let policies = CedarPolicies::from_dir(&dir).unwrap();
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("refund", "Refund an order.")
                .scopes(["ledger:write"])
                .handler(|_, _| Ok::<_, String>(json!("refunded"))),
        )
        .policies(policies.clone())
        .build()
        .unwrap();
    let run = registry.open_run("r", &Subject::new("acme").with_scopes(["ledger:write"]));
    let refund = || {
        run.call_blocking(ToolCall::new("c", "refund", json!({})))
            .error_kind()
    };
    assert_eq!(refund(), Some(ErrorKind::Denied));

    let listener = policies.reload_on_hangup(&dir).unwrap();
    write("permit(principal, action, resource);");
    signal_hook::low_level::raise(signal_hook::consts::SIGHUP).unwrap();
    wait_for_reloads(&listener, 1);
    assert_eq!(listener.last_error(), None);
    assert_eq!(policies.generation(), 1);
    // The same run, its next call: decided by the new set.
    assert_eq!(refund(), None);

    // A file that does not parse: refused, the set in force stays.
    write("permit(principal, action, resource) when {");
    signal_hook::low_level::raise(signal_hook::consts::SIGHUP).unwrap();
    wait_for_reloads(&listener, 2);
    assert!(
        matches!(listener.last_error(), Some(CedarError::Parse { .. })),
        "{:?}",
        listener.last_error()
    );
    assert_eq!(policies.generation(), 1);
    assert_eq!(refund(), None);

    // A set that parses but names a tool the registry lacks: refused too.
    write(r#"permit(principal, action, resource == Tool::"refnud");"#);
    signal_hook::low_level::raise(signal_hook::consts::SIGHUP).unwrap();
    wait_for_reloads(&listener, 3);
    assert!(
        matches!(listener.last_error(), Some(CedarError::Invalid(_))),
        "{:?}",
        listener.last_error()
    );
    assert_eq!(refund(), None);
    drop(listener);
    std::fs::remove_dir_all(&dir).unwrap();
}
