//! The gate, attacked: a table of hostile approval, policy and quota cases, each run through
//! the synchronous and the asynchronous path with the exact outcome expected, and the tool's
//! executions counted, so that "nothing ran" is checked rather than assumed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use registry_core::approval::{Settled, Verdict};
use registry_core::server::RegistryExt;
use registry_core::{
    DynamicTool, ErrorKind, Observation, Registry, RegistryBuilder, Run, Subject, ToolCall,
    approval::{
        ApprovalError, ApprovalRequest, ApprovalState, ApprovalStore, Insertion,
        MemoryApprovalStore, Transition,
    },
    audit::{ApprovalEvent, ApprovalEventKind, AuditEvent},
    change::ReplaceOptions,
    definition::BoxFuture,
    gate::{CallRequest, Decision, QuotaDecision, QuotaKey, QuotaStore, RateLimit, StoreError},
};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy)]
enum Mode {
    Sync,
    Async,
}

const MODES: [Mode; 2] = [Mode::Sync, Mode::Async];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn call(mode: Mode, run: &Run, call: ToolCall) -> Observation {
    match mode {
        Mode::Sync => run.call_blocking(call),
        Mode::Async => runtime().block_on(run.call(call)),
    }
}

/// The answer a call's request was settled with.
fn answered(settled: Settled) -> Observation {
    settled.into_answer().expect("a call's request is answered")
}

fn approve(mode: Mode, run: &Run, id: &str) -> Result<Observation, ApprovalError> {
    match mode {
        Mode::Sync => run.decide_blocking(id, Verdict::approve()),
        Mode::Async => runtime().block_on(run.decide(id, Verdict::approve())),
    }
    .map(answered)
}

fn approve_with(
    mode: Mode,
    run: &Run,
    id: &str,
    arguments: Value,
) -> Result<Observation, ApprovalError> {
    match mode {
        Mode::Sync => run.decide_blocking(id, Verdict::approve().with_arguments(arguments)),
        Mode::Async => {
            runtime().block_on(run.decide(id, Verdict::approve().with_arguments(arguments)))
        }
    }
    .map(answered)
}

fn deny(mode: Mode, run: &Run, id: &str, reason: &str) -> Result<Observation, ApprovalError> {
    match mode {
        Mode::Sync => run.decide_blocking(id, Verdict::deny(reason)),
        Mode::Async => runtime().block_on(run.decide(id, Verdict::deny(reason))),
    }
    .map(answered)
}

/// Every execution of the test tools: (tool, arguments).
#[derive(Clone, Default)]
struct Executions(Arc<Mutex<Vec<(String, Value)>>>);

impl Executions {
    fn of(&self, tool: &str) -> Vec<Value> {
        let all = self.0.lock().unwrap();
        all.iter()
            .filter(|(name, _)| name == tool)
            .map(|(_, args)| args.clone())
            .collect()
    }

    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

fn env_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "project": {"type": "string"},
            "env": {"enum": ["staging", "production"]}
        },
        "required": ["project", "env"],
        "additionalProperties": false
    })
}

/// `deploy` (needs approval), `status` (free), `ping` (rate limited 2/s), all counted.
fn tools(executions: &Executions) -> Vec<DynamicTool> {
    let counted = |name: &'static str| {
        let executions = executions.clone();
        move |_: &registry_core::ToolContext, args: Value| {
            executions
                .0
                .lock()
                .unwrap()
                .push((name.into(), args.clone()));
            Ok::<_, String>(json!(format!("{name} ran with {args}")))
        }
    };
    vec![
        DynamicTool::new("deploy", "Deploy a project.")
            .parameters(env_schema())
            .scopes(["deploy:write"])
            .destructive()
            .needs_approval()
            .handler(counted("deploy")),
        DynamicTool::new("release", "Release a project to an environment.")
            .parameters(env_schema())
            .scopes(["deploy:write"])
            .handler(counted("release")),
        DynamicTool::new("status", "Read the status.")
            .public()
            .read_only()
            .handler(counted("status")),
        DynamicTool::new("ping", "Answer pong.")
            .public()
            .read_only()
            .rate_limit("2/s")
            .handler(counted("ping")),
    ]
}

fn builder(executions: &Executions) -> RegistryBuilder {
    tools(executions)
        .into_iter()
        .fold(Registry::builder(), RegistryBuilder::tool)
}

fn subject() -> Subject {
    Subject::new("acme")
        .with_scopes(["deploy:write"])
        .with_agent("release-bot")
}

fn deploy(id: &str, env: &str) -> ToolCall {
    ToolCall::new(id, "deploy", json!({"project": "web", "env": env}))
}

/// A pending request from `run`.
fn pending(mode: Mode, run: &Run, id: &str) -> ApprovalRequest {
    let observation = call(mode, run, deploy(id, "production"));
    assert_eq!(
        observation.error_kind(),
        Some(ErrorKind::ApprovalRequired),
        "{observation:?}"
    );
    observation.approval().expect("a request").clone()
}

#[test]
fn a_call_that_needs_approval_runs_nothing_and_says_so() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions).build().unwrap();
        let run = registry.open_run("run-1", &subject());
        let observation = call(mode, &run, deploy("c1", "production"));
        assert_eq!(observation.error_kind(), Some(ErrorKind::ApprovalRequired));
        assert_eq!(executions.count(), 0, "{mode:?}");
        let text = observation.error_text().unwrap();
        assert!(text.contains("needs a person's approval"), "{text}");
        assert!(text.contains("nothing was done"), "{text}");
        let request = observation.approval().unwrap();
        assert!(request.id().starts_with("apr_") && request.id().len() == 36);
        assert_eq!(request.tool_name(), "deploy");
        assert_eq!(request.call_id(), "c1");
        assert_eq!(
            request.arguments(),
            &json!({"project": "web", "env": "production"})
        );
        assert_eq!(request.allowed_set(), run.allowed().fingerprint());
        assert_eq!(
            request.tool_version(),
            registry.get("deploy").unwrap().version_fingerprint()
        );
        assert!(request.reason().contains("marked as needing approval"));
        assert!(request.expires_at() > request.requested_at());

        let done = approve(mode, &run, request.id()).unwrap();
        assert_eq!(done.call_id(), "c1");
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(
            executions.of("deploy"),
            [json!({"project": "web", "env": "production"})]
        );
    }
}

#[test]
fn concurrent_approvals_execute_exactly_once() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions).build().unwrap();
        let run = Arc::new(registry.open_run("run-1", &subject()));
        let request = pending(mode, &run, "c1");
        let outcomes: Vec<Result<Observation, ApprovalError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let run = run.clone();
                    let id = request.id().to_owned();
                    scope.spawn(move || approve(mode, &run, &id))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners = outcomes.iter().filter(|outcome| outcome.is_ok()).count();
        assert_eq!(winners, 1, "{mode:?}: {outcomes:?}");
        for outcome in outcomes.iter().filter_map(|o| o.as_ref().err()) {
            assert!(
                matches!(
                    outcome,
                    ApprovalError::AlreadyDecided {
                        state: ApprovalState::Approved { .. },
                        ..
                    }
                ),
                "{outcome:?}"
            );
        }
        assert_eq!(executions.of("deploy").len(), 1, "{mode:?}");
    }
}

