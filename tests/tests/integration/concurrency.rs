//! Runs and registries shared between threads and tasks: concurrent calls, revocation while
//! calls run (after `revoke` returns, no new call reaches the revoked executor; running calls
//! complete), and replacement while runs are opened and called.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use registry_core::{
    AllowedSet, DynamicTool, ErrorKind, Observation, Registry, Run, Subject, Tool, ToolCall,
    ToolContext, change::ReplaceOptions,
};
use serde_json::{Value, json};

/// Generous: only reached when something is broken.
const PATIENCE: Duration = Duration::from_secs(20);

/// `echo` answers its call id and argument; `work` records the call ids it executed.
fn registry(executed: Arc<Mutex<HashSet<String>>>) -> Registry {
    Registry::builder()
        .tool(
            DynamicTool::new("echo", "Repeat the call id and the number.")
                .public()
                .parameters(json!({
                    "type": "object",
                    "properties": {"n": {"type": "integer"}},
                    "required": ["n"],
                    "additionalProperties": false
                }))
                .handler(|ctx: &ToolContext, args: Value| {
                    Ok::<_, String>(json!({"call": ctx.call_id(), "n": args["n"]}))
                }),
        )
        .tool(
            DynamicTool::new("echo_async", "Repeat the call id, later.")
                .public()
                .async_handler(|ctx: ToolContext, _| async move {
                    tokio::task::yield_now().await;
                    Ok::<_, String>(json!(ctx.call_id()))
                }),
        )
        .tool(DynamicTool::new("work", "Do some work.").public().handler(
            move |ctx: &ToolContext, _| {
                executed.lock().unwrap().insert(ctx.call_id().to_owned());
                std::thread::sleep(Duration::from_micros(200));
                Ok::<_, String>(json!("done"))
            },
        ))
        .build()
        .unwrap()
}

#[test]
fn runs_registries_and_their_parts_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}
    send_sync::<Run>();
    send_sync::<Registry>();
    send_sync::<AllowedSet>();
    send_sync::<Observation>();
    send_sync::<ToolCall>();
    send_sync::<ToolContext>();
    send_sync::<Tool>();

    // The future of a call can move between threads (e.g. be spawned on a runtime).
    let registry = registry(Arc::default());
    let run = registry.open_run("run", &Subject::new("tenant-a"));
    let future = run.call(ToolCall::new("1", "echo", json!({"n": 1})));
    send(&future);
    assert_eq!(
        pollster::block_on(future).json(),
        &json!({"call": "1", "n": 1})
    );
}

