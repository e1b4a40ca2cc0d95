//! One admission for every call: a rule added to the gate (a synchronous `CallPolicy` and an
//! asynchronous `AsyncCallPolicy`, each refusing one value of an argument) holds on all four
//! paths a call runs by: `Run::call`, `Run::call_blocking`, `Run::start_task`, and a call a
//! person approved with arguments they edited to the refused value. A real registry, real
//! calls, and the tools' executions counted, so that "nothing ran" is checked.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use registry_core::approval::{ApprovalState, MemoryApprovalStore, Verdict};
use registry_core::audit::{AuditEvent, CallEvent};
use registry_core::definition::BoxFuture;
use registry_core::gate::{AsyncCallPolicy, CallPolicy, CallRequest, Decision, Determined};
use registry_core::{DynamicTool, ErrorKind, Observation, Registry, Run, Subject, ToolCall};
use serde_json::{Value, json};

/// Refuses a call whose `project` is `billing`.
struct FrozenBilling;

impl CallPolicy for FrozenBilling {
    fn decide(&self, call: &CallRequest<'_>) -> Decision {
        self.determine(call).decision
    }

    fn determine(&self, call: &CallRequest<'_>) -> Determined {
        match call.arguments()["project"].as_str() {
            Some("billing") => Determined::new(
                Decision::Deny("billing is frozen".into()),
                vec!["frozen-billing".into()],
            ),
            _ => Determined::new(Decision::Allow, Vec::new()),
        }
    }
}

/// Refuses, from afar, a call whose `project` is `ledger`.
struct RemoteLedger;

impl AsyncCallPolicy for RemoteLedger {
    fn determine<'a>(&'a self, call: CallRequest<'a>) -> BoxFuture<'a, Determined> {
        Box::pin(async move {
            match call.arguments()["project"].as_str() {
                Some("ledger") => Determined::new(
                    Decision::Deny("the ledger is closed".into()),
                    vec!["remote-ledger".into()],
                ),
                _ => Determined::new(Decision::Allow, Vec::new()),
            }
        })
    }
}

/// Every execution of the tools: their arguments.
#[derive(Clone, Default)]
struct Executions(Arc<Mutex<Vec<Value>>>);

impl Executions {
    fn all(&self) -> Vec<Value> {
        self.0.lock().unwrap().clone()
    }
}

/// Every call event of the audit log.
#[derive(Clone, Default)]
struct Calls(Arc<Mutex<Vec<CallEvent>>>);

impl Calls {
    fn of(&self, call_id: &str) -> CallEvent {
        let calls = self.0.lock().unwrap();
        let found = calls.iter().rev().find(|call| call.call_id == call_id);
        found
            .cloned()
            .unwrap_or_else(|| panic!("no call event for {call_id}"))
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"project": {"type": "string"}},
        "required": ["project"],
        "additionalProperties": false
    })
}

/// `ship` (may run as a task) and `deploy` (needs a person's approval), counted; the two
/// policies; the call events recorded.
fn registry(executions: &Executions, calls: &Calls, store: Arc<MemoryApprovalStore>) -> Registry {
    let counted = || {
        let executions = executions.clone();
        move |_: &registry_core::ToolContext, args: Value| {
            executions.0.lock().unwrap().push(args.clone());
            Ok::<_, String>(json!("done"))
        }
    };
    let calls = calls.clone();
    Registry::builder()
        .tool(
            DynamicTool::new("ship", "Ship a project.")
                .parameters(schema())
                .public()
                .task()
                .handler(counted()),
        )
        .tool(
            DynamicTool::new("deploy", "Deploy a project.")
                .parameters(schema())
                .public()
                .needs_approval()
                .handler(counted()),
        )
        .call_policy(FrozenBilling)
        .async_call_policy(RemoteLedger, Duration::from_secs(5))
        .approval_store(store)
        .audit_sink(move |event: &AuditEvent| {
            if let AuditEvent::Call(call) = event {
                calls.0.lock().unwrap().push(call.clone());
            }
        })
        .build()
        .expect("builds")
}

fn project(id: &str, tool: &str, project: &str) -> ToolCall {
    ToolCall::new(id, tool, json!({ "project": project }))
}

