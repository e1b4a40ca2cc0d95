//! No worker ever blocks: synchronous tools run on the registry's bounded pool
//! (`RegistryBuilder::blocking_threads`), never on an async worker; a tool that overruns its
//! deadline is answered at once but keeps its thread, and its place in the pool, until it
//! returns; when every thread is busy a call waits, boundedly, then is refused; no thread
//! beyond the bound is ever started.
//!
//! One test per concern, each with a registry of its own; the pool's threads are counted by
//! name in `/proc/self/task`, so the tests of this file share a lock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use registry_core::{DynamicTool, ErrorKind, Registry, Subject, ToolCall};
// `versioned_lookup`'s second version.
registry_core::link!(inline_v2);
use serde_json::{Value, json};

/// The tests of this file count the pool's threads of the whole process: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// How many threads of this process carry the pool's name.
fn pool_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter(|task| {
                    std::fs::read_to_string(task.path().join("comm"))
                        .is_ok_and(|name| name.trim_end() == "registry-tool")
                })
                .count()
        })
        .unwrap_or(0)
}

/// The two held tools have a thread each, and no thread beyond the bound of two was
/// started (`before`: the pool threads of earlier tests, which can only end meanwhile).
#[track_caller]
fn bounded(before: usize) {
    let now = pool_threads();
    assert!(
        now >= 2 && now <= before + 2,
        "{now} pool threads, {before} before"
    );
}

/// A gate that held tools wait on until it opens.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

/// What the tools saw: how many started, how many ran at once at most, and where.
#[derive(Default)]
struct Seen {
    started: AtomicUsize,
    running: AtomicUsize,
    most: AtomicUsize,
    threads: Mutex<Vec<String>>,
}

impl Seen {
    fn enter(&self) {
        self.started.fetch_add(1, Ordering::SeqCst);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        let name = std::thread::current().name().unwrap_or("-").to_owned();
        self.threads.lock().unwrap().push(name);
    }

