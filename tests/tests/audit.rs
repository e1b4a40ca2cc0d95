//! The audit trail: a projection event per run, a call event per call with its outcome,
//! duration and the size and hash of the arguments (never their values), and a change event
//! per revocation and replacement; to the application's sink and through `tracing`.

mod tracing_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use registry_core::{
    DynamicTool, ErrorKind, Registry, RegistryBuilder, Subject, ToolCall,
    audit::{AUDIT_TARGET, AuditEvent, CallEvent, ChangeEvent, ProjectionEvent},
    change::ReplaceOptions,
};
use serde_json::{Value, json};
use tracing_support::{Captured, traced};

/// A string that must never appear in the audit trail.
const SECRET: &str = "SECRET-ARGUMENT-VALUE-4f1c";

type Events = Arc<Mutex<Vec<AuditEvent>>>;

fn tools() -> RegistryBuilder {
    traced();
    let note = json!({
        "type": "object",
        "properties": {"note": {"type": "string"}, "count": {"type": "integer"}},
        "additionalProperties": false
    });
    Registry::builder()
        .tool(
            DynamicTool::new("note", "Take a note.")
                .public()
                .parameters(note.clone())
                .read_only()
                .handler(|_, _| Ok::<_, String>(json!("noted"))),
        )
        .tool(
            DynamicTool::new("nap", "Sleep 20 ms.")
                .public()
                .handler(|_, _| {
                    std::thread::sleep(Duration::from_millis(20));
                    Ok::<_, String>(json!("rested"))
                }),
        )
        .tool(
            DynamicTool::new("fail", "Fail.")
                .public()
                .parameters(note.clone())
                .handler(|_, _| Err::<Value, _>("the disk is full")),
        )
        .tool(
            DynamicTool::new("boom", "Panic.")
                .public()
                .parameters(note)
                .handler(|_, _| -> Result<Value, String> { panic!("boom went the tool") }),
        )
        .tool(
            DynamicTool::new("hang", "Never finish.")
                .public()
                .timeout(Duration::from_millis(100))
                .async_handler(|_, _| std::future::pending::<Result<Value, String>>()),
        )
        .tool(
            DynamicTool::new("withdrawn", "To be revoked.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("here"))),
        )
        .tool(
            DynamicTool::new("admin", "Hidden.")
                .scopes(["admin"])
                .handler(|_, _| Ok::<_, String>(json!("admin"))),
        )
}

fn registry() -> (Registry, Events) {
    let events = Events::default();
    let sink = {
        let events = events.clone();
        move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
    };
    (tools().audit_sink(sink).build().unwrap(), events)
}

/// The argument hash of a call of `note` with `arguments`, in a registry of `builder`.
fn hash_of(builder: RegistryBuilder, arguments: &Value) -> String {
    let events = Events::default();
    let sink = {
        let events = events.clone();
        move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
    };
    let registry = builder.audit_sink(sink).build().unwrap();
    let run = registry.open_run("run-1", &Subject::new("tenant-a"));
    let observation = run.call_blocking(ToolCall::new("c1", "note", arguments.clone()));
    assert_eq!(observation.error_kind(), None, "{observation:?}");
    let calls = calls(&events);
    assert_eq!(calls.len(), 1);
    calls[0].argument_hash.clone()
}

/// Before, the argument hash was an unkeyed XXH3-64: whoever read the log could hash each
/// guess of a low-entropy argument (a yes or no, a count) and find the one called with. Now
/// it is an HMAC under the registry's key: the same arguments hash the same under one key,
/// and differently under another, so a guess cannot be checked without the key.
#[test]
fn the_argument_hash_is_keyed() {
    let yes = json!({"note": "yes"});
    let one = [1u8; 32];
    let other = [2u8; 32];
    let under_one = hash_of(tools().audit_hash_key(one), &yes);
    assert_eq!(under_one.len(), 16);
    assert!(under_one.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(hash_of(tools().audit_hash_key(one), &yes), under_one);
    assert_ne!(hash_of(tools().audit_hash_key(other), &yes), under_one);
    assert_ne!(
        hash_of(tools().audit_hash_key(one), &json!({"note": "no"})),
        under_one
    );
    // The unkeyed hash a reader could compute from a guess is not what is recorded.
    let json = serde_json::to_vec(&yes).unwrap();
    let unkeyed = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&json));
    assert_ne!(under_one, unkeyed);
    let process = hash_of(tools(), &yes);
    assert_ne!(process, unkeyed);
    // Without a key, one drawn at random per process: the registries of one process agree.
    assert_eq!(hash_of(tools(), &yes), process);
    assert_ne!(process, under_one);
    // A key too short to keep guesses out is refused at build, saying how long to make it.
    let error = tools().audit_hash_key(b"short").build().unwrap_err();
    assert!(
        error
            .to_string()
            .contains("the audit hash key is 5 bytes long; give at least 16"),
        "{error}"
    );
}

