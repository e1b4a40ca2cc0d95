//! Readiness: a registered tool that cannot work is not shown to new runs, and answered
//! `Unavailable` in older ones; checks that fail, panic or hang count as not ready.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use registry_core::server::RegistryExt;
use registry_core::{
    BuildProblem, DynamicTool, ErrorKind, Registry, RegistryBuilder, Subject, ToolCall,
    access::HiddenReason, audit::AuditEvent,
};
use serde_json::json;

fn counted(name: &str, runs: &Arc<AtomicUsize>) -> DynamicTool {
    let runs = runs.clone();
    DynamicTool::new(name, "Do the thing.")
        .public()
        .handler(move |_, _| {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!("done"))
        })
}

fn with_tools(runs: &Arc<AtomicUsize>) -> RegistryBuilder {
    Registry::builder()
        .tool(counted("notify", runs))
        .tool(counted("status", runs))
}

#[test]
fn a_tool_whose_check_fails_is_hidden_with_the_reason() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = with_tools(&runs)
        .readiness("notify", || Err::<(), _>("CHAT_TOKEN is not set"))
        .readiness("status", || Ok::<(), String>(()))
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &Subject::new("acme"));
    assert_eq!(run.allowed().names().collect::<Vec<_>>(), ["status"]);
    let explanation = run.explain();
    assert_eq!(explanation.hidden.len(), 1);
    assert_eq!(explanation.hidden[0].name, "notify");
    assert_eq!(
        explanation.hidden[0].reasons,
        [HiddenReason::NotReady {
            reason: "CHAT_TOKEN is not set".into()
        }]
    );
    assert!(
        explanation
            .to_string()
            .contains("not ready: CHAT_TOKEN is not set")
    );
    // Hidden is not just hidden: a call is refused like any tool the run may not use.
    let call = run.call_blocking(ToolCall::new("c1", "notify", json!({})));
    assert_eq!(call.error_kind(), Some(ErrorKind::NotAllowed));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn readiness_changes_apply_to_new_and_old_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let up = Arc::new(AtomicBool::new(true));
    let events = Arc::new(Mutex::new(Vec::new()));
    let registry = with_tools(&runs)
        .readiness("notify", {
            let up = up.clone();
            move || {
                let up = up.load(Ordering::SeqCst);
                async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    if up {
                        Ok(())
                    } else {
                        Err("the chat service is down")
                    }
                }
            }
        })
        .audit_sink({
            let events = events.clone();
            move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
        })
        .build()
        .unwrap();
    // At build, the async check ran without a runtime: it needs Tokio's timer, so it failed
    // at once, saying why; the application checks again inside its runtime.
    let run = registry.open_run("run-0", &Subject::new("acme"));
    let reason = run.explain().hidden[0].reasons[0].to_string();
    assert!(
        reason.contains("panicked") && reason.contains("Tokio"),
        "{reason}"
    );
    let report = registry.check_readiness().await;
    assert_eq!(report.len(), 1);
    assert!(report[0].is_ready(), "{report:?}");

    let old = registry.open_run("run-1", &Subject::new("acme"));
    assert!(old.allowed().permits("notify"));
    let generation = registry.generation();

    up.store(false, Ordering::SeqCst);
    let report = registry.check_readiness().await;
    assert_eq!(
        report[0].not_ready.as_deref(),
        Some("the chat service is down")
    );
    assert!(registry.generation() > generation, "a change is announced");
    let call = old.call(ToolCall::new("c1", "notify", json!({}))).await;
    assert_eq!(call.error_kind(), Some(ErrorKind::Unavailable));
    assert!(
        call.error_text()
            .unwrap()
            .contains("not available right now")
    );
    assert!(
        !call.error_text().unwrap().contains("down"),
        "the reason is for operators"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let new = registry.open_run("run-2", &Subject::new("acme"));
    assert!(!new.allowed().permits("notify"));

    up.store(true, Ordering::SeqCst);
    registry.check_readiness().await;
    let again = registry.open_run("run-3", &Subject::new("acme"));
    assert!(again.allowed().permits("notify"));
    let call = old.call(ToolCall::new("c2", "notify", json!({}))).await;
    assert!(!call.is_error(), "{call:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let readiness: Vec<_> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            AuditEvent::Readiness(r) => Some(r.not_ready.clone()),
            _ => None,
        })
        .collect();
    assert!(
        readiness.ends_with(&[None, Some("the chat service is down".into()), None]),
        "{readiness:?}"
    );
    let audited_unavailable = events.lock().unwrap().iter().any(|event| {
        matches!(event, AuditEvent::Call(c)
            if c.outcome == Some(ErrorKind::Unavailable)
                && c.detail.as_deref() == Some("the chat service is down"))
    });
    assert!(audited_unavailable);
}

#[test]
fn checks_that_panic_or_hang_count_as_not_ready() {
    let runs = Arc::new(AtomicUsize::new(0));
    let started = std::time::Instant::now();
    // A synchronous check runs under the deadline too, on a thread of its own: the deadline
    // leaves room for the panic hook (which may print a backtrace) on a loaded machine.
    let registry = with_tools(&runs)
        .readiness("notify", || -> Result<(), String> {
            panic!("bug in check")
        })
        .readiness("status", std::future::pending::<Result<(), String>>)
        .readiness_timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    let run = registry.open_run("run-1", &Subject::new("acme"));
    assert!(run.allowed().is_empty());
    let reasons: Vec<String> = run
        .explain()
        .hidden
        .iter()
        .map(|tool| tool.reasons[0].to_string())
        .collect();
    assert_eq!(
        reasons,
        [
            "not ready: the readiness check panicked: bug in check",
            "not ready: the readiness check did not answer within 500 ms"
        ]
    );
}

