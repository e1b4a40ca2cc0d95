//! What a deferred session's `search_tools` answer tells the model, and what it audits:
//!
//! - hits grouped by namespace, in the order of their best hit;
//! - a weak query (the best hit matches few of its words) says how to narrow it, naming the
//!   run's namespaces; a query nothing matches well loads nothing and says so;
//! - a search that found nothing, or whose tools were not called before the next search or
//!   the session's end, is audited (`AuditEvent::Discovery`), with the query's size and hash
//!   only; one whose tool was then called is not.

use std::sync::{Arc, Mutex};

use registry_core::audit::{AuditEvent, DiscoveryKind};
use registry_core::deferred::{DeferredOptions, SearchCall, SessionCall};
use registry_core::{DynamicTool, Profile, Registry, Subject};
use serde_json::{Value, json};

fn tool(name: &str, namespace: &str, description: &str) -> DynamicTool {
    DynamicTool::new(name, description)
        .public()
        .namespace(namespace)
        .handler(|_ctx, _args| Ok::<_, String>(Value::Null))
}

type Events = Arc<Mutex<Vec<AuditEvent>>>;

fn registry() -> (Registry, Events) {
    let events: Events = Arc::default();
    let sink = Arc::clone(&events);
    let registry = Registry::builder()
        .tool(tool(
            "create_issue",
            "tracker",
            "Create an issue in a project.",
        ))
        .tool(tool(
            "list_issues",
            "tracker",
            "List the issues of a project.",
        ))
        .tool(tool(
            "create_invoice",
            "billing",
            "Create an invoice for a customer.",
        ))
        .tool(tool(
            "list_invoices",
            "billing",
            "List a customer's invoices.",
        ))
        .tool(tool("send_message", "chat", "Send a message to a channel."))
        .audit_sink(move |event: &AuditEvent| sink.lock().unwrap().push(event.clone()))
        .build()
        .unwrap();
    (registry, events)
}

/// The JSON text of an MCP answer.
fn text(answer: &Value) -> Value {
    serde_json::from_str(answer["content"][0]["text"].as_str().unwrap()).unwrap()
}

