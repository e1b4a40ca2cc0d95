//! The audit trail: a projection event per run, a call event per call with its outcome,
//! duration and the size and hash of the arguments (never their values), and a change event
//! per revocation and replacement; to the application's sink and through `tracing`.
//! (What the events say of a result check, an asynchronous policy or a caller is tested with
//! each: `integration/gate_result_checks.rs`, `gate_async_policies.rs`, `approval_callers.rs`.)

mod tracing_support;

use std::collections::BTreeMap;
use std::time::Duration;

use registry_core::{
    DynamicTool, ErrorKind, Registry, RegistryBuilder, Subject, ToolCall,
    access::Access,
    audit::{AUDIT_TARGET, AuditEvent, CallEvent, ChangeEvent, ProjectionEvent},
    change::ReplaceOptions,
};
use registry_tests::audit::{Events, calls};
use serde_json::{Value, json};
use tracing_support::{Captured, traced};

/// A string that must never appear in the audit trail.
const SECRET: &str = "SECRET-ARGUMENT-VALUE-4f1c";

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

#[test]
fn opening_a_run_emits_its_projection() {
    let (registry, events) = registry();
    let run = registry.open_run(
        "run-1",
        &Subject::new("tenant-a")
            .with_agent("helper")
            .with_access(Access::ReadOnly),
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
