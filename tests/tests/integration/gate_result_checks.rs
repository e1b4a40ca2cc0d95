//! The result checks (`gate::ResultCheck`): every path that produces a result passes it
//! through them, in order; a withheld or panicking check is audited as such, and the tool has
//! run. And the check the library ships, `gate::RedactSecrets` (`redact_secrets`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use registry_core::{
    DynamicTool, ErrorKind, Registry, Subject, ToolCall,
    approval::Verdict,
    audit::{AuditEvent, ResultChecked},
    call::CallOptions,
    content::Content,
    gate::{ResultDecision, ToolResult},
    server::RunExt,
};
use serde_json::json;

use registry_tests::audit::{Events, calls};

/// A registry whose tools say "one" (as JSON, as content, as a task, after an approval),
/// with three checks: "one" becomes "1", then "1" becomes "uno" (so "uno" shows both ran,
/// in order), then a call to `secret` is withheld.
fn registry(ran: Arc<AtomicUsize>) -> (Registry, Events) {
    let events = Events::default();
    let sink = {
        let events = events.clone();
        move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
    };
    let counted = |name: &str| {
        let ran = ran.clone();
        DynamicTool::new(name, "Say one.")
            .public()
            .handler(move |_, _| {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(json!({"word": "one", "one": ["one", 1]}))
            })
    };
    let registry = Registry::builder()
        .tool(counted("plain"))
        .tool(counted("secret"))
        .tool(counted("approved").needs_approval())
        .tool(counted("background").task())
        .tool(
            DynamicTool::new("blocks", "Say one in blocks.")
                .public()
                .handler(|_, _| {
                    Ok::<_, String>(vec![
                        Content::text("one"),
                        Content::embedded_text("mem://x", "text/plain", "one"),
                        Content::image(&b"one"[..], "image/png"),
                    ])
                }),
        )
        .result_check(|result: &mut ToolResult<'_>| {
            result.redact_strings(|text| (text == "one").then(|| "1".to_owned()));
            ResultDecision::Pass
        })
        .result_check(|result: &mut ToolResult<'_>| {
            result.redact_strings(|text| (text == "1").then(|| "uno".to_owned()));
            ResultDecision::Pass
        })
        .result_check(|result: &mut ToolResult<'_>| {
            if result.tool_name() == "secret" {
                assert_eq!(result.call_id(), "c-secret");
                assert_eq!(result.subject().tenant(), "acme");
                ResultDecision::Withhold("it names a customer".into())
            } else {
                ResultDecision::Pass
            }
        })
        .audit_sink(sink)
        .build()
        .unwrap();
    (registry, events)
}

const REDACTED: fn() -> serde_json::Value = || json!({"word": "uno", "uno": ["uno", 1]});

#[test]
fn checks_run_in_order_on_every_path_that_produces_a_result() {
    let ran = Arc::new(AtomicUsize::new(0));
    let (registry, events) = registry(ran.clone());
    let run = registry.open_run("r1", &Subject::new("acme"));

    let blocking = run.call_blocking(ToolCall::new("c1", "plain", json!({})));
    assert_eq!(blocking.json(), &REDACTED());
    let awaited = pollster::block_on(run.call(ToolCall::new("c2", "plain", json!({}))));
    assert_eq!(awaited.json(), &REDACTED());
    let hooked = pollster::block_on(run.call_with(
        ToolCall::new("c3", "plain", json!({})),
        CallOptions::default(),
    ));
    assert_eq!(hooked.json(), &REDACTED());
    let pending = run.call_blocking(ToolCall::new("c4", "approved", json!({})));
    let id = pending.approval().unwrap().id().to_owned();
    let decided = run
        .decide_blocking(&id, Verdict::approve())
        .unwrap()
        .into_answer()
        .unwrap();
    assert_eq!(decided.json(), &REDACTED());
    let task = run
        .start_task_blocking(ToolCall::new("c5", "background", json!({})))
        .unwrap();
    let finished = pollster::block_on(run.wait_task(task.id())).unwrap();
    assert_eq!(finished.json(), &REDACTED());

    let blocks = run.call_blocking(ToolCall::new("c6", "blocks", json!({})));
    assert_eq!(blocks.blocks()[0].as_text(), Some("uno"));
    let Content::Resource(resource) = &blocks.blocks()[1] else {
        panic!("{blocks:?}")
    };
    assert_eq!(resource.text(), Some("uno"));
    assert_eq!(blocks.blocks()[2], Content::image(&b"one"[..], "image/png"));

    assert_eq!(ran.load(Ordering::SeqCst), 5);
    let audited = calls(&events);
    let redacted: Vec<&str> = (audited.iter())
        .filter(|call| call.result_check == Some(ResultChecked::Redacted))
        .map(|call| call.call_id.as_str())
        .collect();
    // The task's result is audited by its task event, not a call event.
    assert_eq!(redacted, ["c1", "c2", "c3", "c4", "c6"]);
    let c1 = audited.iter().find(|call| call.call_id == "c1").unwrap();
    assert_eq!(c1.outcome, None);
    assert_eq!(
        c1.detail.as_deref(),
        Some("result redacted by result check 1, 2")
    );
}