#[test]
fn another_run_cannot_decide() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions).build().unwrap();
        let run = registry.open_run("run-1", &subject());
        let request = pending(mode, &run, "c1");

        // Another tenant; another agent; a run that sees other tools.
        let others = [
            registry.open_run(
                "run-2",
                &Subject::new("globex")
                    .with_scopes(["deploy:write"])
                    .with_agent("release-bot"),
            ),
            registry.open_run(
                "run-3",
                &Subject::new("acme")
                    .with_scopes(["deploy:write"])
                    .with_agent("intruder"),
            ),
            registry.open_run("run-4", &Subject::new("acme").with_agent("release-bot")),
        ];
        for other in &others {
            let error = approve(mode, other, request.id()).unwrap_err();
            assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
            assert!(error.to_string().contains("another allowed set or subject"));
            let error = deny(mode, other, request.id(), "no").unwrap_err();
            assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
        }
        assert_eq!(executions.count(), 0);

        // A run reopened for the same subject, with the same tools, can.
        let reopened = registry.open_run("run-1-again", &subject());
        assert!(approve(mode, &reopened, request.id()).is_ok());
        assert_eq!(executions.of("deploy").len(), 1);
    }
}

#[test]
fn unknown_ids_are_refused() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions).build().unwrap();
        let run = registry.open_run("run-1", &subject());
        for id in ["", "apr_0", "apr_00000000000000000000000000000000", "x\n\0"] {
            let error = approve(mode, &run, id).unwrap_err();
            assert_eq!(error, ApprovalError::UnknownId { id: id.into() });
            let error = deny(mode, &run, id, "no").unwrap_err();
            assert_eq!(error, ApprovalError::UnknownId { id: id.into() });
        }
        assert_eq!(executions.count(), 0);
    }
}

#[test]
fn an_expired_request_is_settled_and_never_runs() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions)
            .approval_ttl(Duration::from_millis(30))
            .build()
            .unwrap();
        let run = registry.open_run("run-1", &subject());
        let request = pending(mode, &run, "c1");
        std::thread::sleep(Duration::from_millis(60));
        // Expired: `Ok`, since the call is settled; the observation is the model's answer.
        let observation = approve(mode, &run, request.id()).unwrap();
        assert_eq!(observation.call_id(), "c1");
        assert_eq!(observation.error_kind(), Some(ErrorKind::Denied));
        assert!(
            observation
                .error_text()
                .unwrap()
                .contains("no one approved"),
            "{observation:?}"
        );
        // Settled: it stays expired.
        let again = approve(mode, &run, request.id()).unwrap_err();
        assert!(matches!(
            again,
            ApprovalError::AlreadyDecided {
                state: ApprovalState::Expired,
                ..
            }
        ));
        assert_eq!(executions.count(), 0);
    }
}

#[test]
fn a_request_whose_tool_was_revoked_or_replaced_never_runs() {
    for mode in MODES {
        for replaced in [false, true] {
            let executions = Executions::default();
            let registry = builder(&executions).build().unwrap();
            let run = registry.open_run("run-1", &subject());
            let request = pending(mode, &run, "c1");
            if replaced {
                // Even a replacement that lets old runs keep their version: the person
                // approved a version that new runs no longer get.
                let new = DynamicTool::new("deploy", "Deploy a project, v2.")
                    .parameters(env_schema())
                    .scopes(["deploy:write"])
                    .needs_approval()
                    .handler(|_, _| Ok::<_, String>(json!("v2 ran")));
                registry
                    .replace(new, ReplaceOptions::keep_old_runs("v2"))
                    .unwrap();
            } else {
                registry.revoke("deploy", "incident 42").unwrap();
            }
            // Settled as revoked: `Ok`, with the model's answer.
            let observation = approve(mode, &run, request.id()).unwrap();
            assert_eq!(observation.tool_name(), "deploy");
            assert_eq!(observation.error_kind(), Some(ErrorKind::Revoked));
            assert_eq!(observation.call_id(), "c1");
            assert_eq!(executions.count(), 0, "{mode:?} replaced={replaced}");
        }
    }
}

#[test]
fn approve_with_invalid_arguments_keeps_the_request_pending() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions).build().unwrap();
        let run = registry.open_run("run-1", &subject());
        let request = pending(mode, &run, "c1");
        for invalid in [
            json!({"project": "web", "env": "moon"}),
            json!({"project": "web"}),
            json!({"project": "web", "env": "staging", "force": true}),
            json!("not an object"),
        ] {
            let error = approve_with(mode, &run, request.id(), invalid.clone()).unwrap_err();
            let ApprovalError::InvalidArguments { problems, .. } = &error else {
                panic!("{invalid}: {error:?}");
            };
            assert!(!problems.is_empty());
        }
        assert_eq!(executions.count(), 0);
        // Edited to staging: runs with exactly the edited arguments.
        let edited = json!({"project": "web", "env": "staging"});
        let done = approve_with(mode, &run, request.id(), edited.clone()).unwrap();
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(executions.of("deploy"), [edited]);
    }
}

#[test]
fn deny_then_approve_runs_nothing() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions).build().unwrap();
        let run = registry.open_run("run-1", &subject());
        let request = pending(mode, &run, "c1");
        let denied = deny(mode, &run, request.id(), "not during the freeze").unwrap();
        assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));
        assert_eq!(denied.call_id(), "c1");
        assert!(
            denied
                .error_text()
                .unwrap()
                .contains("not during the freeze")
        );
        let error = approve(mode, &run, request.id()).unwrap_err();
        assert!(matches!(
            error,
            ApprovalError::AlreadyDecided {
                state: ApprovalState::Denied { .. },
                ..
            }
        ));
        let error = approve_with(mode, &run, request.id(), request.arguments().clone());
        assert!(error.is_err());
        assert_eq!(executions.count(), 0);
    }
}

#[test]
fn a_policy_that_panics_denies_and_the_process_lives() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions)
            .call_policy(|call: &CallRequest<'_>| {
                if call.tool_name() == "status" {
                    panic!("policy bug");
                }
                Decision::Allow
            })
            .build()
            .unwrap();
        let run = registry.open_run("run-1", &subject());
        let observation = call(mode, &run, ToolCall::new("c1", "status", json!({})));
        assert_eq!(observation.error_kind(), Some(ErrorKind::Denied));
        assert!(!observation.error_text().unwrap().contains("policy bug"));
        assert_eq!(executions.count(), 0);
        // Everything else still works.
        let ping = call(mode, &run, ToolCall::new("c2", "ping", json!({})));
        assert!(!ping.is_error(), "{ping:?}");
    }
}