#[test]
fn many_threads_call_one_run() {
    let registry = registry(Arc::default());
    let run = registry.open_run("run", &Subject::new("tenant-a"));
    std::thread::scope(|scope| {
        for thread in 0..16 {
            let run = &run;
            scope.spawn(move || {
                for n in 0..200 {
                    let id = format!("{thread}-{n}");
                    let observation =
                        run.call_blocking(ToolCall::new(&*id, "echo", json!({"n": n})));
                    assert_eq!(observation.call_id(), id);
                    assert_eq!(observation.json(), &json!({"call": id, "n": n}));
                    let refused =
                        run.call_blocking(ToolCall::new(&*id, "echo", json!({"n": "many"})));
                    assert_eq!(refused.error_kind(), Some(ErrorKind::InvalidArguments));
                    assert_eq!(refused.call_id(), id);
                }
            });
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_tasks_call_one_run() {
    let registry = registry(Arc::default());
    let run = Arc::new(registry.open_run("run", &Subject::new("tenant-a")));
    let mut tasks = Vec::new();
    for task in 0..64 {
        let run = run.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..20 {
                let id = format!("{task}-{n}");
                let sync = run.call(ToolCall::new(&*id, "echo", json!({"n": n}))).await;
                assert_eq!(sync.json(), &json!({"call": id, "n": n}));
                let asynchronous = run.call(ToolCall::new(&*id, "echo_async", json!({}))).await;
                assert_eq!(asynchronous.json(), &json!(id));
                let unknown = run.call(ToolCall::new(&*id, "ech0", json!({}))).await;
                assert_eq!(unknown.error_kind(), Some(ErrorKind::UnknownTool));
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// Eight threads call `work` in a loop while the main thread revokes it. Every call issued
/// after `revoke` returned is answered `Revoked` and never executes; every call that did
/// execute completed with its result.
#[test]
fn after_revoke_returns_no_new_call_reaches_the_executor() {
    const THREADS: usize = 8;
    const CALLS_AFTER: usize = 40;

    let executed = Arc::new(Mutex::new(HashSet::new()));
    let registry = registry(executed.clone());
    let run = registry.open_run("run", &Subject::new("tenant-a"));
    let revoked = AtomicBool::new(false);
    let started = AtomicUsize::new(0);

    let outcomes: Vec<Vec<(String, bool, Option<ErrorKind>)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (run, revoked, started) = (&run, &revoked, &started);
                scope.spawn(move || {
                    let mut outcomes = Vec::new();
                    let mut after = 0;
                    for n in 0.. {
                        // Read before the call is issued: if set, `revoke` has returned.
                        let issued_after = revoked.load(Ordering::Acquire);
                        let id = format!("{thread}-{n}");
                        started.fetch_add(1, Ordering::Relaxed);
                        let observation = run.call_blocking(ToolCall::new(&*id, "work", json!({})));
                        assert_eq!(observation.call_id(), id);
                        outcomes.push((id, issued_after, observation.error_kind()));
                        if issued_after {
                            after += 1;
                            if after == CALLS_AFTER {
                                break;
                            }
                        }
                    }
                    outcomes
                })
            })
            .collect();
        // Let calls run for a while, then revoke in the middle of them.
        let deadline = std::time::Instant::now() + PATIENCE;
        while started.load(Ordering::Relaxed) < 200 && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        registry.revoke("work", "stop the work").unwrap();
        revoked.store(true, Ordering::Release);
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });

    let executed = executed.lock().unwrap();
    let outcomes: Vec<_> = outcomes.into_iter().flatten().collect();
    let after: Vec<_> = outcomes.iter().filter(|(_, after, _)| *after).collect();
    assert_eq!(after.len(), THREADS * CALLS_AFTER);
    for (id, _, kind) in &after {
        assert_eq!(*kind, Some(ErrorKind::Revoked), "{id}");
        assert!(
            !executed.contains(id),
            "{id} was issued after revoke and executed"
        );
    }
    let mut succeeded = 0;
    for (id, _, kind) in &outcomes {
        match kind {
            None => {
                succeeded += 1;
                assert!(executed.contains(id), "{id} succeeded without executing");
            }
            Some(ErrorKind::Revoked) => {
                assert!(
                    !executed.contains(id),
                    "{id} executed but was answered Revoked"
                );
            }
            other => panic!("{id}: unexpected {other:?}"),
        }
    }
    assert_eq!(succeeded, executed.len());
    assert!(succeeded >= 1, "some calls ran before the revocation");

    // The process and the run are fine; other tools still work.
    let echo = run.call_blocking(ToolCall::new("late", "echo", json!({"n": 1})));
    assert_eq!(echo.json(), &json!({"call": "late", "n": 1}));
}

/// A call running when the tool is revoked completes; calls made afterwards do not start.
#[test]
fn a_call_already_running_completes() {
    let (entered_tx, entered) = mpsc::channel::<String>();
    let (release, release_rx) = mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("slow", "Wait to be released.")
                .public()
                .handler(move |ctx: &ToolContext, _| {
                    entered_tx.send(ctx.call_id().to_owned()).unwrap();
                    match release_rx.lock().unwrap().recv_timeout(PATIENCE) {
                        Ok(()) => Ok(json!("completed")),
                        Err(_) => Err("never released"),
                    }
                }),
        )
        .build()
        .unwrap();
    let run = registry.open_run("run", &Subject::new("tenant-a"));

    std::thread::scope(|scope| {
        let running = scope.spawn(|| run.call_blocking(ToolCall::new("first", "slow", json!({}))));
        assert_eq!(entered.recv_timeout(PATIENCE).unwrap(), "first");
        registry.revoke("slow", "enough").unwrap();

        let refused = run.call_blocking(ToolCall::new("second", "slow", json!({})));
        assert_eq!(refused.error_kind(), Some(ErrorKind::Revoked));

        release.send(()).unwrap();
        let completed = running.join().unwrap();
        assert_eq!(completed.error_kind(), None, "{completed:?}");
        assert_eq!(completed.json(), &json!("completed"));
    });
    // Only the first call ever entered the tool.
    assert!(entered.try_recv().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_call_already_running_completes() {
    let (entered_tx, mut entered) = tokio::sync::mpsc::unbounded_channel::<String>();
    let release = Arc::new(tokio::sync::Notify::new());
    let registry = {
        let release = release.clone();
        Registry::builder()
            .tool(
                DynamicTool::new("slow", "Wait to be released.")
                    .public()
                    .async_handler(move |ctx: ToolContext, _| {
                        let (entered_tx, release) = (entered_tx.clone(), release.clone());
                        async move {
                            let notified = release.notified();
                            entered_tx.send(ctx.call_id().to_owned()).unwrap();
                            match tokio::time::timeout(PATIENCE, notified).await {
                                Ok(()) => Ok(json!("completed")),
                                Err(_) => Err("never released"),
                            }
                        }
                    }),
            )
            .build()
            .unwrap()
    };
    let run = Arc::new(registry.open_run("run", &Subject::new("tenant-a")));

    let running = {
        let run = run.clone();
        tokio::spawn(async move { run.call(ToolCall::new("first", "slow", json!({}))).await })
    };
    assert_eq!(entered.recv().await.unwrap(), "first");
    registry.revoke("slow", "enough").unwrap();
    let refused = run.call(ToolCall::new("second", "slow", json!({}))).await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::Revoked));
    release.notify_waiters();
    let completed = running.await.unwrap();
    assert_eq!(completed.json(), &json!("completed"));
    assert!(entered.try_recv().is_err());
}

/// While one thread keeps replacing a tool (keeping old runs), others open runs and call it:
/// each run always gets exactly the version it was shown.
#[test]
fn each_run_calls_the_version_it_was_shown_while_replacements_happen() {
    fn version(n: u64) -> DynamicTool {
        DynamicTool::new("versioned", format!("Version {n}."))
            .public()
            .handler(move |_, _| Ok::<_, String>(json!(n)))
    }
    let registry = Registry::builder().tool(version(0)).build().unwrap();
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let replacer = scope.spawn(|| {
            for n in 1..=200 {
                registry
                    .replace(version(n), ReplaceOptions::keep_old_runs(format!("v{n}")))
                    .unwrap();
            }
            done.store(true, Ordering::Release);
        });
        for thread in 0..6 {
            let (registry, done) = (&registry, &done);
            scope.spawn(move || {
                let mut round = 0;
                while !done.load(Ordering::Acquire) || round < 5 {
                    round += 1;
                    let run = registry.open_run(format!("{thread}-{round}"), &Subject::new("t"));
                    let shown = run.definitions().next().unwrap().description.clone();
                    for _ in 0..3 {
                        let observation =
                            run.call_blocking(ToolCall::new("c", "versioned", json!({})));
                        let got = observation.json().as_u64().unwrap();
                        assert_eq!(shown, format!("Version {got}."));
                    }
                }
            });
        }
        replacer.join().unwrap();
    });
    assert_eq!(registry.changes().len(), 200);
}