#[test]
fn a_withheld_result_is_an_error_the_tool_ran_and_the_audit_says_withheld() {
    let ran = Arc::new(AtomicUsize::new(0));
    let (registry, events) = registry(ran.clone());
    let run = registry.open_run("r1", &Subject::new("acme"));
    let answer = run.call_blocking(ToolCall::new("c-secret", "secret", json!({})));
    assert_eq!(answer.error_kind(), Some(ErrorKind::Denied));
    assert_eq!(
        answer.error_text(),
        Some(
            "the tool \"secret\" ran, but its result was withheld by a check: it names a customer. Do not repeat the same call"
        )
    );
    assert!(!format!("{answer:?}").contains("word"), "{answer:?}");
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let audited = calls(&events);
    assert_eq!(audited[0].result_check, Some(ResultChecked::Withheld));
    assert_eq!(audited[0].outcome, Some(ErrorKind::Denied));
    assert_eq!(
        audited[0].detail.as_deref(),
        Some("result check 3 withheld the result: it names a customer")
    );
}

#[test]
fn a_check_that_panics_withholds_and_the_checks_after_it_are_not_asked() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let events = Events::default();
    let sink = {
        let events = events.clone();
        move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
    };
    let after = asked.clone();
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("plain", "Say one.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("one"))),
        )
        .result_check(|_: &mut ToolResult<'_>| -> ResultDecision {
            panic!("the classifier is down")
        })
        .result_check(move |result: &mut ToolResult<'_>| {
            after.lock().unwrap().push(result.call_id().to_owned());
            ResultDecision::Pass
        })
        .audit_sink(sink)
        .build()
        .unwrap();
    let run = registry.open_run("r1", &Subject::new("acme"));
    let answer = run.call_blocking(ToolCall::new("c1", "plain", json!({})));
    assert_eq!(answer.error_kind(), Some(ErrorKind::Denied));
    assert!(
        answer.error_text().unwrap().contains("withheld"),
        "{answer:?}"
    );
    assert!(asked.lock().unwrap().is_empty());
    let audited = calls(&events);
    assert_eq!(audited[0].result_check, Some(ResultChecked::Withheld));
    let detail = audited[0].detail.as_deref().unwrap();
    assert!(
        detail.contains("result check 1 panicked") && detail.contains("the classifier is down"),
        "{detail}"
    );
}

#[test]
fn without_checks_nothing_is_marked() {
    let events = Events::default();
    let sink = {
        let events = events.clone();
        move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
    };
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("plain", "Say one.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("one"))),
        )
        .result_check(|_: &mut ToolResult<'_>| ResultDecision::Pass)
        .audit_sink(sink)
        .build()
        .unwrap();
    let run = registry.open_run("r1", &Subject::new("acme"));
    let answer = run.call_blocking(ToolCall::new("c1", "plain", json!({})));
    assert_eq!(answer.json(), &json!("one"));
    assert_eq!(calls(&events)[0].result_check, None);
    assert_eq!(calls(&events)[0].detail, None);
}

/// Fake secrets of the lint's shapes (never real ones).
const TOKEN: &str = "ghp_Zq8vN2xR5tL9wK3mB7cJ1fH4dG6sP0aY2eU8";
const KEY: &str = "sk-4fG7hJ2kL9mN3pQ8rS1tU6vW";

#[test]
fn secrets_are_redacted_in_json_and_text_content_and_audited() {
    let events = Events::default();
    let sink = {
        let events = events.clone();
        move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
    };
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("config", "Read the configuration.")
                .public()
                .handler(|_, _| {
                    Ok::<_, String>(json!({
                        "token": TOKEN,
                        "nested": [{"url": "postgres://app:hunter2hunter2@db/x"}],
                        "count": 3,
                        KEY: "a key as a key",
                    }))
                }),
        )
        .tool(
            DynamicTool::new("log", "Read the log.")
                .public()
                .handler(|_, _| {
                    Ok::<_, String>(vec![
                        Content::text(format!("using {KEY} now")),
                        Content::embedded_text("log://1", "text/plain", format!("t={TOKEN}")),
                    ])
                }),
        )
        .tool(
            DynamicTool::new("clean", "Say nothing secret.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("sk-xxxxxxxxxxxxxxxxxxxxxxxx"))),
        )
        .redact_secrets()
        .audit_sink(sink)
        .build()
        .unwrap();
    let run = registry.open_run("r1", &Subject::new("acme"));
    let config = run.call_blocking(ToolCall::new("c1", "config", json!({})));
    assert_eq!(
        config.json(),
        &json!({
            "token": "[redacted: secret/api-token]",
            "nested": [{"url": "[redacted: secret/url-password]/x"}],
            "count": 3,
            "[redacted: secret/api-token]": "a key as a key",
        })
    );
    let log = run.call_blocking(ToolCall::new("c2", "log", json!({})));
    assert_eq!(
        log.blocks()[0].as_text(),
        Some("using [redacted: secret/api-token] now")
    );
    let Content::Resource(resource) = &log.blocks()[1] else {
        panic!("{log:?}")
    };
    assert_eq!(resource.text(), Some("t=[redacted: secret/api-token]"));
    let clean = run.call_blocking(ToolCall::new("c3", "clean", json!({})));
    assert_eq!(clean.json(), &json!("sk-xxxxxxxxxxxxxxxxxxxxxxxx"));
    for answer in [&config, &log] {
        let shown = format!("{answer:?}");
        for secret in [TOKEN, KEY, "hunter2hunter2"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
    let audited: Vec<Option<ResultChecked>> = calls(&events)
        .iter()
        .map(|call| call.result_check)
        .collect();
    assert_eq!(
        audited,
        [
            Some(ResultChecked::Redacted),
            Some(ResultChecked::Redacted),
            None
        ]
    );
}