#[test]
fn quota_exhaustion_and_refill() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions).build().unwrap();
        let run = registry.open_run("run-1", &subject());
        let ping = |id: &str| call(mode, &run, ToolCall::new(id, "ping", json!({})));
        assert!(!ping("c1").is_error());
        assert!(!ping("c2").is_error());
        let limited = ping("c3");
        assert_eq!(limited.error_kind(), Some(ErrorKind::RateLimited));
        let retry = limited.retry_after().expect("a time to retry");
        assert!(
            retry > Duration::ZERO && retry <= Duration::from_millis(500),
            "{retry:?}"
        );
        assert!(limited.error_text().unwrap().contains("try again in"));
        assert_eq!(executions.of("ping").len(), 2);

        // The same tool for another subject has its own bucket.
        let other = registry.open_run("run-2", &Subject::new("globex"));
        assert!(
            !other
                .call_blocking(ToolCall::new("c4", "ping", json!({})))
                .is_error()
        );

        std::thread::sleep(retry + Duration::from_millis(20));
        assert!(!ping("c5").is_error(), "refilled");
        assert_eq!(executions.of("ping").len(), 4);
    }
}

#[test]
fn a_registry_wide_limit_applies_to_tools_without_their_own() {
    let executions = Executions::default();
    let registry = builder(&executions).rate_limit("1/h").build().unwrap();
    let run = registry.open_run("run-1", &subject());
    let status = |id: &str| run.call_blocking(ToolCall::new(id, "status", json!({})));
    assert!(!status("c1").is_error());
    let limited = status("c2");
    assert_eq!(limited.error_kind(), Some(ErrorKind::RateLimited));
    assert!(limited.retry_after().unwrap() > Duration::from_secs(3000));
    // `ping` keeps its own 2/s.
    for id in ["p1", "p2"] {
        assert!(
            !run.call_blocking(ToolCall::new(id, "ping", json!({})))
                .is_error()
        );
    }
}

#[test]
fn budget_exhaustion() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions).build().unwrap();
        let run = registry.open_run("run-1", &subject()).with_call_budget(2);
        let status = |id: &str| call(mode, &run, ToolCall::new(id, "status", json!({})));
        // A refused call does not spend the budget.
        let unknown = call(mode, &run, ToolCall::new("c0", "nope", json!({})));
        assert_eq!(unknown.error_kind(), Some(ErrorKind::UnknownTool));
        assert!(!status("c1").is_error());
        assert!(!status("c2").is_error());
        let spent = status("c3");
        assert_eq!(spent.error_kind(), Some(ErrorKind::RateLimited));
        assert_eq!(spent.retry_after(), None);
        assert!(spent.error_text().unwrap().contains("all 2 tool calls"));
        assert_eq!(executions.count(), 2);
    }
}

#[test]
fn a_policy_sees_validated_calls_and_decides() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let executions = Executions::default();
    let registry = builder(&executions)
        .call_policy({
            let seen = seen.clone();
            move |call: &CallRequest<'_>| {
                seen.lock().unwrap().push((
                    call.run_id().to_owned(),
                    call.call_id().to_owned(),
                    call.tool_name().to_owned(),
                    call.subject().agent().map(str::to_owned),
                    call.arguments().clone(),
                    call.settings().hints.destructive,
                ));
                match (call.tool_name(), call.arguments()["env"].as_str()) {
                    ("release", Some("production")) => {
                        Decision::RequireApproval("a production release".into())
                    }
                    ("release", Some("staging"))
                        if call.subject().agent() != Some("release-bot") =>
                    {
                        Decision::Deny("only the release bot releases".into())
                    }
                    _ => Decision::Allow,
                }
            }
        })
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject());
    let release = |id: &str, env: &str| {
        run.call_blocking(ToolCall::new(
            id,
            "release",
            json!({"project": "web", "env": env}),
        ))
    };
    assert!(!release("c1", "staging").is_error());
    let waiting = release("c2", "production");
    assert_eq!(waiting.error_kind(), Some(ErrorKind::ApprovalRequired));
    assert_eq!(waiting.approval().unwrap().reason(), "a production release");
    // Invalid arguments never reach the policy.
    let invalid = release("c3", "moon");
    assert_eq!(invalid.error_kind(), Some(ErrorKind::InvalidArguments));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        seen[0],
        (
            "run-1".into(),
            "c1".into(),
            "release".into(),
            Some("release-bot".into()),
            json!({"project": "web", "env": "staging"}),
            false
        )
    );

    let intruder = registry.open_run(
        "run-2",
        &Subject::new("acme")
            .with_scopes(["deploy:write"])
            .with_agent("intern"),
    );
    let denied = intruder.call_blocking(ToolCall::new(
        "c4",
        "release",
        json!({"project": "web", "env": "staging"}),
    ));
    assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));
    assert!(
        denied
            .error_text()
            .unwrap()
            .contains("only the release bot releases")
    );
    assert_eq!(executions.of("release").len(), 1);
}

#[test]
fn a_run_policy_only_narrows() {
    let executions = Executions::default();
    let registry = builder(&executions)
        .call_policy(|call: &CallRequest<'_>| match call.tool_name() {
            "ping" => Decision::Deny("the registry says no".into()),
            "status" => Decision::RequireApproval("the registry asks".into()),
            _ => Decision::Allow,
        })
        .build()
        .unwrap();
    // The run allows everything: the registry's denial and approval still hold.
    let lenient = registry
        .open_run("run-1", &subject())
        .with_call_policy(|_: &CallRequest<'_>| Decision::Allow);
    let ping = lenient.call_blocking(ToolCall::new("c1", "ping", json!({})));
    assert_eq!(ping.error_kind(), Some(ErrorKind::Denied));
    let status = lenient.call_blocking(ToolCall::new("c2", "status", json!({})));
    assert_eq!(status.error_kind(), Some(ErrorKind::ApprovalRequired));
    // The run denies what the registry would ask about: the denial wins.
    let strict = registry
        .open_run("run-2", &subject())
        .with_call_policy(|_: &CallRequest<'_>| Decision::Deny("read-only hour".into()));
    let status = strict.call_blocking(ToolCall::new("c3", "status", json!({})));
    assert_eq!(status.error_kind(), Some(ErrorKind::Denied));
    assert!(status.error_text().unwrap().contains("read-only hour"));
    assert_eq!(executions.count(), 0);
}

#[test]
fn an_edited_approval_still_meets_the_policy() {
    let executions = Executions::default();
    let registry = builder(&executions)
        .call_policy(
            |call: &CallRequest<'_>| match call.arguments()["project"].as_str() {
                Some("billing") => Decision::Deny("billing is frozen".into()),
                _ => Decision::Allow,
            },
        )
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject());
    let request = pending(Mode::Sync, &run, "c1");
    let denied = run
        .decide_blocking(
            request.id(),
            Verdict::approve().with_arguments(json!({"project": "billing", "env": "staging"})),
        )
        .unwrap()
        .into_answer()
        .unwrap();
    assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));
    assert!(denied.error_text().unwrap().contains("billing is frozen"));
    assert_eq!(executions.count(), 0);
}

