//! What ran is on the record: a tool's version fingerprint covers its definition, hints,
//! scopes, tenants and gate flags; call, approval and projection events carry it, and so do
//! capabilities; failed builds, replacements, revocations and restorations are audited, to
//! the sink and through `tracing`.

mod tracing_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use registry_core::approval::Verdict;
use registry_core::server::RegistryExt;
use registry_core::{
    DynamicTool, ErrorKind, Fingerprint, Registry, RegistryBuilder, Subject, Tool, ToolCall,
    approval::MemoryApprovalStore,
    audit::{
        AUDIT_TARGET, AuditEvent, ChangeAttempt, ChangeRefusedEvent, PROJECTED_TOOLS,
        REFUSAL_PROBLEMS,
    },
    change::ReplaceOptions,
};
use serde_json::{Value, json};
use tracing_support::{traced, traced_here};

type Events = Arc<Mutex<Vec<AuditEvent>>>;

/// A sink recording every event, and the events it records.
fn recording() -> (impl Fn(&AuditEvent) + Send + Sync + 'static, Events) {
    let events = Events::default();
    let sink = {
        let events = events.clone();
        move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
    };
    (sink, events)
}

/// `lookup` under `records:read`, answering `answer`.
fn lookup(answer: &'static str) -> DynamicTool {
    DynamicTool::new("lookup", "Look a record up by its id.")
        .parameters(json!({
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "required": ["id"],
            "additionalProperties": false
        }))
        .scopes(["records:read"])
        .handler(move |_, _| Ok::<_, String>(json!(answer)))
}

fn built(tool: DynamicTool) -> Tool {
    Registry::builder()
        .tool(tool)
        .build()
        .unwrap()
        .get("lookup")
        .unwrap()
}

fn reader() -> Subject {
    Subject::new("acme").with_scopes(["records:read", "records:audit"])
}

fn call(id: &str) -> ToolCall {
    ToolCall::new(id, "lookup", json!({"id": "r-1"}))
}

fn refusals(events: &Events) -> Vec<ChangeRefusedEvent> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            AuditEvent::ChangeRefused(refused) => Some(refused.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_version_fingerprint_covers_scopes_tenants_and_every_gate_flag() {
    let base = built(lookup("a"));
    // The same declaration, built again, and another handler: the same version.
    assert_eq!(
        built(lookup("a")).version_fingerprint(),
        base.version_fingerprint()
    );
    assert_eq!(
        built(lookup("b")).version_fingerprint(),
        base.version_fingerprint()
    );
    let variants: Vec<(&str, DynamicTool)> = vec![
        (
            "scopes",
            lookup("a").scopes(["records:read", "records:audit"]),
        ),
        ("tenants", lookup("a").tenants(["acme"])),
        ("needs_approval", lookup("a").needs_approval()),
        ("rate_limit", lookup("a").rate_limit("10/min")),
        ("timeout", lookup("a").timeout(Duration::from_secs(3))),
        ("namespace", lookup("a").namespace("archive")),
        ("always_loaded", lookup("a").always_loaded()),
        (
            "allow_description",
            lookup("a").allow_description("reviewed"),
        ),
        (
            "output_schema",
            lookup("a").output_schema(json!({"type": "object"})),
        ),
    ];
    let mut seen = vec![base.version_fingerprint()];
    for (what, variant) in variants {
        let tool = built(variant);
        // The model is shown the same...
        assert_eq!(tool.fingerprint(), base.fingerprint(), "{what}");
        // ...but it is another version, unlike every other.
        assert!(
            !seen.contains(&tool.version_fingerprint()),
            "{what}: {}",
            tool.version_fingerprint()
        );
        seen.push(tool.version_fingerprint());
    }
    // What the model is shown changes both.
    for (what, variant) in [
        ("hints", lookup("a").read_only()),
        ("title", lookup("a").title("Lookup")),
    ] {
        let tool = built(variant);
        assert_ne!(tool.fingerprint(), base.fingerprint(), "{what}");
        assert!(!seen.contains(&tool.version_fingerprint()), "{what}");
    }
}

#[test]
fn call_events_carry_the_version_that_ran() {
    let (sink, events) = recording();
    let registry = Registry::builder()
        .tool(lookup("v1"))
        .audit_sink(sink)
        .build()
        .unwrap();
    let v1 = registry.get("lookup").unwrap().version_fingerprint();
    let old = registry.open_run("run-old", &reader());
    // A version the model is shown alike, with another scope.
    registry
        .replace(
            lookup("v2").scopes(["records:read", "records:audit"]),
            ReplaceOptions::keep_old_runs("audited reads"),
        )
        .unwrap();
    let v2 = registry.get("lookup").unwrap().version_fingerprint();
    assert_ne!(v1, v2);
    let new = registry.open_run("run-new", &reader());
    assert_eq!(old.allowed().fingerprint(), new.allowed().fingerprint());
    assert_ne!(
        old.allowed().version_fingerprint(),
        new.allowed().version_fingerprint()
    );

    assert_eq!(old.call_blocking(call("c1")).json(), &json!("v1"));
    assert_eq!(new.call_blocking(call("c2")).json(), &json!("v2"));
    let refused = new.call_blocking(ToolCall::new("c3", "lookup", json!({"id": 7})));
    assert_eq!(refused.error_kind(), Some(ErrorKind::InvalidArguments));
    let unknown = new.call_blocking(ToolCall::new("c4", "nothing", json!({})));
    assert_eq!(unknown.error_kind(), Some(ErrorKind::UnknownTool));
    registry.revoke("lookup", "incident").unwrap();
    let revoked = old.call_blocking(call("c5"));
    assert_eq!(revoked.error_kind(), Some(ErrorKind::Revoked));

    let versions: Vec<(String, Option<Fingerprint>)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            AuditEvent::Call(call) => Some((call.call_id.clone(), call.tool_version)),
            _ => None,
        })
        .collect();
    assert_eq!(
        versions,
        [
            ("c1".to_owned(), Some(v1)),
            ("c2".to_owned(), Some(v2)),
            ("c3".to_owned(), Some(v2)),
            ("c4".to_owned(), None),
            ("c5".to_owned(), Some(v1)),
        ]
    );
    let json = serde_json::to_value(
        events
            .lock()
            .unwrap()
            .iter()
            .find(|event| matches!(event, AuditEvent::Call(_)))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(json["tool_version"], v1.to_string());
}