    fn leave(&self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `held` (synchronous, 100 ms deadline, waits on the gate), `quick` (synchronous, no
/// deadline), `nap` (synchronous, sleeps 300 ms), on a pool of two threads.
fn registry(gate: &Arc<Gate>, seen: &Arc<Seen>, wait: Duration) -> Registry {
    let (held_gate, held_seen) = (gate.clone(), seen.clone());
    let quick_seen = seen.clone();
    let nap_seen = seen.clone();
    Registry::builder()
        .tool(
            DynamicTool::new("held", "Wait for the gate.")
                .scopes(["ops:run"])
                .timeout(Duration::from_millis(100))
                .handler(move |_, _| {
                    held_seen.enter();
                    held_gate.wait();
                    held_seen.leave();
                    Ok::<_, String>(json!("released"))
                }),
        )
        .tool(
            DynamicTool::new("quick", "Answer at once.")
                .scopes(["ops:run"])
                .handler(move |_, _| {
                    quick_seen.enter();
                    quick_seen.leave();
                    Ok::<_, String>(json!("quick"))
                }),
        )
        .tool(
            DynamicTool::new("nap", "Sleep a while.")
                .scopes(["ops:run"])
                .handler(move |_, _| {
                    nap_seen.enter();
                    std::thread::sleep(Duration::from_millis(300));
                    nap_seen.leave();
                    Ok::<_, String>(json!("rested"))
                }),
        )
        .blocking_threads(2)
        .blocking_wait(wait)
        .build()
        .unwrap()
}

fn subject() -> Subject {
    Subject::new("acme").with_scopes(["ops:run"])
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall::new(id, name, json!({}))
}

#[test]
fn an_overrunning_tool_keeps_its_thread_and_the_pool_stays_bounded() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let gate = Arc::new(Gate::default());
    let seen = Arc::new(Seen::default());
    let before = pool_threads();
    let registry = registry(&gate, &seen, Duration::from_millis(300));
    let run = Arc::new(registry.open_run("run-1", &subject()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Two calls overrun their deadline: answered TimedOut, their threads still busy.
        let (first, second) =
            tokio::join!(run.call(call("c1", "held")), run.call(call("c2", "held")));
        assert_eq!(first.error_kind(), Some(ErrorKind::TimedOut), "{first:?}");
        assert_eq!(second.error_kind(), Some(ErrorKind::TimedOut), "{second:?}");
        assert_eq!(seen.started.load(Ordering::SeqCst), 2);
        bounded(before);

        // A third cannot start: refused Unavailable once its deadline passed, never run.
        let started = Instant::now();
        let third = run.call(call("c3", "held")).await;
        assert_eq!(
            third.error_kind(),
            Some(ErrorKind::Unavailable),
            "{third:?}"
        );
        assert!(
            third
                .error_text()
                .unwrap()
                .contains("the server is busy; nothing was done"),
            "{third:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
        // A tool without a deadline waits the pool's wait (300 ms), then is refused too.
        let started = Instant::now();
        let quick = run.call(call("c4", "quick")).await;
        assert_eq!(
            quick.error_kind(),
            Some(ErrorKind::Unavailable),
            "{quick:?}"
        );
        assert!(started.elapsed() >= Duration::from_millis(250));
        assert_eq!(
            seen.started.load(Ordering::SeqCst),
            2,
            "nothing else started"
        );
        bounded(before);

        // A call waiting when a held tool returns gets its thread.
        let waiting = {
            let run = run.clone();
            tokio::spawn(async move { run.call(call("c5", "quick")).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(seen.started.load(Ordering::SeqCst), 2, "still waiting");
        gate.open();
        let quick = waiting.await.unwrap();
        assert_eq!(quick.json(), &json!("quick"));
        assert_eq!(seen.started.load(Ordering::SeqCst), 3);
    });
    assert_eq!(seen.most.load(Ordering::SeqCst), 2);
    assert!(pool_threads() <= before + 2);
    let threads = seen.threads.lock().unwrap().clone();
    assert!(
        threads.iter().all(|name| name == "registry-tool"),
        "{threads:?}"
    );
}

#[test]
fn async_workers_keep_ticking_while_synchronous_tools_run() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let gate = Arc::new(Gate::default());
    let seen = Arc::new(Seen::default());
    let registry = registry(&gate, &seen, Duration::from_secs(5));
    let run = registry.open_run("run-1", &subject());
    // One thread for everything async: a tool run on it would stop the timer.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ticks = Arc::new(AtomicUsize::new(0));
    let answers: Vec<Value> = runtime.block_on(async {
        let counter = ticks.clone();
        let ticker = tokio::spawn(async move {
            let mut interval = tokio::time::interval(Duration::from_millis(10));
            // Missed ticks are skipped, not made up for after a block.
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                interval.tick().await;
                counter.fetch_add(1, Ordering::SeqCst);
            }
        });
        // Two tools without a deadline, 300 ms each, at once.
        let (a, b) = tokio::join!(run.call(call("c1", "nap")), run.call(call("c2", "nap")));
        ticker.abort();
        vec![a.json().clone(), b.json().clone()]
    });
    assert_eq!(answers, [json!("rested"), json!("rested")]);
    // 300 ms of naps at 10 ms a tick: the timer kept going meanwhile.
    let ticked = ticks.load(Ordering::SeqCst);
    assert!(ticked >= 10, "the timer ticked only {ticked} times");
    assert_eq!(
        seen.most.load(Ordering::SeqCst),
        2,
        "the naps ran side by side"
    );
    let threads = seen.threads.lock().unwrap().clone();
    assert_eq!(threads, ["registry-tool", "registry-tool"]);
}

#[test]
fn call_blocking_runs_a_tool_without_deadline_on_the_callers_thread_and_bounds_the_rest() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let gate = Arc::new(Gate::default());
    let seen = Arc::new(Seen::default());
    let registry = registry(&gate, &seen, Duration::from_millis(200));
    let run = Arc::new(registry.open_run("run-1", &subject()));
    let caller = std::thread::Builder::new()
        .name("the-caller".into())
        .spawn({
            let run = run.clone();
            move || run.call_blocking(call("c1", "quick"))
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(caller.json(), &json!("quick"));
    assert_eq!(seen.threads.lock().unwrap()[0], "the-caller");
    // With a deadline, the pool: two overrun, the third is refused, without a runtime.
    for id in ["c2", "c3"] {
        let answer = run.call_blocking(call(id, "held"));
        assert_eq!(answer.error_kind(), Some(ErrorKind::TimedOut), "{answer:?}");
    }
    let third = run.call_blocking(call("c4", "held"));
    assert_eq!(
        third.error_kind(),
        Some(ErrorKind::Unavailable),
        "{third:?}"
    );
    assert_eq!(seen.started.load(Ordering::SeqCst), 3);
    gate.open();
    // Once they returned, their threads serve again.
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.running.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let again = run.call_blocking(call("c5", "held"));
    assert_eq!(again.json(), &json!("released"));
}

/// Where the last `non_blocking` tool ran, by thread name.
static NON_BLOCKING_THREAD: Mutex<String> = Mutex::new(String::new());

/// Adds two integers, on whichever thread calls it.
#[registry_core::tool(public, non_blocking)]
fn add_here(a: i64, b: i64) -> i64 {
    *NON_BLOCKING_THREAD.lock().unwrap() = std::thread::current().name().unwrap_or("-").into();
    a + b
}

#[test]
fn non_blocking_tools_run_on_the_callers_task_and_a_late_return_is_timed_out() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Declared: `#[tool(non_blocking)]` reaches the settings, and an async call runs the
    // function on the runtime's own thread, not the pool's.
    let declared = Registry::builder()
        .declared_in(["blocking"])
        .build()
        .unwrap();
    assert!(declared.get("add_here").unwrap().settings().non_blocking);
    // A current-thread runtime polls its tasks on the thread that blocks on it: this one.
    let here = std::thread::current().name().unwrap_or("-").to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = declared.open_run("run-1", &Subject::new("acme"));
    let sum = runtime.block_on(run.call(ToolCall::new("c1", "add_here", json!({"a": 40, "b": 2}))));
    assert_eq!(sum.json(), &json!(42));
    assert_eq!(*NON_BLOCKING_THREAD.lock().unwrap(), here);

    // Run time: the same, and a deadline is checked when the tool returns, since nothing can
    // interrupt it; its result is discarded.
    let seen = Arc::new(Seen::default());
    let (quick_seen, slow_seen) = (seen.clone(), seen.clone());
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("quick", "Answer at once.")
                .scopes(["ops:run"])
                .non_blocking()
                .handler(move |_, _| {
                    quick_seen.enter();
                    quick_seen.leave();
                    Ok::<_, String>(json!("quick"))
                }),
        )
        .tool(
            DynamicTool::new("late", "Answer after the deadline.")
                .scopes(["ops:run"])
                .timeout(Duration::from_millis(20))
                .non_blocking()
                .handler(move |_, _| {
                    slow_seen.enter();
                    std::thread::sleep(Duration::from_millis(60));
                    slow_seen.leave();
                    Ok::<_, String>(json!("too late"))
                }),
        )
        .tool(
            DynamicTool::new("pooled", "Answer at once, on the pool.")
                .scopes(["ops:run"])
                .handler(|_, _| Ok::<_, String>(json!("pooled"))),
        )
        .tool(
            DynamicTool::new("wait", "Wait asynchronously.")
                .scopes(["ops:run"])
                .non_blocking()
                .async_handler(|_, _| async { Ok::<_, String>(json!("waited")) }),
        )
        .build()
        .unwrap();
    assert!(registry.get("quick").unwrap().settings().non_blocking);
    assert!(!registry.get("pooled").unwrap().settings().non_blocking);
    // An async handler never runs on the pool: the flag means nothing there and is not kept.
    assert!(!registry.get("wait").unwrap().settings().non_blocking);
    let run = registry.open_run("run-2", &subject());
    let (quick, late, pooled) = runtime.block_on(async {
        (
            run.call(call("c1", "quick")).await,
            run.call(call("c2", "late")).await,
            run.call(call("c3", "pooled")).await,
        )
    });
    assert_eq!(quick.json(), &json!("quick"));
    assert_eq!(late.error_kind(), Some(ErrorKind::TimedOut), "{late:?}");
    assert_eq!(pooled.json(), &json!("pooled"));
    assert_eq!(
        *seen.threads.lock().unwrap(),
        [here.as_str(), here.as_str()],
        "both non-blocking tools ran on the caller's thread"
    );
    // Blocking callers run it on their own thread, with the same deadline check.
    let late = run.call_blocking(call("c4", "late"));
    assert_eq!(late.error_kind(), Some(ErrorKind::TimedOut), "{late:?}");
}

#[test]
fn a_quick_pooled_tool_called_back_to_back_that_turns_slow_is_still_answered_at_its_deadline() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A caller whose tool answered within microseconds last time waits for its answer a
    // moment without yielding (the hop to the pool and back without the kernel's wake-ups):
    // that wait must never carry a call past its deadline, nor mix up answers.
    let slow = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let calls = Arc::new(AtomicUsize::new(0));
    let (flag, count) = (slow.clone(), calls.clone());
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("flip", "Answer at once, or late once told to.")
                .scopes(["ops:run"])
                .timeout(Duration::from_millis(50))
                .handler(move |_, _| {
                    let n = count.fetch_add(1, Ordering::SeqCst);
                    if flag.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(400));
                    }
                    Ok::<_, String>(json!(n))
                }),
        )
        .blocking_threads(2)
        .build()
        .unwrap();
    let run = registry.open_run("run", &subject());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for n in 0..300 {
            let answer = run.call(call(&format!("c{n}"), "flip")).await;
            assert_eq!(answer.json(), &json!(n), "{answer:?}");
        }
        slow.store(true, Ordering::SeqCst);
        let started = Instant::now();
        let late = run.call(call("late", "flip")).await;
        let took = started.elapsed();
        assert_eq!(late.error_kind(), Some(ErrorKind::TimedOut), "{late:?}");
        assert!(
            took < Duration::from_millis(300),
            "answered after {took:?}, past the 50 ms deadline"
        );
    });
    assert_eq!(calls.load(Ordering::SeqCst), 301);
}