#[test]
fn a_request_survives_a_restart_with_a_shared_store() {
    let store = Arc::new(MemoryApprovalStore::new());
    let executions = Executions::default();
    let first = builder(&executions)
        .approval_store(store.clone())
        .build()
        .unwrap();
    let request = pending(Mode::Sync, &first.open_run("run-1", &subject()), "c1");
    drop(first);

    // The request as a database would keep it.
    let json = serde_json::to_value(&request).unwrap();
    assert_eq!(json["tool_name"], "deploy");
    assert!(json["requested_at_unix_ms"].as_u64().unwrap() > 0);
    let back: ApprovalRequest = serde_json::from_value(json).unwrap();
    assert_eq!(back.id(), request.id());
    assert_eq!(back.allowed_set(), request.allowed_set());
    assert_eq!(back.arguments(), request.arguments());

    let second = builder(&executions)
        .approval_store(store.clone())
        .build()
        .unwrap();
    let reopened = second.open_run("run-1", &subject());
    let done = reopened
        .decide_blocking(request.id(), Verdict::approve().by("alice"))
        .unwrap()
        .into_answer()
        .unwrap();
    assert!(!done.is_error(), "{done:?}");
    assert_eq!(executions.of("deploy").len(), 1);
    let (_, state) = store
        .requests()
        .into_iter()
        .find(|(r, _)| r.id() == request.id())
        .unwrap();
    assert_eq!(
        state,
        ApprovalState::Approved {
            by: Some("alice".into()),
            edited: false
        }
    );
}

#[test]
fn every_step_of_an_approval_is_audited_without_argument_values() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let executions = Executions::default();
    let registry = builder(&executions)
        .audit_sink({
            let events = events.clone();
            move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
        })
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject());
    let first = pending(Mode::Sync, &run, "c1");
    let _ = run
        .decide_blocking(first.id(), Verdict::approve().by("alice"))
        .unwrap()
        .into_answer()
        .unwrap();
    let second = pending(Mode::Sync, &run, "c2");
    let _ = run
        .decide_blocking(
            second.id(),
            Verdict::approve().with_arguments(json!({"project": "web", "env": "staging"})),
        )
        .unwrap()
        .into_answer()
        .unwrap();
    let third = pending(Mode::Sync, &run, "c3");
    let denied = run
        .decide_blocking(third.id(), Verdict::deny("no"))
        .unwrap()
        .into_answer()
        .unwrap();
    assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));

    let events = events.lock().unwrap().clone();
    let approvals: Vec<&ApprovalEvent> = events
        .iter()
        .filter_map(|event| match event {
            AuditEvent::Approval(a) => Some(a),
            _ => None,
        })
        .collect();
    let kinds: Vec<_> = approvals
        .iter()
        .map(|a| (a.kind, a.call_id.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (ApprovalEventKind::Requested, "c1"),
            (ApprovalEventKind::Approved, "c1"),
            (ApprovalEventKind::Requested, "c2"),
            (ApprovalEventKind::Edited, "c2"),
            (ApprovalEventKind::Requested, "c3"),
            (ApprovalEventKind::Denied, "c3"),
        ]
    );
    assert_eq!(approvals[1].by.as_deref(), Some("alice"));
    // The call events carry the request they wait for or ran under.
    let calls: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            AuditEvent::Call(c) => Some((c.call_id.clone(), c.outcome, c.approval_id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 6, "{calls:?}");
    assert_eq!(
        calls[0],
        (
            "c1".into(),
            Some(ErrorKind::ApprovalRequired),
            Some(first.id().into())
        )
    );
    assert_eq!(calls[1], ("c1".into(), None, Some(first.id().into())));
    assert_eq!(
        calls[5],
        (
            "c3".into(),
            Some(ErrorKind::Denied),
            Some(third.id().into())
        )
    );
    let text = format!("{events:?}");
    assert!(
        !text.contains("production"),
        "argument values leaked: {text}"
    );
}

/// A store that always fails.
struct Broken;

impl QuotaStore for Broken {
    fn acquire<'a>(
        &'a self,
        _: QuotaKey<'a>,
        _: RateLimit,
    ) -> BoxFuture<'a, Result<QuotaDecision, StoreError>> {
        Box::pin(async { Err(StoreError::new("connection refused")) })
    }
}

impl ApprovalStore for Broken {
    fn insert<'a>(&'a self, _: &'a ApprovalRequest) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Err(StoreError::new("connection refused")) })
    }

    fn get<'a>(
        &'a self,
        _: &'a str,
    ) -> BoxFuture<'a, Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>> {
        Box::pin(async { Err(StoreError::new("connection refused")) })
    }

    fn decide<'a>(
        &'a self,
        _: &'a str,
        _: ApprovalState,
    ) -> BoxFuture<'a, Result<Transition, StoreError>> {
        Box::pin(async { Err(StoreError::new("connection refused")) })
    }

    fn pending_count<'a>(
        &'a self,
        _: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(async { Err(StoreError::new("connection refused")) })
    }
}

#[test]
fn stores_that_cannot_answer_fail_closed() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions)
            .quota_store(Broken)
            .approval_store(Broken)
            .build()
            .unwrap();
        let run = registry.open_run("run-1", &subject());
        let ping = call(mode, &run, ToolCall::new("c1", "ping", json!({})));
        assert_eq!(ping.error_kind(), Some(ErrorKind::Unavailable));
        let deploy = call(mode, &run, deploy("c2", "staging"));
        assert_eq!(deploy.error_kind(), Some(ErrorKind::Unavailable));
        assert!(deploy.approval().is_none());
        let error = approve(mode, &run, "apr_1").unwrap_err();
        assert!(matches!(error, ApprovalError::Store(_)), "{error:?}");
        // A tool without a limit is not affected.
        assert!(!call(mode, &run, ToolCall::new("c3", "status", json!({}))).is_error());
        assert_eq!(
            executions.of("ping").len() + executions.of("deploy").len(),
            0
        );
    }
}

#[test]
fn a_store_can_be_asked_asynchronously_for_quotas() {
    /// Counts in an async store, with a real await point.
    #[derive(Default)]
    struct Slow(AtomicUsize);
    impl QuotaStore for Slow {
        fn acquire<'a>(
            &'a self,
            _: QuotaKey<'a>,
            limit: RateLimit,
        ) -> BoxFuture<'a, Result<QuotaDecision, StoreError>> {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                let used = self.0.fetch_add(1, Ordering::SeqCst);
                Ok(if used < limit.calls() as usize {
                    QuotaDecision::Granted
                } else {
                    QuotaDecision::Exhausted {
                        retry_after: Duration::from_secs(1),
                    }
                })
            })
        }
    }
    let executions = Executions::default();
    let registry = builder(&executions)
        .quota_store(Slow::default())
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject());
    let outcomes: Vec<_> = runtime().block_on(async {
        let mut outcomes = Vec::new();
        for id in ["c1", "c2", "c3"] {
            outcomes.push(
                run.call(ToolCall::new(id, "ping", json!({})))
                    .await
                    .error_kind(),
            );
        }
        outcomes
    });
    assert_eq!(outcomes, [None, None, Some(ErrorKind::RateLimited)]);
}