#[test]
fn the_change_events_name_both_versions() {
    let (sink, events) = recording();
    let registry = Registry::builder()
        .tool(lookup("v1"))
        .audit_sink(sink)
        .build()
        .unwrap();
    let v1 = registry.get("lookup").unwrap().version_fingerprint();
    let replaced = registry
        .replace(
            lookup("v2").rate_limit("5/min"),
            ReplaceOptions::revoke_old_runs("slower"),
        )
        .unwrap();
    let v2 = registry.get("lookup").unwrap().version_fingerprint();
    assert_eq!((replaced.old_version, replaced.new_version), (v1, Some(v2)));
    let revoked = registry.revoke("lookup", "incident").unwrap();
    assert_eq!((revoked.old_version, revoked.new_version), (v2, None));
    let restored = registry.restore("lookup", "over").unwrap();
    assert_eq!((restored.old_version, restored.new_version), (v2, Some(v2)));
    let json: Vec<Value> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|event| matches!(event, AuditEvent::Change(_)))
        .map(|event| serde_json::to_value(event).unwrap())
        .collect();
    assert_eq!(json[0]["change"]["old_version"], v1.to_string());
    assert_eq!(json[0]["change"]["new_version"], v2.to_string());
    assert_eq!(json[1]["change"]["new_version"], Value::Null);
}

#[test]
fn projection_events_list_each_visible_tool_by_version() {
    let (sink, events) = recording();
    let registry = Registry::builder()
        .tool(lookup("v1"))
        .tool(
            DynamicTool::new("purge", "Purge a record.")
                .scopes(["records:admin"])
                .handler(|_, _| Ok::<_, String>(json!("purged"))),
        )
        .audit_sink(sink)
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &reader());
    let events = events.lock().unwrap();
    let AuditEvent::Projection(projection) = &events[0] else {
        panic!("{:?}", events[0]);
    };
    assert_eq!(projection.versions, run.allowed().version_fingerprint());
    let tools: Vec<(&str, Fingerprint)> = projection
        .tools
        .iter()
        .map(|tool| (tool.name.as_str(), tool.version))
        .collect();
    assert_eq!(
        tools,
        [(
            "lookup",
            registry.get("lookup").unwrap().version_fingerprint()
        )]
    );
    // The capabilities say the same.
    let capabilities: Vec<(&str, Fingerprint)> = run
        .capabilities()
        .map(|capability| (capability.definition.name.as_str(), capability.version))
        .collect();
    assert_eq!(capabilities, tools);
    let hits = run.search("look up a record", 5);
    assert_eq!(hits[0].capability().version, tools[0].1);
}

