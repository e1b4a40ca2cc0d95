//! An asynchronous call policy: asked after the synchronous ones, within its deadline; no
//! answer in time denies, and the audit event says it timed out.

use std::time::{Duration, Instant};

use registry_core::{
    DynamicTool, ErrorKind, Registry, Subject, ToolCall,
    audit::AuditEvent,
    definition::BoxFuture,
    gate::{AsyncCallPolicy, CallRequest, Decision, Determined},
};
use serde_json::json;

use registry_tests::audit::{Events, calls};

/// Decides by the call's `mode` argument: `allow`, `deny`, `approve`, `slow` (allows after
/// 20 ms, on tokio's timer), `hang` (never answers), `panic`.
struct Remote;

impl AsyncCallPolicy for Remote {
    fn determine<'a>(&'a self, call: CallRequest<'a>) -> BoxFuture<'a, Determined> {
        Box::pin(async move {
            let id = |id: &str| vec![id.to_owned()];
            match call.arguments()["mode"].as_str() {
                Some("allow") => Determined::new(Decision::Allow, id("remote-allow")),
                Some("deny") => Determined::new(
                    Decision::Deny("the remote engine says no".into()),
                    id("remote-deny"),
                ),
                Some("approve") => Determined::new(
                    Decision::RequireApproval("the remote engine wants a person".into()),
                    id("remote-approve"),
                ),
                Some("slow") => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Determined::new(Decision::Allow, id("remote-slow"))
                }
                Some("panic") => panic!("the engine's client broke"),
                _ => std::future::pending().await,
            }
        })
    }
}

const DEADLINE: Duration = Duration::from_millis(300);

fn registry(synchronous: Decision) -> (Registry, Events) {
    let events = Events::default();
    let sink = {
        let events = events.clone();
        move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
    };
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("act", "Act.")
                .public()
                .parameters(json!({"type": "object", "properties": {"mode": {"type": "string"}}}))
                .handler(|_, _| Ok::<_, String>(json!("done"))),
        )
        .call_policy(move |_: &CallRequest<'_>| synchronous.clone())
        .async_call_policy(Remote, DEADLINE)
        .audit_sink(sink)
        .build()
        .unwrap();
    (registry, events)
}

fn act(id: &str, mode: &str) -> ToolCall {
    ToolCall::new(id, "act", json!({"mode": mode}))
}

#[test]
fn the_remote_engine_allows_denies_and_asks_on_both_paths() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (registry, events) = registry(Decision::Allow);
    let run = registry.open_run("r1", &Subject::new("acme"));
    let awaited = |call| runtime.block_on(run.call(call));
    assert_eq!(awaited(act("a1", "allow")).json(), &json!("done"));
    assert_eq!(awaited(act("a2", "slow")).json(), &json!("done"));
    let denied = awaited(act("a3", "deny"));
    assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));
    assert!(
        denied
            .error_text()
            .unwrap()
            .contains("the remote engine says no")
    );
    let asked = awaited(act("a4", "approve"));
    assert_eq!(asked.error_kind(), Some(ErrorKind::ApprovalRequired));
    assert_eq!(run.call_blocking(act("b1", "allow")).json(), &json!("done"));
    let denied = run.call_blocking(act("b2", "deny"));
    assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));

    let audited = calls(&events);
    let ids: Vec<(&str, Vec<String>)> = (audited.iter())
        .map(|call| (call.call_id.as_str(), call.policies.clone()))
        .collect();
    let named = |id: &str| vec![id.to_owned()];
    assert_eq!(
        ids,
        [
            ("a1", named("remote-allow")),
            ("a2", named("remote-slow")),
            ("a3", named("remote-deny")),
            ("a4", named("remote-approve")),
            ("b1", named("remote-allow")),
            ("b2", named("remote-deny")),
        ]
    );
}

#[test]
fn no_answer_within_the_deadline_denies_on_both_paths_and_is_audited() {
    let (registry, events) = registry(Decision::Allow);
    let run = registry.open_run("r1", &Subject::new("acme"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let awaited = runtime.block_on(run.call(act("a1", "hang")));
    let blocking = run.call_blocking(act("b1", "hang"));
    let elapsed = started.elapsed();
    for answer in [&awaited, &blocking] {
        assert_eq!(answer.error_kind(), Some(ErrorKind::Denied), "{answer:?}");
    }
    assert!(elapsed >= 2 * DEADLINE, "{elapsed:?}");
    assert!(
        elapsed < 2 * DEADLINE + Duration::from_secs(5),
        "{elapsed:?}"
    );
    // A policy whose future needs a runtime the calling thread lacks (tokio's timer in
    // `call_blocking`), or that panics, denies too.
    let without_runtime = run.call_blocking(act("b2", "slow"));
    assert_eq!(without_runtime.error_kind(), Some(ErrorKind::Denied));
    let panicked = run.call_blocking(act("b3", "panic"));
    assert_eq!(panicked.error_kind(), Some(ErrorKind::Denied));

    let details: Vec<String> = (calls(&events).iter())
        .map(|call| call.detail.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        details[..2],
        [
            "asynchronous call policy 1 timed out: no answer within 300 ms",
            "asynchronous call policy 1 timed out: no answer within 300 ms",
        ]
    );
    assert!(details[2].contains("panicked"), "{}", details[2]);
    assert!(
        details[3].contains("the engine's client broke"),
        "{}",
        details[3]
    );
}

#[test]
fn a_synchronous_denial_is_not_sent_to_the_engine() {
    let (registry, events) = registry(Decision::Deny("frozen".into()));
    let run = registry.open_run("r1", &Subject::new("acme"));
    let started = Instant::now();
    // `hang` would wait out the deadline if the engine were asked.
    let answer = run.call_blocking(act("b1", "hang"));
    assert_eq!(answer.error_kind(), Some(ErrorKind::Denied));
    assert!(answer.error_text().unwrap().contains("frozen"));
    assert!(started.elapsed() < DEADLINE, "{:?}", started.elapsed());
    assert!(calls(&events)[0].policies.is_empty());
}

#[test]
fn a_synchronous_approval_and_a_remote_allow_still_ask_a_person() {
    let (registry, events) = registry(Decision::RequireApproval("a person".into()));
    let run = registry.open_run("r1", &Subject::new("acme"));
    let answer = run.call_blocking(act("b1", "allow"));
    assert_eq!(answer.error_kind(), Some(ErrorKind::ApprovalRequired));
    let answer = run.call_blocking(act("b2", "deny"));
    assert_eq!(answer.error_kind(), Some(ErrorKind::Denied));
    assert_eq!(calls(&events)[1].policies, ["remote-deny"]);
}