#[test]
fn malformed_rate_limits_are_build_problems() {
    let error = Registry::builder()
        .rate_limit("10/week")
        .tool(
            DynamicTool::new("ping", "Answer pong.")
                .public()
                .rate_limit("0/s")
                .handler(|_, _| Ok::<_, String>(json!("pong"))),
        )
        .build()
        .unwrap_err();
    let text = error.to_string();
    assert_eq!(error.problems().len(), 2, "{text}");
    assert!(
        text.contains(r#"the registry's default rate limit: invalid rate limit "10/week": the unit must be `s`, `min` or `h`"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"tool "ping": invalid rate limit "0/s": the number of calls must be at least 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains("tests/tests/gate.rs"),
        "the call sites: {text}"
    );
    // And a limit given as a value needs no parsing.
    let registry = Registry::builder()
        .rate_limit(RateLimit::per_minute(5))
        .allow_empty()
        .build()
        .unwrap();
    assert!(registry.is_empty());
}

fn person(principal: &str) -> Subject {
    subject().with_principal(principal)
}

/// Two people of the same tenant, using the same agent (one OAuth client app): neither
/// decides the other's request, for an approval and a denial alike, and a principal that
/// differs by one hostile character is another principal.
#[test]
fn another_principal_of_the_same_tenant_and_agent_cannot_decide() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions).build().unwrap();
        let alice = registry.open_run("run-alice", &person("token:alice"));
        let request = pending(mode, &alice, "c1");
        assert_eq!(request.principal(), Some("token:alice"));
        assert_eq!(request.tenant(), "acme");
        assert_eq!(request.agent(), Some("release-bot"));

        let intruders = [
            registry.open_run("run-bob", &person("token:bob")),
            // The same tenant, agent and tools, and no principal at all.
            registry.open_run("run-nobody", &subject()),
            registry.open_run("run-nul", &person("token:alice\0")),
            registry.open_run("run-bidi", &person("token:\u{202e}ecila")),
            registry.open_run("run-shy", &person("token:al\u{ad}ice")),
            registry.open_run("run-case", &person("token:Alice")),
            registry.open_run("run-nl", &person("token:alice\n")),
        ];
        for intruder in &intruders {
            // Same tools: the allowed set is not what tells them apart.
            assert_eq!(
                intruder.allowed().fingerprint(),
                alice.allowed().fingerprint()
            );
            let error = approve(mode, intruder, request.id()).unwrap_err();
            assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
            let error = approve_with(
                mode,
                intruder,
                request.id(),
                json!({"project": "web", "env": "staging"}),
            )
            .unwrap_err();
            assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
            let error = deny(mode, intruder, request.id(), "mine now").unwrap_err();
            assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
        }
        assert_eq!(executions.count(), 0);
        let (_, state) = runtime()
            .block_on(registry.approval_request(request.id()))
            .unwrap()
            .unwrap();
        assert!(state.is_pending(), "{state:?}");

        // Alice's own run (or one reopened for her) still decides it.
        let reopened = registry.open_run("run-alice-again", &person("token:alice"));
        let done = approve(mode, &reopened, request.id()).unwrap();
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(executions.of("deploy").len(), 1);

        // Once decided, the intruder learns nothing of how: still "another run".
        let error = deny(mode, &intruders[0], request.id(), "late").unwrap_err();
        assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
        let error = approve(mode, &alice, request.id()).unwrap_err();
        assert!(
            matches!(error, ApprovalError::AlreadyDecided { .. }),
            "{error:?}"
        );

        // Her denial works too.
        let second = pending(mode, &alice, "c2");
        let denied = deny(mode, &alice, second.id(), "not today").unwrap();
        assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));
        assert_eq!(executions.of("deploy").len(), 1);
    }
}

/// A request stored before principals existed has none: only a subject without a principal
/// decides it (fail closed), never one that names somebody.
#[test]
fn a_stored_request_without_a_principal_is_decided_only_without_one() {
    for mode in MODES {
        let executions = Executions::default();
        let store = Arc::new(MemoryApprovalStore::new());
        let registry = builder(&executions)
            .approval_store(store.clone())
            .build()
            .unwrap();
        let alice = registry.open_run("run-alice", &person("token:alice"));
        let made = pending(mode, &alice, "c1");
        // The request as an older version stored it: no `principal` key at all.
        let mut old = serde_json::to_value(&made).unwrap();
        assert_eq!(old["principal"], json!("token:alice"));
        old.as_object_mut().unwrap().remove("principal");
        old["id"] = json!("apr_0123456789abcdef0123456789abcdef");
        let old: ApprovalRequest = serde_json::from_value(old).unwrap();
        assert_eq!(old.principal(), None);
        runtime().block_on(store.insert(&old)).unwrap();

        for named in [&alice, &registry.open_run("run-bob", &person("token:bob"))] {
            let error = approve(mode, named, old.id()).unwrap_err();
            assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
            let error = deny(mode, named, old.id(), "no").unwrap_err();
            assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
        }
        assert_eq!(executions.count(), 0);
        let unnamed = registry.open_run("run-old", &subject());
        assert!(!approve(mode, &unnamed, old.id()).unwrap().is_error());
        assert_eq!(executions.of("deploy").len(), 1);
    }
}

#[test]
fn quotas_are_kept_per_principal() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions).build().unwrap();
        let alice = registry.open_run("run-alice", &person("token:alice"));
        let bob = registry.open_run("run-bob", &person("token:bob"));
        let ping = |run: &Run, id: &str| call(mode, run, ToolCall::new(id, "ping", json!({})));
        assert!(!ping(&alice, "c1").is_error());
        assert!(!ping(&alice, "c2").is_error());
        assert_eq!(
            ping(&alice, "c3").error_kind(),
            Some(ErrorKind::RateLimited)
        );
        // Bob, same tenant and agent, has a bucket of his own; so has the agent alone.
        assert!(!ping(&bob, "c4").is_error());
        assert!(!ping(&bob, "c5").is_error());
        assert_eq!(ping(&bob, "c6").error_kind(), Some(ErrorKind::RateLimited));
        let unnamed = registry.open_run("run-agent", &subject());
        assert!(!ping(&unnamed, "c7").is_error());
        assert_eq!(executions.of("ping").len(), 5);
    }
}

#[test]
fn a_quota_key_with_a_principal_digests_apart() {
    let key = |principal: Option<&'static str>| {
        let key = QuotaKey::new("acme", "ping").with_agent("cli");
        principal.map_or(key, |principal| key.with_principal(principal))
    };
    let digests = [
        key(None).fingerprint(),
        key(Some("alice")).fingerprint(),
        key(Some("bob")).fingerprint(),
        key(Some("")).fingerprint(),
    ];
    for (i, a) in digests.iter().enumerate() {
        for b in &digests[i + 1..] {
            assert_ne!(a, b);
        }
    }
    // Moving bytes between parts makes another key.
    let shifted = QuotaKey::new("acme", "ping").with_agent("clialice");
    assert_ne!(shifted.fingerprint(), key(Some("alice")).fingerprint());
}