/// Tools that answer at once until told to sleep, each reporting the thread it ran on: the
/// quick synchronous tools that run on their caller's task while they stay quick
/// (registry-core's `execute/inline.rs`).
mod quick {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    /// How long the tools of `turning` sleep, in milliseconds (0: not at all).
    pub static TURNING_MS: AtomicU64 = AtomicU64::new(0);
    /// The same for the tools of `many` and `workers`.
    pub static MANY_MS: AtomicU64 = AtomicU64::new(0);
    pub static WORKERS_MS: AtomicU64 = AtomicU64::new(0);

    fn work(sleep: &AtomicU64) -> String {
        let ms = sleep.load(Ordering::SeqCst);
        if ms > 0 {
            std::thread::sleep(Duration::from_millis(ms));
        }
        std::thread::current().name().unwrap_or("-").to_owned()
    }

    pub mod turning {
        /// Report the thread this call ran on.
        #[registry_core::tool(public)]
        fn whereabouts() -> String {
            super::work(&super::TURNING_MS)
        }

        /// Report the thread this call ran on; it may block.
        #[registry_core::tool(public, blocking)]
        fn whereabouts_blocking() -> String {
            super::work(&super::TURNING_MS)
        }

        /// Report the thread this call ran on, reading the call's context.
        #[registry_core::tool(public)]
        fn whereabouts_with_context(ctx: &registry_core::ToolContext) -> String {
            let _ = ctx.call_id();
            super::work(&super::TURNING_MS)
        }
    }