fn calls(events: &Events) -> Vec<CallEvent> {
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

#[test]
fn opening_a_run_emits_its_projection() {
    let (registry, events) = registry();
    let run = registry.open_run(
        "run-1",
        &Subject::new("tenant-a").with_agent("helper").read_only(),
    );
    let reader = registry.open_run("run-2", &Subject::new("tenant-b"));
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 2);
    let AuditEvent::Projection(projection) = &events[0] else {
        panic!("{:?}", events[0]);
    };
    assert_eq!(projection.run_id, "run-1");
    assert_eq!(projection.tenant, "tenant-a");
    assert_eq!(projection.agent.as_deref(), Some("helper"));
    assert_eq!(projection.fingerprint, run.allowed().fingerprint());
    assert_eq!(projection.visible, 1);
    assert_eq!(projection.hidden, 6);
    assert_eq!(
        serde_json::to_value(&events[0]).unwrap(),
        json!({
            "event": "projection",
            "run_id": "run-1",
            "tenant": "tenant-a",
            "agent": "helper",
            "fingerprint": run.allowed().fingerprint().to_string(),
            "visible": 1,
            "hidden": 6,
            "versions": run.allowed().version_fingerprint().to_string(),
            "tools": [{
                "name": "note",
                "version": registry.get("note").unwrap().version_fingerprint().to_string()
            }]
        })
    );
    let AuditEvent::Projection(ProjectionEvent {
        run_id,
        agent,
        fingerprint,
        visible,
        hidden,
        ..
    }) = &events[1]
    else {
        panic!("{:?}", events[1]);
    };
    assert_eq!(run_id, "run-2");
    assert_eq!(*agent, None);
    assert_eq!(*fingerprint, reader.allowed().fingerprint());
    assert_eq!((*visible, *hidden), (6, 1));
}