#[test]
fn pending_approvals_are_bounded_per_principal() {
    for mode in MODES {
        let executions = Executions::default();
        let store = Arc::new(MemoryApprovalStore::new());
        let registry = builder(&executions)
            .approval_store(store.clone())
            .max_pending_approvals(2)
            .build()
            .unwrap();
        let alice = registry.open_run("run-alice", &person("token:alice"));
        let first = pending(mode, &alice, "c1");
        pending(mode, &alice, "c2");
        let refused = call(mode, &alice, deploy("c3", "production"));
        assert_eq!(
            refused.error_kind(),
            Some(ErrorKind::RateLimited),
            "{refused:?}"
        );
        assert!(refused.approval().is_none());
        let text = refused.error_text().unwrap();
        assert!(text.contains("too many approvals are waiting"), "{text}");
        assert!(text.contains("decide the waiting ones"), "{text}");
        assert_eq!(store.len(), 2, "nothing stored for the refused call");

        // Bob (same tenant and agent) and the agent without a principal have their own.
        let bob = registry.open_run("run-bob", &person("token:bob"));
        pending(mode, &bob, "c4");
        let unnamed = registry.open_run("run-agent", &subject());
        pending(mode, &unnamed, "c5");
        pending(mode, &unnamed, "c6");
        let refused = call(mode, &unnamed, deploy("c7", "production"));
        assert_eq!(refused.error_kind(), Some(ErrorKind::RateLimited));

        // Deciding one makes room.
        let denied = deny(mode, &alice, first.id(), "no").unwrap();
        assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));
        pending(mode, &alice, "c8");
        assert_eq!(executions.count(), 0);
    }
}

#[test]
fn a_store_that_cannot_count_refuses_calls_that_need_approval() {
    /// A store that keeps requests but never implemented `pending_count`.
    struct Uncounting(MemoryApprovalStore);
    impl ApprovalStore for Uncounting {
        fn insert<'a>(&'a self, r: &'a ApprovalRequest) -> BoxFuture<'a, Result<(), StoreError>> {
            self.0.insert(r)
        }
        fn get<'a>(
            &'a self,
            id: &'a str,
        ) -> BoxFuture<'a, Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>> {
            self.0.get(id)
        }
        fn decide<'a>(
            &'a self,
            id: &'a str,
            state: ApprovalState,
        ) -> BoxFuture<'a, Result<Transition, StoreError>> {
            self.0.decide(id, state)
        }
    }
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions)
            .approval_store(Uncounting(MemoryApprovalStore::new()))
            .build()
            .unwrap();
        let run = registry.open_run("run-1", &person("token:alice"));
        let refused = call(mode, &run, deploy("c1", "production"));
        assert_eq!(
            refused.error_kind(),
            Some(ErrorKind::Unavailable),
            "{refused:?}"
        );
        assert!(refused.approval().is_none());
        assert_eq!(executions.count(), 0);
    }
}

/// What an approval request keeps is bounded by the registry's argument limits: a call whose
/// arguments are too big or too deep asks for nothing, and edited arguments beyond them are
/// refused, the request left pending.
#[test]
fn stored_arguments_are_bounded_by_the_argument_limits() {
    let limits = registry_core::call::ArgumentLimits::default()
        .with_max_depth(4)
        .with_max_bytes(256);
    let free_text = json!({
        "type": "object",
        "properties": {"note": {}},
        "required": ["note"],
    });
    for mode in MODES {
        let executions = Executions::default();
        let store = Arc::new(MemoryApprovalStore::new());
        let registry = Registry::builder()
            .tool(
                DynamicTool::new("annotate", "Annotate a release.")
                    .parameters(free_text.clone())
                    .scopes(["deploy:write"])
                    .needs_approval()
                    .handler({
                        let executions = executions.clone();
                        move |_: &registry_core::ToolContext, args: Value| {
                            executions
                                .0
                                .lock()
                                .unwrap()
                                .push(("annotate".into(), args.clone()));
                            Ok::<_, String>(args)
                        }
                    }),
            )
            .argument_limits(limits)
            .approval_store(store.clone())
            .build()
            .unwrap();
        let run = registry.open_run("run-1", &person("token:alice"));
        let big = json!({"note": "x".repeat(300)});
        let deep = json!({"note": [[[["deep"]]]]});
        for arguments in [big.clone(), deep.clone()] {
            let observation = call(mode, &run, ToolCall::new("c1", "annotate", arguments));
            assert_eq!(
                observation.error_kind(),
                Some(ErrorKind::InvalidArguments),
                "{observation:?}"
            );
            assert!(observation.approval().is_none());
        }
        // Raw text from a model, too big before it is even parsed.
        let raw = format!(r#"{{"note": "{}"}}"#, "y".repeat(300));
        let observation = call(mode, &run, ToolCall::from_json_text("c2", "annotate", raw));
        assert_eq!(observation.error_kind(), Some(ErrorKind::InvalidArguments));
        assert!(store.is_empty(), "nothing was stored");

        let observation = call(
            mode,
            &run,
            ToolCall::new("c3", "annotate", json!({"note": "ok"})),
        );
        let request = observation.approval().unwrap().clone();
        for edited in [big.clone(), deep.clone()] {
            let error = approve_with(mode, &run, request.id(), edited).unwrap_err();
            assert!(
                matches!(error, ApprovalError::InvalidArguments { .. }),
                "{error:?}"
            );
        }
        let (_, state) = runtime()
            .block_on(registry.approval_request(request.id()))
            .unwrap()
            .unwrap();
        assert!(state.is_pending());
        assert_eq!(executions.count(), 0, "nothing ran");
        let done = approve_with(mode, &run, request.id(), json!({"note": "edited"})).unwrap();
        assert_eq!(done.json(), &json!({"note": "edited"}));
        assert_eq!(executions.of("annotate"), [json!({"note": "edited"})]);
    }
}

#[test]
fn audit_events_carry_the_principal() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
    };
    let executions = Executions::default();
    let registry = builder(&executions).audit_sink(sink).build().unwrap();
    let alice = registry.open_run("run-alice", &person("token:alice"));
    let request = pending(Mode::Sync, &alice, "c1");
    let _ = alice
        .decide_blocking(request.id(), Verdict::approve())
        .unwrap()
        .into_answer()
        .unwrap();
    let unnamed = registry.open_run("run-agent", &subject());
    let _ = call(
        Mode::Sync,
        &unnamed,
        ToolCall::new("c2", "status", json!({})),
    );

    let events = events.lock().unwrap();
    let mut seen = (0, 0, 0);
    for event in events.iter() {
        let principal = match event {
            AuditEvent::Projection(p) => {
                seen.0 += 1;
                p.principal.clone()
            }
            AuditEvent::Call(c) => {
                seen.1 += 1;
                c.principal.clone()
            }
            AuditEvent::Approval(a) => {
                seen.2 += 1;
                a.principal.clone()
            }
            _ => continue,
        };
        let json = serde_json::to_value(event).unwrap();
        let run_id = json["run_id"].as_str().unwrap();
        if run_id == "run-alice" {
            assert_eq!(principal.as_deref(), Some("token:alice"), "{event:?}");
            assert_eq!(json["principal"], json!("token:alice"));
        } else {
            assert_eq!(principal, None, "{event:?}");
            assert!(json.get("principal").is_none());
        }
    }
    // Two projections; the call asking and the approved one, and the status; requested and approved.
    assert_eq!(seen, (2, 3, 2));
}