    pub mod many {
        /// Report the thread this call ran on (first of four).
        #[registry_core::tool(public)]
        fn many_a() -> String {
            super::work(&super::MANY_MS)
        }

        /// Report the thread this call ran on (second of four).
        #[registry_core::tool(public)]
        fn many_b() -> String {
            super::work(&super::MANY_MS)
        }

        /// Report the thread this call ran on (third of four).
        #[registry_core::tool(public)]
        fn many_c() -> String {
            super::work(&super::MANY_MS)
        }

        /// Report the thread this call ran on (fourth of four).
        #[registry_core::tool(public)]
        fn many_d() -> String {
            super::work(&super::MANY_MS)
        }
    }

    pub mod workers {
        /// Report the thread this call ran on (first of two).
        #[registry_core::tool(public)]
        fn worker_a() -> String {
            super::work(&super::WORKERS_MS)
        }

        /// Report the thread this call ran on (second of two).
        #[registry_core::tool(public)]
        fn worker_b() -> String {
            super::work(&super::WORKERS_MS)
        }
    }
}

/// A tool whose running time its caller chooses, and the first version of a tool whose
/// second is declared by the crate `inline-v2`, each reporting the thread it ran on by id.
mod chosen {
    use std::time::Duration;

    fn work(ms: u64) -> String {
        if ms > 0 {
            std::thread::sleep(Duration::from_millis(ms));
        }
        format!("{:?}", std::thread::current().id())
    }

