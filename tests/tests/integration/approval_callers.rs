//! Who made a call travels with it: onto its audit event, onto the approval request it
//! waits on, and onto the call resumed after the approval.

use registry_core::{
    DynamicTool, ErrorKind, Registry, Subject, ToolCall, approval::Verdict, audit::AuditEvent,
    call::Caller,
};
use serde_json::json;

use registry_tests::audit::{Events, calls};

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
            .needs_approval()
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