/// Refunds an order.
#[registry_core::tool(public)]
fn refund(
    /// The amount, in cents.
    cents: u64,
    /// Why the order is refunded.
    note: Option<String>,
) -> u64 {
    let _ = note;
    cents
}

/// What a policy read with `argument`, and the whole value it saw afterwards.
type Read = (
    Result<Option<u64>, String>,
    Result<Option<String>, String>,
    Result<Option<String>, String>,
    Result<Option<u64>, String>,
    Value,
);

#[test]
fn a_policy_reads_one_argument_as_the_whole_value_has_it() {
    let seen: Arc<Mutex<Vec<Read>>> = Arc::default();
    let registry = Registry::builder()
        .declared_in(["gate"])
        .call_policy({
            let seen = Arc::clone(&seen);
            move |call: &CallRequest<'_>| {
                // One argument at a time first (before anything makes the whole value), then
                // the whole value.
                let cents = call.argument::<u64>("cents").map_err(|e| e.to_string());
                let note = call.argument::<String>("note").map_err(|e| e.to_string());
                let wrong = call.argument::<String>("cents").map_err(|e| e.to_string());
                let absent = call.argument::<u64>("nothing").map_err(|e| e.to_string());
                let decision = match cents {
                    Ok(Some(cents)) if cents <= 100 => Decision::Allow,
                    _ => Decision::Deny("over the limit".into()),
                };
                let whole = call.arguments().clone();
                seen.lock()
                    .unwrap()
                    .push((cents, note, wrong, absent, whole));
                decision
            }
        })
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &Subject::new("acme"));
    for mode in MODES {
        seen.lock().unwrap().clear();
        let small = call(
            mode,
            &run,
            ToolCall::from_json_text("1", "refund", r#"{"note": "late\u0000", "cents": 40}"#),
        );
        assert_eq!(small.json(), &json!(40), "{mode:?}");
        let large = call(
            mode,
            &run,
            ToolCall::from_json_text("2", "refund", r#"{"cents": 4000, "note": null}"#),
        );
        assert_eq!(large.error_kind(), Some(ErrorKind::Denied), "{mode:?}");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "{mode:?}");
        for (cents, note, wrong, absent, whole) in seen.iter() {
            // Each read agrees with decoding the whole value's property.
            let expected_cents = serde_json::from_value::<u64>(whole["cents"].clone()).unwrap();
            assert_eq!(cents, &Ok(Some(expected_cents)), "{mode:?}");
            let expected_note = whole
                .get("note")
                .filter(|note| !note.is_null())
                .map(|note| serde_json::from_value::<String>(note.clone()).unwrap());
            assert_eq!(note, &Ok(expected_note), "{mode:?}");
            let expected_wrong = serde_json::from_value::<String>(whole["cents"].clone())
                .unwrap_err()
                .to_string();
            assert_eq!(wrong, &Err(expected_wrong), "{mode:?}");
            assert_eq!(absent, &Ok(None), "{mode:?}");
        }
        assert_eq!(seen[0].1, Ok(Some("late\0".to_owned())), "{mode:?}");
        assert_eq!(seen[1].1, Ok(None), "{mode:?}");
    }
}

/// A memory store whose `pending_count` takes its time: a registry that counted, then
/// inserted, would let every concurrent call through the count before any was kept.
struct SlowCount(Arc<MemoryApprovalStore>);

impl ApprovalStore for SlowCount {
    fn insert<'a>(&'a self, r: &'a ApprovalRequest) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.insert(r)
    }
    fn insert_bounded<'a>(
        &'a self,
        r: &'a ApprovalRequest,
        max_pending: usize,
    ) -> BoxFuture<'a, Result<Insertion, StoreError>> {
        self.0.insert_bounded(r, max_pending)
    }
    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>> {
        self.0.get(id)
    }
    fn decide<'a>(
        &'a self,
        id: &'a str,
        state: ApprovalState,
    ) -> BoxFuture<'a, Result<Transition, StoreError>> {
        self.0.decide(id, state)
    }
    fn pending_count<'a>(
        &'a self,
        r: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        // Counted now, answered later: the count is stale by the time it is read.
        let counted = pollster::block_on(self.0.pending_count(r));
        std::thread::sleep(Duration::from_millis(50));
        Box::pin(std::future::ready(counted))
    }
}

fn pending_in(store: &MemoryApprovalStore) -> usize {
    store
        .requests()
        .iter()
        .filter(|(_, state)| state.is_pending())
        .count()
}

/// Issue 45 (M2): the pending bound is counted and kept in one step of the store. 32
/// concurrent calls of one principal leave exactly the bound pending, through the registry
/// (whose store counts slowly) and on the memory store itself.
#[test]
fn concurrent_calls_of_one_principal_never_pass_the_pending_bound() {
    let executions = Executions::default();
    let store = Arc::new(MemoryApprovalStore::new());
    let registry = Arc::new(
        builder(&executions)
            .approval_store(SlowCount(store.clone()))
            .max_pending_approvals(4)
            .build()
            .unwrap(),
    );
    let barrier = Arc::new(std::sync::Barrier::new(32));
    let threads: Vec<_> = (0..32)
        .map(|index| {
            let registry = registry.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let run = registry.open_run(format!("run-{index}"), &person("token:alice"));
                barrier.wait();
                run.call_blocking(deploy(&format!("c{index}"), "production"))
                    .error_kind()
            })
        })
        .collect();
    let kinds: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let asked = kinds
        .iter()
        .filter(|kind| **kind == Some(ErrorKind::ApprovalRequired))
        .count();
    assert_eq!(asked, 4, "{kinds:?}");
    assert!(
        kinds.iter().all(|kind| matches!(
            kind,
            Some(ErrorKind::ApprovalRequired | ErrorKind::RateLimited)
        )),
        "{kinds:?}"
    );
    assert_eq!(pending_in(&store), 4);

    // The memory store alone, 32 threads at once.
    let store = Arc::new(MemoryApprovalStore::new());
    let registry = builder(&executions).build().unwrap();
    let run = registry.open_run("run-template", &person("token:bob"));
    let template = pending(Mode::Sync, &run, "t");
    let barrier = Arc::new(std::sync::Barrier::new(32));
    let threads: Vec<_> = (0..32)
        .map(|index| {
            let store = store.clone();
            let barrier = barrier.clone();
            let mut request = serde_json::to_value(&template).unwrap();
            request["id"] = json!(format!("apr_{index:032x}"));
            let request: ApprovalRequest = serde_json::from_value(request).unwrap();
            std::thread::spawn(move || {
                barrier.wait();
                pollster::block_on(store.insert_bounded(&request, 4)).unwrap()
            })
        })
        .collect();
    let inserted = threads
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter(|insertion| *insertion == Insertion::Inserted)
        .count();
    assert_eq!(inserted, 4);
    assert_eq!(pending_in(&store), 4);
}