    pub mod attacked {
        /// Look a key up, taking `ms` milliseconds; report the thread this call ran on.
        #[registry_core::tool(public)]
        fn chosen_lookup(ms: u64) -> String {
            super::work(ms)
        }
    }

    pub mod v1 {
        /// Look a key up, taking `ms` milliseconds; report the thread this call ran on.
        #[registry_core::tool(public)]
        fn versioned_lookup(ms: u64) -> String {
            super::work(ms)
        }
    }

    pub mod paced {
        use std::time::{Duration, Instant};

        /// Look a key up, taking `ms` milliseconds of work (a fraction: the test's slow run is
        /// 0.2 ms); report the thread this call ran on.
        #[registry_core::tool(public)]
        fn paced_lookup(ms: f64) -> String {
            // Spinning, not sleeping, and for 0.2 ms only (four times the inline bound): a
            // sleeper woken late, or a long spin preempted, on a busy host could pass the
            // stall bound (5 ms) and turn the test's slow run into a stall.
            let until = Instant::now() + Duration::from_secs_f64(ms.clamp(0.0, 1_000.0) / 1_000.0);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            format!("{:?}", std::thread::current().id())
        }
    }
}

/// The id of the thread a call of `name` taking `ms` milliseconds ran on, or the error.
async fn ran_on_id(run: &registry_core::Run, name: &str, ms: u64) -> String {
    let observation = run.call(ToolCall::new("c", name, json!({"ms": ms}))).await;
    match observation.value() {
        Some(Value::String(thread)) => thread.clone(),
        _ => panic!("{name}: {observation:?}"),
    }
}

/// The id of the thread a call of `paced_lookup` taking 0.2 ms (over the inline bound, far
/// under the stall bound) ran on.
async fn ran_paced_slowly(run: &registry_core::Run) -> String {
    let observation = run
        .call(ToolCall::new("c", "paced_lookup", json!({"ms": 0.2})))
        .await;
    match observation.value() {
        Some(Value::String(thread)) => thread.clone(),
        _ => panic!("paced_lookup: {observation:?}"),
    }
}

/// Calls `name` quickly until a call runs on the thread `here` (by id), at most 200 times;
/// whether one did.
async fn quick_until_inline(run: &registry_core::Run, name: &str, here: &str) -> bool {
    for _ in 0..200 {
        if ran_on_id(run, name, 0).await == here {
            return true;
        }
    }
    false
}

/// The review's attack (security review of 2026-12-04, T5-2): one caller makes a tool slow
/// at will (its running time is an argument) and calls it slowly 20 times, with 100 quick
/// calls between each. Before, every quick call repaid the tool's debt of 4, 16, 64... quick
/// runs, so the slow call ran on the runtime's own thread again and again (6 of 20). Now the
/// version that stalled there once (a run over 5 ms) stays on the pool: at most one stall.
#[test]
fn one_caller_choosing_when_a_tool_is_slow_stalls_the_runtime_once_at_most() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let registry = Registry::builder()
        .declared_in(["blocking::chosen::attacked"])
        .build()
        .unwrap();
    let run = registry.open_run("run", &subject());
    let here = format!("{:?}", std::thread::current().id());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let on_this_thread = runtime.block_on(async {
        assert!(
            quick_until_inline(&run, "chosen_lookup", &here).await,
            "chosen_lookup never ran on the runtime's thread in 200 quick calls"
        );
        let mut on_this_thread = 0;
        for _ in 0..20 {
            on_this_thread += usize::from(ran_on_id(&run, "chosen_lookup", 25).await == here);
            for _ in 0..100 {
                ran_on_id(&run, "chosen_lookup", 0).await;
            }
        }
        on_this_thread
    });
    assert!(
        on_this_thread <= 1,
        "{on_this_thread} of 20 slow calls ran on the runtime's own thread"
    );
    eprintln!(
        "{on_this_thread} of 20 slow calls on the runtime's thread, in {:?}",
        started.elapsed()
    );
}