#[test]
fn a_projection_lists_at_most_its_bound_of_tools() {
    let (sink, events) = recording();
    let count = PROJECTED_TOOLS + 44;
    let builder = (0..count).fold(Registry::builder().audit_sink(sink), |builder, index| {
        builder.tool(
            DynamicTool::new(format!("tool_{index:03}"), "Answer one.")
                .scopes(["many:read"])
                .handler(|_, _| Ok::<_, String>(json!(1))),
        )
    });
    let registry = builder.build().unwrap();
    let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["many:read"]));
    let events = events.lock().unwrap();
    let AuditEvent::Projection(projection) = &events[0] else {
        panic!("{:?}", events[0]);
    };
    assert_eq!(projection.visible, count);
    assert_eq!(projection.tools.len(), PROJECTED_TOOLS);
    assert_eq!(projection.tools[0].name, "tool_000");
    // The digest still covers every one.
    assert_eq!(projection.versions, run.allowed().version_fingerprint());
}

#[test]
fn approvals_are_bound_to_the_version_and_their_events_carry_it() {
    let store = Arc::new(MemoryApprovalStore::default());
    let (sink, events) = recording();
    let gated = |limit: &str| lookup("ran").needs_approval().rate_limit(limit);
    let a = Registry::builder()
        .tool(gated("10/min"))
        .approval_store(store.clone())
        .audit_sink(sink)
        .build()
        .unwrap();
    // Another replica, sharing the store, with another version the model is shown alike.
    let b = Registry::builder()
        .tool(gated("1000/min"))
        .approval_store(store.clone())
        .build()
        .unwrap();
    let version = a.get("lookup").unwrap().version_fingerprint();
    assert_ne!(b.get("lookup").unwrap().version_fingerprint(), version);

    let run_a = a.open_run("run-1", &reader());
    let asked = run_a.call_blocking(call("c1"));
    assert_eq!(asked.error_kind(), Some(ErrorKind::ApprovalRequired));
    let request = asked.approval().unwrap().clone();
    assert_eq!(request.tool_version(), version);
    let run_b = b.open_run("run-1", &reader());
    assert_eq!(run_b.allowed().fingerprint(), run_a.allowed().fingerprint());
    // The version that would run there is not the one asked for: nothing runs.
    let refused = run_b
        .decide_blocking(request.id(), Verdict::approve())
        .unwrap()
        .into_answer()
        .unwrap();
    assert_eq!(
        refused.error_kind(),
        Some(ErrorKind::Revoked),
        "{refused:?}"
    );

    let second = run_a.call_blocking(call("c2"));
    let id = second.approval().unwrap().id().to_owned();
    let done = run_a
        .decide_blocking(&id, Verdict::approve())
        .unwrap()
        .into_answer()
        .unwrap();
    assert_eq!(done.json(), &json!("ran"));
    let approvals: Vec<(String, Fingerprint)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            AuditEvent::Approval(approval) => {
                Some((approval.kind.as_str().to_owned(), approval.tool_version))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        approvals,
        [
            ("requested".to_owned(), version),
            ("requested".to_owned(), version),
            ("approved".to_owned(), version),
        ]
    );
}

#[test]
fn a_failed_build_reaches_the_builders_sink_and_tracing() {
    traced();
    let (sink, events) = recording();
    let twice = || {
        DynamicTool::new("twice", "Answer one.")
            .scopes(["x:read"])
            .handler(|_, _| Ok::<_, String>(json!(1)))
    };
    let error = Registry::builder()
        .tool(twice())
        .tool(twice())
        .require(["missing_tool"])
        .audit_sink(sink)
        .build()
        .unwrap_err();
    let refused = refusals(&events);
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].attempt, ChangeAttempt::Build);
    assert_eq!(refused[0].tool, None);
    assert_eq!(refused[0].problem_count, error.problems().len());
    assert_eq!(refused[0].problems.len(), 2);
    assert!(refused[0].problems[0].contains("two tools are named \"twice\""));
    assert!(refused[0].problems[1].contains("missing_tool"));
    let json = serde_json::to_value(AuditEvent::ChangeRefused(refused[0].clone())).unwrap();
    assert_eq!(json["event"], "change_refused");
    assert_eq!(json["attempt"], "build");

    let traced = traced_here(AUDIT_TARGET);
    let line = traced
        .iter()
        .find(|event| event.fields.get("event").map(String::as_str) == Some("change_refused"))
        .expect("a change_refused line");
    assert_eq!(line.level, tracing::Level::WARN);
    assert_eq!(line.fields["attempt"], "build");
    assert_eq!(line.fields["problem_count"], "2");
    assert!(line.fields["problems"].contains("missing_tool"));
}