/// Two checks at once (the server's and an operator's, say) share one run of a synchronous
/// check: the second waits for the first's answer rather than calling a check that is merely
/// slow "not returned".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_at_once_share_one_run_of_a_slow_sync_check() {
    let runs = Arc::new(AtomicUsize::new(0));
    let entered = Arc::new(AtomicUsize::new(0));
    let slow = Arc::new(AtomicBool::new(false));
    let registry = {
        let (entered, slow) = (entered.clone(), slow.clone());
        with_tools(&runs)
            .readiness("notify", move || {
                entered.fetch_add(1, Ordering::SeqCst);
                if slow.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(400));
                }
                Ok::<(), String>(())
            })
            .readiness_timeout(Duration::from_secs(20))
            .build()
            .unwrap()
    };
    assert_eq!(entered.load(Ordering::SeqCst), 1);
    slow.store(true, Ordering::SeqCst);
    let (first, second) = tokio::join!(registry.check_readiness(), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        registry.check_readiness().await
    });
    for readiness in [&first, &second] {
        assert!(
            readiness.iter().all(|tool| tool.is_ready()),
            "{readiness:?}"
        );
    }
    assert_eq!(entered.load(Ordering::SeqCst), 2, "one run for both checks");
}

#[test]
fn a_check_for_an_unknown_or_repeated_tool_is_a_build_problem() {
    let runs = Arc::new(AtomicUsize::new(0));
    let error = with_tools(&runs)
        .readiness("notfiy", || Ok::<(), String>(()))
        .readiness("status", || Ok::<(), String>(()))
        .readiness("status", || Ok::<(), String>(()))
        .build()
        .unwrap_err();
    let problems = error.problems();
    assert_eq!(problems.len(), 2, "{error}");
    assert!(
        matches!(&problems[0], BuildProblem::UnknownReadinessTool { name, .. } if name == "notfiy")
    );
    assert!(
        matches!(&problems[1], BuildProblem::RepeatedReadiness { name, .. } if name == "status")
    );
    let text = error.to_string();
    assert!(
        text.contains("\"notfiy\", which is not registered"),
        "{text}"
    );
    assert!(
        text.contains("tests/tests/integration/readiness.rs"),
        "the call site: {text}"
    );
}

#[test]
fn a_sync_check_that_hangs_is_not_ready_within_its_timeout_and_nothing_is_stuck() {
    let runs = Arc::new(AtomicUsize::new(0));
    // The check blocks while `hang` holds: on a thread of its own, past its deadline.
    let hang = Arc::new((Mutex::new(true), std::sync::Condvar::new()));
    let entered = Arc::new(AtomicUsize::new(0));
    let (held, count) = (hang.clone(), entered.clone());
    let started = std::time::Instant::now();
    let registry = with_tools(&runs)
        .readiness("notify", move || -> Result<(), String> {
            count.fetch_add(1, Ordering::SeqCst);
            let (hanging, changed) = &*held;
            let mut hanging = hanging.lock().unwrap();
            while *hanging {
                hanging = changed.wait(hanging).unwrap();
            }
            Ok(())
        })
        .readiness_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    // `build` waited the timeout, not the check.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let run = registry.open_run("run-1", &Subject::new("acme"));
    assert_eq!(run.allowed().names().collect::<Vec<_>>(), ["status"]);
    assert_eq!(
        run.explain().hidden[0].reasons[0].to_string(),
        "not ready: the readiness check did not answer within 50 ms"
    );
    // The registry is not stuck: the other tool answers.
    let status = run.call_blocking(ToolCall::new("c1", "status", json!({})));
    assert_eq!(status.json(), &json!("done"));

    // Checked again on a single-threaded runtime while the check still hangs: not ready at
    // once, the check not started a second time, and the runtime's timers keep going.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let again = runtime.block_on(async {
        let started = std::time::Instant::now();
        let readiness = registry.check_readiness().await;
        assert!(started.elapsed() < Duration::from_secs(1));
        readiness
    });
    assert_eq!(
        again[0].not_ready.as_deref(),
        Some("the readiness check has not returned since it last ran past its deadline")
    );
    assert_eq!(entered.load(Ordering::SeqCst), 1);

    // Once it returns, the next check runs it again: ready.
    let set = |value: bool| {
        let (hanging, changed) = &*hang;
        *hanging.lock().unwrap() = value;
        changed.notify_all();
    };
    set(false);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let readiness = runtime.block_on(registry.check_readiness());
        if readiness.iter().all(|tool| tool.is_ready()) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{readiness:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(entered.load(Ordering::SeqCst), 2);

    // It hangs again, checked on the single-threaded runtime: a timer there keeps ticking
    // while the check overruns, and the tool is not ready within its timeout.
    set(true);
    let ticks = Arc::new(AtomicUsize::new(0));
    let counter = ticks.clone();
    let (readiness, waited) = runtime.block_on(async {
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                counter.fetch_add(1, Ordering::SeqCst);
            }
        });
        let started = std::time::Instant::now();
        let readiness = registry.check_readiness().await;
        let waited = started.elapsed();
        ticker.abort();
        (readiness, waited)
    });
    assert_eq!(
        readiness[0].not_ready.as_deref(),
        Some("the readiness check did not answer within 50 ms")
    );
    assert!(waited < Duration::from_secs(1), "{waited:?}");
    let ticked = ticks.load(Ordering::SeqCst);
    assert!(ticked >= 1, "the timer ticked {ticked} times in {waited:?}");
    assert!(
        !registry
            .open_run("run-2", &Subject::new("acme"))
            .allowed()
            .permits("notify")
    );
    set(false);
}