/// How long the first inline run between the inline bound (50 µs) and the stall bound (5 ms)
/// sends a tool version to the pool: registry-core's `execute::inline::POOLED_FOR`.
const POOLED_FOR: Duration = Duration::from_millis(100);

/// A run over the inline bound but not a stall (0.2 ms: a run the host delays looks the same) sends
/// the tool's version to the pool for a time that only the clock ends, and that doubles with
/// each such run: quick calls by any caller do not bring it back early (before, with a debt
/// of quick runs, four did; then, with any slow run counted as a stall, nothing did, ever).
#[test]
fn a_run_slow_but_not_stalled_sends_the_tool_to_the_pool_for_a_time_only_the_clock_ends() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let build = || {
        Registry::builder()
            .declared_in(["blocking::chosen::paced"])
            .build()
            .unwrap()
    };
    let (registry, elsewhere) = (build(), build());
    let run = registry.open_run("run", &subject());
    // Another caller: another run, of another registry of the process.
    let other = elsewhere.open_run("other", &subject());
    let here = format!("{:?}", std::thread::current().id());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert!(
            quick_until_inline(&run, "paced_lookup", &here).await,
            "paced_lookup never ran on the runtime's thread in 200 quick calls"
        );
        assert_eq!(
            ran_paced_slowly(&run).await,
            here,
            "the 0.2 ms run did not run inline"
        );
        // The version was sent to the pool before the slow call returned: a call that ends
        // before `sent + POOLED_FOR` (less a margin for the time between the two) was admitted
        // within the interval, and must not have run inline.
        let sent = Instant::now();
        let margin = Duration::from_millis(20);
        let mut within = 0;
        for i in 0.. {
            let caller = if i % 2 == 0 { &run } else { &other };
            let thread = ran_on_id(caller, "paced_lookup", 0).await;
            if sent.elapsed() >= POOLED_FOR - margin {
                break;
            }
            within += 1;
            assert_ne!(thread, here, "quick call {i} after the slow run ran inline");
        }
        assert!(
            within >= 10,
            "only {within} quick calls within {POOLED_FOR:?}: the test proves nothing on so \
             slow a host"
        );
        // Once the clock has run the interval out, a quick run on the pool brings it back.
        tokio::time::sleep_until((sent + POOLED_FOR + margin).into()).await;
        assert!(
            quick_until_inline(&run, "paced_lookup", &here).await,
            "paced_lookup did not run inline again {:?} after its slow run",
            sent.elapsed()
        );
        // A second such run sends it away for twice as long: calls admitted after the first
        // interval (they start after `sent + POOLED_FOR`) and before the second ends (they
        // end before `sent + 2 POOLED_FOR`, less the margin) run on the pool.
        assert_eq!(
            ran_paced_slowly(&run).await,
            here,
            "the second 0.2 ms run did not run inline"
        );
        let sent = Instant::now();
        tokio::time::sleep_until((sent + POOLED_FOR + margin).into()).await;
        let mut within = 0;
        for i in 0.. {
            let caller = if i % 2 == 0 { &run } else { &other };
            let thread = ran_on_id(caller, "paced_lookup", 0).await;
            if sent.elapsed() >= POOLED_FOR * 2 - margin {
                break;
            }
            within += 1;
            assert_ne!(
                thread,
                here,
                "quick call {i}, {:?} after the second slow run, ran inline",
                sent.elapsed()
            );
        }
        assert!(
            within >= 10,
            "only {within} quick calls in the second interval: the test proves nothing on so \
             slow a host"
        );
    });
}