#[test]
fn every_call_is_audited_with_its_outcome() {
    let (registry, events) = registry();
    let run = registry.open_run("run-1", &Subject::new("tenant-a"));
    registry.revoke("withdrawn", "retired").unwrap();
    let secret = json!({"note": SECRET});
    let cases = [
        ("ok", "note", secret.clone(), None),
        ("slow", "nap", json!({}), None),
        (
            "unknown",
            "no_such_tool",
            secret.clone(),
            Some(ErrorKind::UnknownTool),
        ),
        (
            "hidden",
            "admin",
            secret.clone(),
            Some(ErrorKind::NotAllowed),
        ),
        (
            "revoked",
            "withdrawn",
            secret.clone(),
            Some(ErrorKind::Revoked),
        ),
        (
            "invalid",
            "note",
            json!({"note": SECRET, "count": SECRET}),
            Some(ErrorKind::InvalidArguments),
        ),
        (
            "failed",
            "fail",
            secret.clone(),
            Some(ErrorKind::ExecutionFailed),
        ),
        (
            "panicked",
            "boom",
            secret.clone(),
            Some(ErrorKind::Panicked),
        ),
        ("timed_out", "hang", json!({}), Some(ErrorKind::TimedOut)),
    ];
    for (id, name, arguments, kind) in &cases {
        let observation = run.call_blocking(ToolCall::new(*id, *name, arguments.clone()));
        assert_eq!(observation.error_kind(), *kind, "{id}");
    }

    let calls = calls(&events);
    assert_eq!(calls.len(), cases.len());
    let fingerprint = run.allowed().fingerprint();
    for ((id, name, _, kind), event) in cases.iter().zip(&calls) {
        assert_eq!(event.run_id, "run-1", "{id}");
        assert_eq!(event.tenant, "tenant-a", "{id}");
        assert_eq!(event.fingerprint, fingerprint, "{id}");
        assert_eq!(event.call_id, *id);
        assert_eq!(event.tool, *name, "{id}");
        assert_eq!(event.outcome, *kind, "{id}");
    }
    let by_id: BTreeMap<&str, &CallEvent> = calls.iter().map(|c| (c.call_id.as_str(), c)).collect();

    // Durations cover the call.
    assert!(by_id["slow"].duration >= Duration::from_millis(20));
    assert!(by_id["timed_out"].duration >= Duration::from_millis(100));

    // Size and hash of the arguments as compact JSON.
    let size = serde_json::to_vec(&secret).unwrap().len();
    assert_eq!(by_id["ok"].argument_bytes, size);
    assert_eq!(by_id["ok"].argument_hash.len(), 16);
    assert!(
        by_id["ok"]
            .argument_hash
            .chars()
            .all(|c| c.is_ascii_hexdigit())
    );
    assert_eq!(by_id["failed"].argument_bytes, size);
    assert_eq!(by_id["failed"].argument_hash, by_id["ok"].argument_hash);
    assert_eq!(by_id["panicked"].argument_hash, by_id["ok"].argument_hash);
    assert_eq!(by_id["slow"].argument_bytes, 2);
    assert_ne!(by_id["slow"].argument_hash, by_id["ok"].argument_hash);
    assert_eq!(
        by_id["invalid"].argument_bytes,
        serde_json::to_vec(&cases[5].2).unwrap().len()
    );
    assert_ne!(by_id["invalid"].argument_hash, by_id["ok"].argument_hash);

    // What the model was not told goes to the operators.
    assert_eq!(by_id["failed"].detail.as_deref(), Some("the disk is full"));
    assert_eq!(
        by_id["panicked"].detail.as_deref(),
        Some("panic: boom went the tool")
    );
    assert_eq!(by_id["ok"].detail, None);

    // Never the argument values.
    for event in events.lock().unwrap().iter() {
        let json = serde_json::to_string(event).unwrap();
        assert!(!json.contains(SECRET), "{json}");
        assert!(!format!("{event:?}").contains(SECRET), "{event:?}");
    }
    let json = serde_json::to_value(AuditEvent::Call(by_id["ok"].clone())).unwrap();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "argument_bytes",
            "argument_hash",
            "call_id",
            "caller",
            "detail",
            "duration",
            "event",
            "fingerprint",
            "outcome",
            "run_id",
            "tenant",
            "tool",
            "tool_version"
        ]
    );
    assert_eq!(json["event"], "call");
    assert_eq!(json["outcome"], Value::Null);
    assert_eq!(
        serde_json::to_value(AuditEvent::Call(by_id["timed_out"].clone())).unwrap()["outcome"],
        "timed_out"
    );
}