/// `deploy` of a project named with `len` characters.
fn deploy_sized(id: &str, len: usize) -> ToolCall {
    ToolCall::new(
        id,
        "deploy",
        json!({"project": "p".repeat(len), "env": "production"}),
    )
}

/// Issue 45 (N4): one principal filling its share of the store (bytes, then requests) does
/// not stop another principal's approval request; a request denied frees its bytes at once
/// and keeps only its digest (N7); one request larger than the store keeps is refused,
/// saying so.
#[test]
fn one_principal_filling_its_share_leaves_room_for_another() {
    for mode in MODES {
        let executions = Executions::default();
        // Room for five large requests in all, two per principal.
        let store = Arc::new(
            MemoryApprovalStore::new()
                .with_limits(100, 2_500)
                .with_shares(3, 1_000)
                .with_max_request_bytes(600),
        );
        let registry = builder(&executions)
            .approval_store(store.clone())
            .build()
            .unwrap();
        let alice = registry.open_run("run-alice", &person("token:alice"));
        let mut asked = Vec::new();
        let mut refused = None;
        for index in 0..10 {
            let observation = call(mode, &alice, deploy_sized(&format!("a{index}"), 400));
            match observation.approval() {
                Some(request) => asked.push(request.clone()),
                None => {
                    refused = Some(observation);
                    break;
                }
            }
        }
        assert_eq!(asked.len(), 2, "{mode:?}");
        let refused = refused.expect("alice's share fills");
        assert_eq!(refused.error_kind(), Some(ErrorKind::RateLimited));
        let text = refused.error_text().unwrap();
        assert!(text.contains("take all the room they may"), "{text}");

        // Bob still asks, with large arguments too.
        let bob = registry.open_run("run-bob", &person("token:bob"));
        let observation = call(mode, &bob, deploy_sized("b1", 400));
        assert_eq!(
            observation.error_kind(),
            Some(ErrorKind::ApprovalRequired),
            "{observation:?}"
        );

        // A denial frees alice's bytes at once (not a minute later): only the digest stays.
        let digest = asked[0].argument_digest();
        let denied = deny(mode, &alice, asked[0].id(), "no").unwrap();
        assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));
        let (kept, state) = store
            .requests()
            .into_iter()
            .find(|(request, _)| request.id() == asked[0].id())
            .unwrap();
        assert!(matches!(state, ApprovalState::Denied { .. }));
        assert!(kept.arguments().is_null(), "{kept:?}");
        assert_eq!(kept.discarded(), Some(&digest));
        assert!(kept.question().contains("arguments discarded"));
        let again = call(mode, &alice, deploy_sized("a-again", 400));
        assert_eq!(again.error_kind(), Some(ErrorKind::ApprovalRequired));

        // The share of requests: small ones, up to three kept (denied ones count for the grace).
        let third = call(mode, &alice, deploy("a-small", "staging"));
        assert_eq!(
            third.error_kind(),
            Some(ErrorKind::RateLimited),
            "{third:?}"
        );

        // Larger than one request may be: refused as such, whoever asks.
        let carol = registry.open_run("run-carol", &person("token:carol"));
        let large = call(mode, &carol, deploy_sized("c1", 700));
        assert_eq!(large.error_kind(), Some(ErrorKind::Denied), "{large:?}");
        let text = large.error_text().unwrap();
        assert!(text.contains("too large"), "{text}");
        assert!(text.contains("at most 600 bytes"), "{text}");
        assert_eq!(executions.count(), 0);
    }
}

/// A store that gives back other arguments than it was given (a database's sanitizer, a
/// custom store): `env` comes back as `prod`, which the schema does not allow.
struct Altering(MemoryApprovalStore);

impl ApprovalStore for Altering {
    fn insert<'a>(&'a self, r: &'a ApprovalRequest) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.insert(r)
    }
    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>> {
        Box::pin(async move {
            let found = self.0.get(id).await?;
            Ok(found.map(|(request, state)| {
                let mut value = serde_json::to_value(&request).unwrap();
                if value["arguments"].is_object() {
                    value["arguments"]["env"] = json!("prod");
                }
                (serde_json::from_value(value).unwrap(), state)
            }))
        })
    }
    fn decide<'a>(
        &'a self,
        id: &'a str,
        state: ApprovalState,
    ) -> BoxFuture<'a, Result<Transition, StoreError>> {
        self.0.decide(id, state)
    }
    fn pending_count<'a>(
        &'a self,
        r: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        self.0.pending_count(r)
    }
}

/// Issue 45 (N10): the arguments an approved call runs with are validated again as the
/// store gives them back; altered so that they no longer fit, the call is refused with the
/// problems, the request is denied, and nothing runs.
#[test]
fn arguments_a_store_altered_are_validated_again_before_an_approved_call_runs() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions)
            .approval_store(Altering(MemoryApprovalStore::new()))
            .build()
            .unwrap();
        let run = registry.open_run("run-1", &subject());
        let request = pending(mode, &run, "c1");
        let refused = approve(mode, &run, request.id()).unwrap();
        assert_eq!(
            refused.error_kind(),
            Some(ErrorKind::InvalidArguments),
            "{refused:?}"
        );
        assert_eq!(refused.call_id(), "c1");
        let text = refused.error_text().unwrap();
        assert!(text.contains("/env"), "{text}");
        assert_eq!(executions.count(), 0, "{mode:?}");
        // Settled: a second approval finds it decided, and still nothing runs.
        let error = approve(mode, &run, request.id()).unwrap_err();
        assert!(
            matches!(
                error,
                ApprovalError::AlreadyDecided {
                    state: ApprovalState::Denied { .. },
                    ..
                }
            ),
            "{error:?}"
        );
        assert_eq!(executions.count(), 0);
    }
}

/// Issue 45 (L4): the text of a request decided already says how, never who decided (it
/// reaches clients and models); the state itself still holds who, for the log.
#[test]
fn a_request_decided_already_does_not_name_who_decided() {
    for mode in MODES {
        let executions = Executions::default();
        let registry = builder(&executions).build().unwrap();
        let run = registry.open_run("run-1", &subject());
        for verdict in [
            Verdict::approve().by("ana@example.com"),
            Verdict::deny("no").by("ana@example.com"),
        ] {
            let request = pending(mode, &run, "c1");
            let decided = run
                .decide_blocking(request.id(), verdict)
                .unwrap()
                .into_answer()
                .unwrap();
            assert_eq!(decided.call_id(), "c1");
            let error = approve(mode, &run, request.id()).unwrap_err();
            let text = error.to_string();
            assert!(!text.contains("ana"), "{text}");
            assert!(text.contains("already decided"), "{text}");
            match error {
                ApprovalError::AlreadyDecided { state, .. } => {
                    assert!(state.to_string().contains("ana@example.com"), "{state}");
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