/// The record of a stall follows the tool's version, not its registry or its name: the same
/// version in another registry, or revoked and restored, stays on the pool; a new version
/// (another declaration of the name) proves itself and runs inline.
#[test]
fn only_a_new_version_of_a_tool_that_stalled_runs_inline_again() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let build = |module: &str| Registry::builder().declared_in([module]).build().unwrap();
    let first = build("blocking::chosen::v1");
    let again = build("blocking::chosen::v1");
    let second = build("inline_v2");
    let version = |registry: &Registry| {
        registry
            .get("versioned_lookup")
            .unwrap()
            .version_fingerprint()
    };
    assert_eq!(version(&first), version(&again));
    assert_ne!(version(&first), version(&second));
    let here = format!("{:?}", std::thread::current().id());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let run = first.open_run("run", &subject());
        assert!(quick_until_inline(&run, "versioned_lookup", &here).await);
        // It stalls this thread once (or, if the machine preempted a quick run past the
        // bound, it stalled already, on a quick run).
        ran_on_id(&run, "versioned_lookup", 20).await;
        for _ in 0..50 {
            assert_ne!(ran_on_id(&run, "versioned_lookup", 0).await, here);
        }
        // Revoked and restored: the same version, still on the pool.
        first.revoke("versioned_lookup", "test").unwrap();
        first.restore("versioned_lookup", "test").unwrap();
        let run = first.open_run("run-2", &subject());
        for _ in 0..50 {
            assert_ne!(ran_on_id(&run, "versioned_lookup", 0).await, here);
        }
        // The same version in another registry of the process: on the pool too.
        let run = again.open_run("run", &subject());
        for _ in 0..50 {
            assert_ne!(ran_on_id(&run, "versioned_lookup", 0).await, here);
        }
        // A new version proves itself quick on the pool, then runs here.
        let run = second.open_run("run", &subject());
        assert!(
            quick_until_inline(&run, "versioned_lookup", &here).await,
            "the new version never ran inline"
        );
    });
}

/// Where a call of `name` ran: its thread's name, or the error.
async fn ran_on(run: &registry_core::Run, name: &str) -> String {
    let observation = run.call(call("c", name)).await;
    match observation.value() {
        Some(Value::String(thread)) => thread.clone(),
        _ => panic!("{name}: {observation:?}"),
    }
}

/// Calls `name` until a call runs on `here` (the caller's thread), at most 200 times; how
/// many ran on the pool before. A run the machine preempts past 50 µs counts as slow, so on
/// a busy machine it may take more than the one measuring run.
async fn pooled_until_inline(run: &registry_core::Run, name: &str, here: &str) -> usize {
    for pooled in 0..200 {
        let thread = ran_on(run, name).await;
        if thread == here {
            return pooled;
        }
        assert_eq!(thread, "registry-tool", "{name}");
    }
    panic!("{name} never ran on the caller's thread in 200 quick calls");
}

/// A task that ticks every millisecond until stopped, recording each gap between ticks of
/// at least `stall`: the times the runtime could not run it.
fn ticker(
    stall: Duration,
) -> (
    Arc<std::sync::atomic::AtomicBool>,
    tokio::task::JoinHandle<Vec<Duration>>,
) {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    let ticks = tokio::spawn(async move {
        let mut stalls = Vec::new();
        let mut last = Instant::now();
        while !stopped.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let gap = last.elapsed();
            if gap >= stall {
                stalls.push(gap);
            }
            last = Instant::now();
        }
        stalls
    });
    (stop, ticks)
}

#[test]
fn a_quick_tool_runs_inline_and_one_that_turns_slow_stalls_one_call_then_goes_back_to_the_pool() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let registry = Registry::builder()
        .declared_in(["blocking::quick::turning"])
        .build()
        .unwrap();
    assert!(
        registry
            .get("whereabouts_blocking")
            .unwrap()
            .settings()
            .blocking
    );
    assert!(!registry.get("whereabouts").unwrap().settings().blocking);
    let run = registry.open_run("run", &subject());
    let here = std::thread::current().name().unwrap_or("-").to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // The first call measures it on the pool; once quick there, it runs here.
        assert!(pooled_until_inline(&run, "whereabouts", &here).await >= 1);
        let inline = {
            let mut inline = 0;
            for _ in 0..20 {
                inline += usize::from(ran_on(&run, "whereabouts").await == here);
            }
            inline
        };
        assert!(inline >= 10, "{inline} of 20 quick calls ran inline");
        // `blocking`, and a tool that reads its context (it may wait on its caller): always
        // on the pool, however quick.
        for _ in 0..10 {
            assert_eq!(ran_on(&run, "whereabouts_blocking").await, "registry-tool");
            assert_eq!(
                ran_on(&run, "whereabouts_with_context").await,
                "registry-tool"
            );
        }
        pooled_until_inline(&run, "whereabouts", &here).await;

        // It turns slow: the first slow call may stall this thread, once; the next ones run
        // on the pool while the runtime's other tasks go on.
        quick::TURNING_MS.store(300, Ordering::SeqCst);
        let (stop, ticks) = ticker(Duration::from_millis(250));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut threads = Vec::new();
        for _ in 0..4 {
            threads.push(ran_on(&run, "whereabouts").await);
        }
        stop.store(true, Ordering::SeqCst);
        let stalls = ticks.await.unwrap();
        quick::TURNING_MS.store(0, Ordering::SeqCst);
        assert_eq!(
            threads[0], here,
            "the first slow call ran inline: {threads:?}"
        );
        assert!(
            threads[1..].iter().all(|thread| thread == "registry-tool"),
            "{threads:?}"
        );
        assert_eq!(stalls.len(), 1, "stalled more than once: {stalls:?}");

        // Quick again: the version that stalled this thread stays on the pool for good,
        // however many quick runs it makes there.
        for _ in 0..50 {
            assert_eq!(ran_on(&run, "whereabouts").await, "registry-tool");
        }
    });
}