#[test]
fn equal_arguments_hash_equal_across_runs() {
    let (registry, events) = registry();
    let first = registry.open_run("run-1", &Subject::new("tenant-a"));
    let second = registry.open_run("run-2", &Subject::new("tenant-b"));
    let arguments = [
        json!({"note": "a"}),
        json!({"note": "a"}),
        json!({"note": "b"}),
        json!({"note": "a", "count": 1}),
        json!({"note": "a", "count": 2}),
    ];
    for (index, arguments) in arguments.iter().enumerate() {
        let run = if index % 2 == 0 { &first } else { &second };
        let _ = run.call_blocking(ToolCall::new(index.to_string(), "note", arguments.clone()));
    }
    let hashes: Vec<String> = calls(&events)
        .into_iter()
        .map(|call| call.argument_hash)
        .collect();
    assert_eq!(hashes[0], hashes[1]);
    for (i, a) in hashes.iter().enumerate().skip(1) {
        for b in &hashes[i + 1..] {
            assert_ne!(a, b);
        }
    }
}

#[test]
fn revocations_and_replacements_are_audited() {
    let (registry, events) = registry();
    let revoked = registry.revoke("withdrawn", "retired").unwrap();
    let replaced = registry
        .replace(
            DynamicTool::new("note", "Take a note, better.")
                .public()
                .read_only()
                .handler(|_, _| Ok::<_, String>(json!("noted"))),
            ReplaceOptions::revoke_old_runs("v2"),
        )
        .unwrap();
    // A failed replacement is not a change.
    registry
        .replace(
            DynamicTool::new("note", "No handler.").public(),
            ReplaceOptions::keep_old_runs("broken"),
        )
        .unwrap_err();
    let changes: Vec<ChangeEvent> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            AuditEvent::Change(change) => Some(change.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(changes.len(), 2);
    assert_eq!(changes[0].change, revoked);
    assert_eq!(changes[1].change, replaced);
    assert_eq!(registry.changes(), [revoked, replaced]);
    let json = serde_json::to_value(AuditEvent::Change(changes[1].clone())).unwrap();
    assert_eq!(json["event"], "change");
    assert_eq!(json["change"]["name"], "note");
    assert_eq!(json["change"]["kind"], json!({"replaced": "revoke"}));
    assert_eq!(json["change"]["reason"], "v2");
}

#[test]
fn events_go_through_tracing_even_without_a_sink() {
    let registry = tools().build().unwrap();
    let run = registry.open_run("run-t", &Subject::new("tenant-t"));
    let _ = run.call_blocking(ToolCall::new("c1", "note", json!({"note": SECRET})));
    let _ = run.call_blocking(ToolCall::new("c2", "fail", json!({"note": SECRET})));
    registry.revoke("withdrawn", "retired").unwrap();
    let fingerprint = run.allowed().fingerprint();

    let here = std::thread::current().id();
    let captured = traced().lock().unwrap();
    let audit: Vec<&Captured> = captured
        .iter()
        .filter(|event| event.thread == here && event.target == AUDIT_TARGET)
        .collect();
    let kinds: Vec<&str> = audit.iter().map(|e| e.fields["event"].as_str()).collect();
    assert_eq!(kinds, ["projection", "call", "call", "change"]);

    let projection = &audit[0].fields;
    assert_eq!(projection["run_id"], "run-t");
    assert_eq!(projection["tenant"], "tenant-t");
    assert_eq!(projection["fingerprint"], fingerprint.to_string());
    assert_eq!(projection["visible"], "6");
    assert_eq!(projection["hidden"], "1");

    let ok = &audit[1].fields;
    assert_eq!(ok["call_id"], "c1");
    assert_eq!(ok["tool"], "note");
    assert_eq!(ok["outcome"], "ok");
    assert_eq!(ok["fingerprint"], fingerprint.to_string());
    assert_eq!(
        ok["argument_bytes"],
        serde_json::to_vec(&json!({"note": SECRET}))
            .unwrap()
            .len()
            .to_string()
    );
    assert!(ok.contains_key("duration_us"));
    assert_eq!(ok["argument_hash"].len(), 16);
    let failed = &audit[2].fields;
    assert_eq!(failed["outcome"], "execution_failed");
    assert_eq!(failed["argument_hash"], ok["argument_hash"]);
    // Not a plain word: quoted, so that no text can forge a field.
    assert_eq!(failed["detail"], "\"the disk is full\"");
    let change = &audit[3].fields;
    assert_eq!(change["tool"], "withdrawn");
    assert_eq!(change["reason"], "retired");

    for event in captured.iter() {
        assert!(
            !event.fields.values().any(|value| value.contains(SECRET)),
            "{event:?}"
        );
    }
}

mod result_checks {
    //! The result checks: every path that produces a result passes it through them, in
    //! order; a withheld or panicking check is audited as such, and the tool has run.

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

    use super::{Events, calls};

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
            .tool(counted("approved").needs_approval(true))
            .tool(counted("background").task())
            .tool(
                DynamicTool::new("blocks", "Say one in blocks.")
                    .public()
                    .content_handler(|_, _| {
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
                    .content_handler(|_, _| {
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
}

mod async_policies {
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

    use super::{Events, calls};

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
                    .parameters(
                        json!({"type": "object", "properties": {"mode": {"type": "string"}}}),
                    )
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
}

mod callers {
    //! Who made a call travels with it: onto its audit event, onto the approval request it
    //! waits on, and onto the call resumed after the approval.

    use registry_core::{
        DynamicTool, ErrorKind, Registry, Subject, ToolCall, approval::Verdict, audit::AuditEvent,
        call::Caller,
    };
    use serde_json::json;

    use super::{Events, calls};

    #[test]
    fn a_call_from_code_keeps_its_caller_through_an_approval() {
        let events = Events::default();
        let sink = {
            let events = events.clone();
            move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
        };
        let tool = |name: &str| {
            DynamicTool::new(name, "Restart the service.")
                .public()
                .needs_approval(true)
                .handler(|_, _| Ok::<_, String>(json!("restarted")))
        };
        let registry = Registry::builder()
            .tool(tool("restart").callable_from_code())
            .tool(tool("reboot"))
            .audit_sink(sink)
            .build()
            .unwrap();
        let run = registry.open_run("r1", &Subject::new("acme"));
        let from_code =
            |id: &str, name: &str| ToolCall::new(id, name, json!({})).with_caller(Caller::Code);

        // Not callable from code: refused, since code cannot wait for a person.
        let refused = run.call_blocking(from_code("c0", "reboot"));
        assert_eq!(refused.error_kind(), Some(ErrorKind::Denied));
        assert!(refused.error_text().unwrap().contains("call it directly"));

        let pending = run.call_blocking(from_code("c1", "restart"));
        assert_eq!(pending.error_kind(), Some(ErrorKind::ApprovalRequired));
        let request = pending.approval().unwrap();
        assert_eq!(request.caller(), Caller::Code);
        let done = run
            .decide_blocking(request.id(), Verdict::approve())
            .unwrap()
            .into_answer()
            .unwrap();
        assert_eq!(done.json(), &json!("restarted"));

        let direct = run.call_blocking(ToolCall::new("c2", "restart", json!({})));
        assert_eq!(direct.approval().unwrap().caller(), Caller::Model);

        let audited: Vec<(String, Caller, Option<ErrorKind>)> = (calls(&events).iter())
            .map(|call| (call.call_id.clone(), call.caller, call.outcome))
            .collect();
        let row = |id: &str, caller, outcome| (id.to_owned(), caller, outcome);
        assert_eq!(
            audited,
            [
                row("c0", Caller::Code, Some(ErrorKind::Denied)),
                row("c1", Caller::Code, Some(ErrorKind::ApprovalRequired)),
                row("c1", Caller::Code, None),
                row("c2", Caller::Model, Some(ErrorKind::ApprovalRequired)),
            ]
        );
        // A request from the model is stored as it was before callers existed.
        let stored = serde_json::to_value(direct.approval().unwrap()).unwrap();
        assert!(stored.get("caller").is_none(), "{stored}");
    }
}