#[test]
fn a_build_refused_after_assembly_is_audited_too() {
    let (sink, events) = recording();
    // Gemini cannot express a recursive schema: found once the registry is assembled.
    let tree = DynamicTool::new("tree", "Walk a tree.")
        .parameters(json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}
            }}
        }))
        .scopes(["trees:read"])
        .handler(|_, _| Ok::<_, String>(json!(1)));
    let error = Registry::builder()
        .tool(tree)
        .require_compatible([registry_core::Profile::Gemini])
        .audit_sink(sink)
        .build()
        .unwrap_err();
    let refused = refusals(&events);
    assert_eq!(refused.len(), 1, "{error}");
    assert_eq!(refused[0].attempt, ChangeAttempt::Build);
    assert!(refused[0].problems[0].contains("tree"), "{:?}", refused[0]);
}

#[test]
fn a_failed_build_lists_at_most_its_bound_of_problems() {
    let (sink, events) = recording();
    let count = REFUSAL_PROBLEMS + 6;
    let builder: RegistryBuilder = Registry::builder().audit_sink(sink);
    let error = builder
        .require((0..count).map(|index| format!("missing_{index}")))
        .build()
        .unwrap_err();
    assert_eq!(error.problems().len(), count);
    let refused = refusals(&events);
    assert_eq!(refused[0].problem_count, count);
    assert_eq!(refused[0].problems.len(), REFUSAL_PROBLEMS);
}

#[test]
fn failed_replacements_revocations_and_restorations_are_audited() {
    traced();
    let (sink, events) = recording();
    let registry = Registry::builder()
        .tool(lookup("v1"))
        .audit_sink(sink)
        .build()
        .unwrap();
    let generation = registry.generation();
    // No handler.
    registry
        .replace(
            DynamicTool::new("lookup", "Look a record up.").scopes(["records:read"]),
            ReplaceOptions::keep_old_runs("broken"),
        )
        .unwrap_err();
    // Nothing of that name.
    registry
        .replace(
            DynamicTool::new("lookups", "Look a record up by its id.")
                .scopes(["records:read"])
                .handler(|_, _| Ok::<_, String>(json!("v2"))),
            ReplaceOptions::keep_old_runs("typo"),
        )
        .unwrap_err();
    let hostile = "look\nup event=call outcome=ok";
    registry.revoke(hostile, "incident").unwrap_err();
    registry.restore("lookup", "not revoked").unwrap_err();
    registry.restore("nothing", "typo").unwrap_err();
    // Long texts are cut to their bounds.
    let long_name = "n".repeat(300);
    registry.revoke(&long_name, "r".repeat(5000)).unwrap_err();
    assert_eq!(registry.generation(), generation);
    assert!(registry.changes().is_empty());

    let refused = refusals(&events);
    let summary: Vec<(ChangeAttempt, Option<&str>, Option<&str>)> = refused[..5]
        .iter()
        .map(|r| (r.attempt, r.tool.as_deref(), r.reason.as_deref()))
        .collect();
    assert_eq!(
        summary,
        [
            (ChangeAttempt::Replace, Some("lookup"), Some("broken")),
            (ChangeAttempt::Replace, Some("lookups"), Some("typo")),
            (ChangeAttempt::Revoke, Some(hostile), Some("incident")),
            (ChangeAttempt::Restore, Some("lookup"), Some("not revoked")),
            (ChangeAttempt::Restore, Some("nothing"), Some("typo")),
        ]
    );
    let cut = &refused[5];
    assert_eq!(cut.tool.as_deref().unwrap().chars().count(), 256 + 3);
    assert_eq!(
        cut.reason.as_deref().unwrap().chars().count(),
        registry_core::audit::REFUSAL_TEXT + 3
    );
    assert!(refused[0].problems[0].contains("handler"), "{refused:?}");
    assert!(refused[1].problems[0].contains("lookups"), "{refused:?}");
    assert!(
        refused[3].problems[0].contains("not revoked"),
        "{refused:?}"
    );
    // In the log, a name cannot start a line of its own.
    let lines = traced_here(AUDIT_TARGET);
    let revoke = lines
        .iter()
        .find(|event| event.fields.get("attempt").map(String::as_str) == Some("revoke"))
        .expect("a change_refused line");
    assert_eq!(revoke.fields["tool"], format!("{hostile:?}"));
    assert!(!revoke.fields["tool"].contains('\n'));
}