fn discoveries(events: &Events) -> Vec<(DiscoveryKind, String, Vec<String>)> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            AuditEvent::Discovery(d) => Some((d.kind, d.call_id.clone(), d.found.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn hits_are_grouped_by_namespace() {
    let (registry, _) = registry();
    let run = registry.open_run("r", &Subject::new("acme"));
    let session = run.deferred(Profile::Mcp, DeferredOptions::new().results(4));
    let answer = session.search(&SearchCall::new(
        "s1",
        json!({"query": "create an issue or an invoice"}),
    ));
    let found = text(answer.message());
    let groups: Vec<&str> = found["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|group| group["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(groups.len(), 2, "{found}");
    assert!(
        groups.contains(&"tracker") && groups.contains(&"billing"),
        "{found}"
    );
    for group in found["namespaces"].as_array().unwrap() {
        for tool in group["tools"].as_array().unwrap() {
            let name = tool["name"].as_str().unwrap();
            let namespace = group["namespace"].as_str().unwrap();
            assert_eq!(
                registry.get(name).unwrap().settings().namespace.as_deref(),
                Some(namespace)
            );
        }
    }
    let note = found["note"].as_str().unwrap();
    assert!(note.starts_with("These tools are loaded"), "{note}");
    assert!(
        !note.contains("only in part"),
        "a good query is not weak: {note}"
    );
}

#[test]
fn a_weak_query_says_how_to_narrow_it_and_noise_is_not_returned() {
    let (registry, _) = registry();
    let run = registry.open_run("r", &Subject::new("acme"));
    let session = run.deferred(Profile::Mcp, DeferredOptions::new());

    // One word of three matches: weak, still answered, with how to narrow it.
    let answer = session.search(&SearchCall::new(
        "s1",
        json!({"query": "customer satisfaction survey"}),
    ));
    assert!(!answer.hits().is_empty());
    let note = text(answer.message())["note"].as_str().unwrap().to_owned();
    assert!(note.contains("only in part"), "{note}");
    assert!(note.contains("billing, chat, tracker"), "{note}");

    // One word of six: noise. Nothing is loaded, and the answer says so.
    let answer = session.search(&SearchCall::new(
        "s2",
        json!({"query": "book a flight to lisbon for the customer next tuesday morning"}),
    ));
    assert!(answer.hits().is_empty() && answer.loaded().is_empty());
    let found = text(answer.message());
    assert_eq!(found["namespaces"], json!([]));
    let note = found["note"].as_str().unwrap();
    assert!(
        note.starts_with("No tool matches this query well"),
        "{note}"
    );
    assert!(
        note.contains("name a group: billing, chat, tracker"),
        "{note}"
    );
    assert!(!answer.export_changed());
}

#[test]
fn searches_that_led_to_no_call_are_audited() {
    let (registry, events) = registry();
    let run = registry.open_run("r", &Subject::new("acme").with_principal("ada"));
    let session = run.deferred(Profile::Mcp, DeferredOptions::new().results(2));

    // Found, then called: not audited.
    let _ = session.search(&SearchCall::new("s1", json!({"query": "send a message"})));
    session.called("send_message");
    // Found, not called before the next search: audited then.
    let _ = session.search(&SearchCall::new("s2", json!({"query": "list the issues"})));
    assert!(discoveries(&events).is_empty());
    let _ = session.search(&SearchCall::new(
        "s3",
        json!({"query": "create an invoice"}),
    ));
    let recorded = discoveries(&events);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0].0, DiscoveryKind::NotCalled);
    assert_eq!(recorded[0].1, "s2");
    assert!(recorded[0].2.contains(&"list_issues".to_owned()));

    // Nothing found: audited at once. The query's text is never recorded.
    let secret = "zzqx private words of the user";
    let _ = session.search(&SearchCall::new("s4", json!({"query": secret})));
    let recorded = discoveries(&events);
    assert_eq!(
        recorded.len(),
        3,
        "s3 is superseded by s4, which found nothing: {recorded:?}"
    );
    assert_eq!(
        (recorded[1].0, recorded[1].1.as_str()),
        (DiscoveryKind::NotCalled, "s3")
    );
    assert_eq!(
        (recorded[2].0, recorded[2].1.as_str()),
        (DiscoveryKind::NothingFound, "s4")
    );
    assert!(recorded[2].2.is_empty());
    for event in events.lock().unwrap().iter() {
        let json = serde_json::to_string(event).unwrap();
        assert!(!json.contains("private words"), "{json}");
        if let AuditEvent::Discovery(d) = event {
            assert_eq!(d.run_id, "r");
            assert_eq!(d.principal.as_deref(), Some("ada"));
            assert_eq!(d.query_hash.len(), 16);
        }
    }

    // Found, then the session ends: audited when it is dropped.
    let _ = session.search(&SearchCall::new("s5", json!({"query": "list invoices"})));
    // A call of another tool does not count for it.
    session.called("create_issue");
    drop(session);
    let recorded = discoveries(&events);
    assert_eq!(recorded.len(), 4);
    assert_eq!(
        (recorded[3].0, recorded[3].1.as_str()),
        (DiscoveryKind::NotCalled, "s5")
    );
}

#[test]
fn a_call_that_parse_calls_reads_counts_for_the_search_that_found_it() {
    let (registry, events) = registry();
    let run = registry.open_run("r", &Subject::new("acme"));
    let session = run.deferred(
        Profile::OpenAiChat { strict: false },
        DeferredOptions::new(),
    );
    let response = |name: &str, arguments: &str| {
        json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": name, "arguments": arguments}}]})
    };
    let calls = session
        .parse_calls(&response("search_tools", r#"{"query": "send a message"}"#))
        .unwrap();
    let [SessionCall::Search(search)] = calls.as_slice() else {
        panic!("one search: {calls:?}")
    };
    assert_eq!(session.search(search).loaded()[0], "send_message");
    let calls = session
        .parse_calls(&response("send_message", "{}"))
        .unwrap();
    assert!(matches!(calls.as_slice(), [SessionCall::Call(_)]));
    drop(session);
    assert!(
        discoveries(&events).is_empty(),
        "{:?}",
        discoveries(&events)
    );
}