#[test]
fn many_quick_tools_turning_slow_at_once_stall_the_runtime_once() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let registry = Registry::builder()
        .declared_in(["blocking::quick::many"])
        .blocking_threads(4)
        .build()
        .unwrap();
    let run = registry.open_run("run", &subject());
    let here = std::thread::current().name().unwrap_or("-").to_owned();
    let names = ["many_a", "many_b", "many_c", "many_d"];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for name in names {
            pooled_until_inline(&run, name, &here).await;
        }
        // All four turn slow and are called at once: the first stalls this thread; that
        // stall sends every tool of the registry back to the pool until it proves quick
        // there again, so the other three run on the pool, side by side.
        quick::MANY_MS.store(300, Ordering::SeqCst);
        let (stop, ticks) = ticker(Duration::from_millis(250));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let started = Instant::now();
        let (a, b, c, d) = tokio::join!(
            ran_on(&run, names[0]),
            ran_on(&run, names[1]),
            ran_on(&run, names[2]),
            ran_on(&run, names[3]),
        );
        let took = started.elapsed();
        stop.store(true, Ordering::SeqCst);
        let stalls = ticks.await.unwrap();
        quick::MANY_MS.store(0, Ordering::SeqCst);
        let threads = [a, b, c, d];
        assert!(
            threads.iter().filter(|thread| **thread == here).count() <= 1,
            "{threads:?}"
        );
        assert!(stalls.len() <= 1, "stalled more than once: {stalls:?}");
        // At most one stall, then the others side by side: about two slow calls, not four.
        assert!(took < Duration::from_millis(1_000), "{took:?}");
    });
}

#[test]
fn on_a_multi_threaded_runtime_a_tool_turning_slow_blocks_one_worker_at_most() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let registry = Registry::builder()
        .declared_in(["blocking::quick::workers"])
        .blocking_threads(4)
        .build()
        .unwrap();
    let run = Arc::new(registry.open_run("run", &subject()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for name in ["worker_a", "worker_b"] {
            let run = run.clone();
            // Inline on a worker: on whichever thread the task runs, not the pool's.
            tokio::spawn(async move {
                for _ in 0..200 {
                    if ran_on(&run, name).await != "registry-tool" {
                        return;
                    }
                }
                panic!("{name} never ran inline");
            })
            .await
            .unwrap();
        }
        // Both turn slow and are called at once from the two workers: one registry runs
        // one tool inline at a time, so one worker at most is blocked, and a task keeps
        // ticking on the other.
        quick::WORKERS_MS.store(600, Ordering::SeqCst);
        let (stop, ticks) = ticker(Duration::from_millis(500));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let calls: Vec<_> = ["worker_a", "worker_b"]
            .into_iter()
            .map(|name| {
                let run = run.clone();
                tokio::spawn(async move { ran_on(&run, name).await })
            })
            .collect();
        let mut threads = Vec::new();
        for call in calls {
            threads.push(call.await.unwrap());
        }
        stop.store(true, Ordering::SeqCst);
        let stalls = ticks.await.unwrap();
        quick::WORKERS_MS.store(0, Ordering::SeqCst);
        assert!(
            threads
                .iter()
                .filter(|thread| *thread != "registry-tool")
                .count()
                <= 1,
            "{threads:?}"
        );
        assert!(stalls.is_empty(), "the ticking task stalled: {stalls:?}");
    });
}