/// The four paths, each answering a call to `ship` (or, approved, to `deploy`) with
/// `project`: the model's answer to it.
fn on_every_path(run: &Run, project_name: &str) -> [(&'static str, Observation); 4] {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let called = runtime.block_on(run.call(project("c-async", "ship", project_name)));
    let blocking = run.call_blocking(project("c-blocking", "ship", project_name));
    let task = match run.start_task_blocking(project("c-task", "ship", project_name)) {
        Ok(task) => runtime.block_on(run.wait_task(task.id())).expect("ends"),
        Err(refused) => refused,
    };
    // A person is asked about a harmless call, and approves it edited to `project`.
    let asked = run.call_blocking(project("c-approved", "deploy", "web"));
    assert_eq!(
        asked.error_kind(),
        Some(ErrorKind::ApprovalRequired),
        "{asked:?}"
    );
    let id = asked.approval().expect("a request").id().to_owned();
    let edited = Verdict::approve()
        .by("ana")
        .with_arguments(json!({ "project": project_name }));
    let approved = run
        .decide_blocking(&id, edited)
        .expect("settled")
        .into_answer()
        .unwrap();
    [
        ("Run::call", called),
        ("Run::call_blocking", blocking),
        ("Run::start_task", task),
        ("an approved call, edited", approved),
    ]
}

#[test]
fn a_rule_of_the_gate_holds_on_every_path_a_call_runs_by() {
    let executions = Executions::default();
    let calls = Calls::default();
    let store = Arc::new(MemoryApprovalStore::new());
    let registry = registry(&executions, &calls, store.clone());
    let run = registry.open_run("run-1", &Subject::new("acme"));

    // Allowed: it runs on every path, so the refusals below are the rule's.
    for (path, answer) in on_every_path(&run, "web") {
        assert_eq!(answer.json(), &json!("done"), "{path}: {answer:?}");
    }
    assert_eq!(executions.all().len(), 4);

    for (project, reason, policy) in [
        ("billing", "billing is frozen", "frozen-billing"),
        ("ledger", "the ledger is closed", "remote-ledger"),
    ] {
        for (path, answer) in on_every_path(&run, project) {
            assert_eq!(
                answer.error_kind(),
                Some(ErrorKind::Denied),
                "{path}, {project}: {answer:?}"
            );
            assert!(
                answer.error_text().unwrap().contains(reason),
                "{path}, {project}: {answer:?}"
            );
            // The audit log names the rule that refused, on every path.
            let event = calls.of(answer.call_id());
            assert_eq!(event.policies, [policy], "{path}, {project}: {event:?}");
        }
    }
    assert_eq!(executions.all().len(), 4, "a refused call ran");

    // The person's approvals the rule refused are denied, so no later verdict runs them.
    let denied = store
        .requests()
        .into_iter()
        .filter(|(_, state)| matches!(state, ApprovalState::Denied { .. }))
        .count();
    assert_eq!(denied, 2);
}

/// A rule that changed while a person decided (here a freeze switched on after the request)
/// holds for the call they approved, arguments unedited: the approved call passes the gate
/// again.
#[test]
fn a_rule_that_changed_while_a_person_decided_holds_for_the_approved_call() {
    struct Freeze(Arc<AtomicBool>);

    impl CallPolicy for Freeze {
        fn decide(&self, _: &CallRequest<'_>) -> Decision {
            if self.0.load(Ordering::SeqCst) {
                Decision::Deny("deploys are frozen".into())
            } else {
                Decision::Allow
            }
        }
    }

    let executions = Executions::default();
    let freeze = Arc::new(AtomicBool::new(false));
    let counted = {
        let executions = executions.clone();
        move |_: &registry_core::ToolContext, args: Value| {
            executions.0.lock().unwrap().push(args.clone());
            Ok::<_, String>(json!("done"))
        }
    };
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("deploy", "Deploy a project.")
                .parameters(schema())
                .public()
                .needs_approval()
                .handler(counted),
        )
        .call_policy(Freeze(freeze.clone()))
        .build()
        .expect("builds");
    let run = registry.open_run("run-1", &Subject::new("acme"));
    let asked = run.call_blocking(project("c1", "deploy", "web"));
    let id = asked.approval().expect("a request").id().to_owned();

    freeze.store(true, Ordering::SeqCst);
    let answer = run
        .decide_blocking(&id, Verdict::approve().by("ana"))
        .expect("settled")
        .into_answer()
        .unwrap();
    assert_eq!(answer.error_kind(), Some(ErrorKind::Denied), "{answer:?}");
    assert!(answer.error_text().unwrap().contains("deploys are frozen"));
    assert!(executions.all().is_empty(), "the frozen deploy ran");
}
