//! Tasks in process: a long-running tool started with `Run::start_task`, through the same
//! gate as a call. Every refusal is checked to have started nothing (the tool's executions
//! are counted, and the store is looked at), cancellation is checked to reach the running
//! tool, and the bounds, the TTL and the ownership of a task are each pushed past.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use registry_core::approval::{Settled, Verdict};
use registry_core::audit::{AuditEvent, TaskEventKind};
use registry_core::definition::BoxFuture;
use registry_core::gate::{CallRequest, Decision, StoreError};
use registry_core::host::{CallHost, CallInfo, ElicitError, ElicitRequest, Elicitation};
use registry_core::server::RunExt;
use registry_core::task::{
    Finish, Insertion, MemoryTaskStore, Task, TaskEnd, TaskError, TaskLimits, TaskStatus,
    TaskStore, TaskUpdate,
};
use registry_core::{
    DynamicTool, ErrorKind, Observation, Registry, RegistryBuilder, Run, Subject, ToolCall,
    ToolContext,
};
use serde_json::{Value, json};

/// How long a test waits for something that should happen at once, before it fails.
const PATIENCE: Duration = Duration::from_secs(10);

#[derive(Clone, Default)]
struct Counter(Arc<AtomicUsize>);

impl Counter {
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A tool that counts its executions and returns `{"done": n}` at once.
fn quick(name: &str, executions: &Counter) -> DynamicTool {
    let executions = executions.clone();
    DynamicTool::new(name, "Count one execution, then answer at once.")
        .scopes(["jobs:run"])
        .parameters(json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        }))
        .task()
        .handler(move |_ctx, args: Value| {
            executions.0.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!({"done": args["n"]}))
        })
}

/// A synchronous tool that runs until it is cancelled, counting its executions and the
/// cancellations it saw through `ctx.cancelled()`.
fn until_cancelled(executions: &Counter, saw_cancel: &Counter) -> DynamicTool {
    let executions = executions.clone();
    let saw_cancel = saw_cancel.clone();
    DynamicTool::new("wait_for_cancel", "Wait until the task is cancelled.")
        .scopes(["jobs:run"])
        .task()
        .handler(move |ctx: &ToolContext, _args: Value| {
            executions.0.fetch_add(1, Ordering::SeqCst);
            pollster::block_on(ctx.cancelled());
            saw_cancel.0.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!("stopped"))
        })
}

/// An audit sink that keeps every event in `events`.
fn recorder(events: &Arc<Mutex<Vec<AuditEvent>>>) -> impl Fn(&AuditEvent) + Send + Sync + 'static {
    let events = events.clone();
    move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
}

/// A registry of [`until_cancelled`], with its two counters.
fn cancellable() -> (Registry, Counter, Counter) {
    let (executions, saw_cancel) = (Counter::default(), Counter::default());
    let registry = Registry::builder()
        .tool(until_cancelled(&executions, &saw_cancel))
        .build()
        .unwrap();
    (registry, executions, saw_cancel)
}

fn subject(principal: &str) -> Subject {
    Subject::new("acme")
        .with_scopes(["jobs:run"])
        .with_principal(principal)
}

// `Run::start_task`'s own shape: the refusal is the observation a call would have had.
#[allow(clippy::result_large_err)]
fn start(run: &Run, id: &str, name: &str, arguments: Value) -> Result<Task, Observation> {
    run.start_task_blocking(ToolCall::new(id, name, arguments))
}

fn status(run: &Run, id: &str) -> Result<Task, TaskError> {
    pollster::block_on(run.task(id))
}

fn wait(run: &Run, id: &str) -> Observation {
    pollster::block_on(run.wait_task(id)).unwrap()
}

/// Polls until `done` holds, failing after [`PATIENCE`].
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_task_runs_to_its_result_and_reads_as_completed() {
    let executions = Counter::default();
    let registry = Registry::builder()
        .tool(quick("count", &executions))
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject("ana"));
    let task = start(&run, "c1", "count", json!({"n": 7})).unwrap();
    assert_eq!(task.status(), TaskStatus::Working);
    assert_eq!(task.call_id(), "c1");
    assert_eq!(task.principal(), Some("ana"));
    assert!(task.id().starts_with("task_"), "{}", task.id());
    let answer = wait(&run, task.id());
    assert_eq!(answer.json(), &json!({"done": 7}));
    assert_eq!(answer.call_id(), "c1");
    assert_eq!(executions.get(), 1);
    let ended = status(&run, task.id()).unwrap();
    assert_eq!(ended.status(), TaskStatus::Completed);
    assert!(ended.expires_at().unwrap() > SystemTime::now());
    // The result stays for its TTL: asking twice gives it twice.
    let again = pollster::block_on(run.task_result(task.id())).unwrap();
    assert_eq!(again, answer);
}

#[test]
fn a_tool_not_declared_long_running_is_not_started_as_a_task() {
    let executions = Counter::default();
    let executions_inner = executions.clone();
    let plain = DynamicTool::new("plain", "Answer at once, as an ordinary call.")
        .scopes(["jobs:run"])
        .handler(move |_, _| {
            executions_inner.0.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!("ok"))
        });
    let store = Arc::new(MemoryTaskStore::new());
    let registry = Registry::builder()
        .tool(plain)
        .task_store(store.clone())
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject("ana"));
    let refused = start(&run, "c1", "plain", json!({})).unwrap_err();
    assert_eq!(refused.error_kind(), Some(ErrorKind::Denied));
    assert!(
        refused
            .error_text()
            .unwrap()
            .contains("not declared long-running"),
        "{refused:?}"
    );
    assert_eq!(executions.get(), 0);
    assert!(store.is_empty());
    // The same tool still answers an ordinary call.
    let ok = run.call_blocking(ToolCall::new("c2", "plain", json!({})));
    assert_eq!(ok.json(), &json!("ok"));
}

/// Builds a registry of `count`, with a store to look into, shaped by `shape`.
fn gated(
    executions: &Counter,
    shape: impl FnOnce(RegistryBuilder) -> RegistryBuilder,
) -> (Registry, Arc<MemoryTaskStore>) {
    let store = Arc::new(MemoryTaskStore::new());
    let builder = Registry::builder()
        .tool(quick("count", executions))
        .tool(quick("count_approved", executions).needs_approval())
        .tool(quick("count_limited", executions).rate_limit("1/min"))
        .task_store(store.clone());
    (shape(builder).build().unwrap(), store)
}

#[test]
fn the_gate_decides_before_a_task_starts() {
    let executions = Counter::default();
    let (registry, store) = gated(&executions, |builder| {
        builder.call_policy(|call: &CallRequest<'_>| {
            if call.arguments()["n"] == json!(13) {
                Decision::Deny("13 is unlucky".into())
            } else {
                Decision::Allow
            }
        })
    });
    let run = registry
        .open_run("run-1", &subject("ana"))
        .with_call_budget(3);

    // Each refusal: the answer a call would have had, nothing executed, nothing kept.
    let cases: [(&str, Value, ErrorKind); 4] = [
        ("count", json!({"n": 13}), ErrorKind::Denied),
        ("count", json!({"n": "seven"}), ErrorKind::InvalidArguments),
        ("count", json!({}), ErrorKind::InvalidArguments),
        ("no_such_tool", json!({"n": 1}), ErrorKind::UnknownTool),
    ];
    for (name, arguments, kind) in cases {
        let refused = start(&run, "c", name, arguments.clone()).unwrap_err();
        assert_eq!(refused.error_kind(), Some(kind), "{name} {arguments}");
        assert_eq!(executions.get(), 0, "{name} {arguments} executed");
        assert!(store.is_empty(), "{name} {arguments} kept a task");
    }

    // The rate limit: the first task starts, the second is refused before it starts.
    let first = start(&run, "c1", "count_limited", json!({"n": 1})).unwrap();
    let _ = wait(&run, first.id());
    let limited = start(&run, "c2", "count_limited", json!({"n": 2})).unwrap_err();
    assert_eq!(limited.error_kind(), Some(ErrorKind::RateLimited));
    assert!(limited.retry_after().is_some());
    assert_eq!(executions.get(), 1);
    assert_eq!(store.len(), 1);

    // The budget (3 executions, one spent above, one refused and refunded by the limit).
    let second = start(&run, "c3", "count", json!({"n": 3})).unwrap();
    let _ = wait(&run, second.id());
    let third = start(&run, "c4", "count", json!({"n": 4})).unwrap();
    let _ = wait(&run, third.id());
    let over = start(&run, "c5", "count", json!({"n": 5})).unwrap_err();
    assert_eq!(over.error_kind(), Some(ErrorKind::RateLimited));
    assert_eq!(executions.get(), 3);
    assert_eq!(store.len(), 3);
}

#[test]
fn a_task_that_needs_approval_starts_only_when_approved() {
    let executions = Counter::default();
    let (registry, store) = gated(&executions, |builder| builder);
    let run = registry.open_run("run-1", &subject("ana"));

    let pending = start(&run, "c1", "count_approved", json!({"n": 1})).unwrap_err();
    assert_eq!(pending.error_kind(), Some(ErrorKind::ApprovalRequired));
    let request = pending.approval().unwrap().clone();
    assert_eq!(executions.get(), 0);
    assert!(store.is_empty(), "a task waiting for approval was kept");

    // Denied: nothing starts, and the answer says a person denied it.
    let denied = pollster::block_on(run.decide(request.id(), Verdict::deny("not today")))
        .unwrap()
        .into_answer()
        .unwrap();
    assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));
    assert_eq!(executions.get(), 0);
    assert!(store.is_empty());

    // Approved: the task starts, once, with exactly the arguments approved.
    let pending = start(&run, "c2", "count_approved", json!({"n": 2})).unwrap_err();
    let id = pending.approval().unwrap().id().to_owned();
    let settled = pollster::block_on(run.decide(&id, Verdict::approve().by("bo"))).unwrap();
    let Settled::Started(task) = settled else {
        panic!("approved, the task did not start: {settled:?}");
    };
    assert_eq!(task.call_id(), "c2");
    assert_eq!(wait(&run, task.id()).json(), &json!({"done": 2}));
    assert_eq!(executions.get(), 1);
    // A second approval of the same request starts nothing more.
    assert!(pollster::block_on(run.decide(&id, Verdict::approve())).is_err());
    assert_eq!(executions.get(), 1);
    assert_eq!(store.len(), 1);
}

#[test]
fn cancelling_a_task_reaches_its_tool() {
    let (executions, saw_cancel) = (Counter::default(), Counter::default());
    let events = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::builder()
        .tool(until_cancelled(&executions, &saw_cancel))
        .audit_sink(recorder(&events))
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject("ana"));
    let task = start(&run, "c1", "wait_for_cancel", json!({})).unwrap();
    eventually("the tool started", || executions.get() == 1);
    assert_eq!(
        status(&run, task.id()).unwrap().status(),
        TaskStatus::Working
    );
    assert!(matches!(
        pollster::block_on(run.task_result(task.id())),
        Err(TaskError::NotFinished {
            status: TaskStatus::Working,
            ..
        })
    ));

    let cancelled = pollster::block_on(run.cancel_task(task.id())).unwrap();
    assert_eq!(cancelled.status(), TaskStatus::Cancelled);
    eventually("the tool saw ctx.cancelled()", || saw_cancel.get() == 1);
    let answer = wait(&run, task.id());
    assert_eq!(answer.error_kind(), Some(ErrorKind::Cancelled));
    assert_eq!(answer.call_id(), "c1");
    // What the tool returned after the cancel was discarded: the task stays cancelled.
    eventually("the task thread ended", || {
        events
            .lock()
            .unwrap()
            .iter()
            .any(|event| matches!(event, AuditEvent::Task(t) if t.kind == TaskEventKind::Cancelled))
    });
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        status(&run, task.id()).unwrap().status(),
        TaskStatus::Cancelled
    );
    let kinds: Vec<TaskEventKind> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            AuditEvent::Task(t) => Some(t.kind),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [TaskEventKind::Started, TaskEventKind::Cancelled]);
}

#[test]
fn a_cancellation_given_with_the_options_cancels_the_task_too() {
    let (registry, executions, saw_cancel) = cancellable();
    let run = registry.open_run("run-1", &subject("ana"));
    let cancellation = registry_core::call::Cancellation::new();
    let options = registry_core::call::CallOptions::new().with_cancellation(cancellation.clone());
    let task = pollster::block_on(
        run.start_task_with(ToolCall::new("c1", "wait_for_cancel", json!({})), options),
    )
    .unwrap();
    eventually("the tool started", || executions.get() == 1);
    cancellation.cancel();
    let answer = wait(&run, task.id());
    assert_eq!(answer.error_kind(), Some(ErrorKind::Cancelled));
    assert_eq!(saw_cancel.get(), 1);
    assert_eq!(
        status(&run, task.id()).unwrap().status(),
        TaskStatus::Cancelled
    );
}

#[test]
fn tasks_are_bounded_per_principal_and_in_total() {
    let (executions, saw_cancel) = (Counter::default(), Counter::default());
    let store = Arc::new(MemoryTaskStore::new());
    let registry = Registry::builder()
        .tool(until_cancelled(&executions, &saw_cancel))
        .task_store(store.clone())
        .task_limits(TaskLimits::new().with_per_principal(2).with_total(3))
        .build()
        .unwrap();
    let ana = registry.open_run("run-ana", &subject("ana"));
    let bo = registry.open_run("run-bo", &subject("bo"));
    let a1 = start(&ana, "a1", "wait_for_cancel", json!({})).unwrap();
    let a2 = start(&ana, "a2", "wait_for_cancel", json!({})).unwrap();
    let refused = start(&ana, "a3", "wait_for_cancel", json!({})).unwrap_err();
    assert_eq!(refused.error_kind(), Some(ErrorKind::RateLimited));
    let text = refused.error_text().unwrap();
    assert!(
        text.contains("you run 2 tasks already") && text.contains("(2)"),
        "{text}"
    );
    // Another principal has places of its own, up to the total.
    let b1 = start(&bo, "b1", "wait_for_cancel", json!({})).unwrap();
    let full = start(&bo, "b2", "wait_for_cancel", json!({})).unwrap_err();
    assert_eq!(full.error_kind(), Some(ErrorKind::RateLimited));
    assert!(
        full.error_text()
            .unwrap()
            .contains("runs as many tasks as it may (3)"),
        "{full:?}"
    );
    eventually("three tools started", || executions.get() == 3);
    assert_eq!(store.len(), 3);

    // An ended task frees its principal's place and its place in all: it is still kept
    // (its result), but ended tasks do not count. (Once its tool has stopped: until then it
    // holds a place among the tasks this process runs.)
    pollster::block_on(ana.cancel_task(a1.id())).unwrap();
    eventually("a1's tool stopped", || saw_cancel.get() == 1);
    let mut a4 = None;
    eventually("a4 starts", || {
        a4 = start(&ana, "a4", "wait_for_cancel", json!({})).ok();
        a4.is_some()
    });
    let a4 = a4.unwrap();
    eventually("four tools started", || executions.get() == 4);
    for task in [&a2, &a4] {
        pollster::block_on(ana.cancel_task(task.id())).unwrap();
    }
    pollster::block_on(bo.cancel_task(b1.id())).unwrap();
    eventually("every tool saw its cancel", || saw_cancel.get() == 4);
}

/// N5: one principal that starts and ends task after task, then fills its share of running
/// tasks, denies no one a task (ended tasks do not count against the total), keeps at most
/// its share of ended tasks (its oldest forgotten first), and pushes out no one else's
/// result; the ended tasks of all are bounded too, the oldest forgotten first.
#[test]
fn one_principals_ended_tasks_deny_no_one_a_task_nor_push_out_their_results() {
    let (executions, saw_cancel) = (Counter::default(), Counter::default());
    let store = Arc::new(MemoryTaskStore::new());
    // A total of four: ana's two running tasks, and one of her cancelled tools that may
    // still be stopping, leave bo one place.
    let limits = TaskLimits::new()
        .with_per_principal(2)
        .with_total(4)
        .with_ended_per_principal(4)
        .with_ended(6);
    let registry = Registry::builder()
        .tool(quick("count", &executions))
        .tool(until_cancelled(&executions, &saw_cancel))
        .task_store(store.clone())
        .task_limits(limits)
        .build()
        .unwrap();
    let ana = registry.open_run("run-ana", &subject("ana"));
    let bo = registry.open_run("run-bo", &subject("bo"));
    let bo_first = start(&bo, "b0", "count", json!({"n": 0})).unwrap();
    assert_eq!(wait(&bo, bo_first.id()).json(), &json!({"done": 0}));

    // Ana ends ten times the total of tasks, by cancelling and by letting them finish.
    let mut ana_ended = Vec::new();
    for n in 0..30 {
        let task = if n % 2 == 0 {
            let task = start(&ana, &format!("a{n}"), "wait_for_cancel", json!({})).unwrap();
            // Bo's task, ana's earlier ones and this one.
            eventually("the tool started", || executions.get() == n + 2);
            pollster::block_on(ana.cancel_task(task.id())).unwrap();
            eventually("the cancelled tool stopped", || {
                saw_cancel.get() == n / 2 + 1
            });
            task
        } else {
            let task = start(&ana, &format!("a{n}"), "count", json!({"n": n})).unwrap();
            let _ = wait(&ana, task.id());
            task
        };
        ana_ended.push(task.id().to_owned());
    }
    // Then fills her share of running tasks.
    let running: Vec<Task> = (0..2)
        .map(|n| start(&ana, &format!("r{n}"), "wait_for_cancel", json!({})).unwrap())
        .collect();
    let third = start(&ana, "r2", "wait_for_cancel", json!({})).unwrap_err();
    assert!(
        third
            .error_text()
            .unwrap()
            .contains("you run 2 tasks already"),
        "{third:?}"
    );

    // Bo still starts a task: ana's thirty ended tasks take no place.
    let bo_next = start(&bo, "b1", "count", json!({"n": 1})).unwrap();
    assert_eq!(wait(&bo, bo_next.id()).json(), &json!({"done": 1}));
    // Ana keeps her four newest ended tasks, not one more; bo's first result is still there.
    let kept: Vec<&String> = ana_ended
        .iter()
        .filter(|id| status(&ana, id).is_ok())
        .collect();
    assert_eq!(kept, ana_ended[26..].iter().collect::<Vec<_>>());
    assert_eq!(
        pollster::block_on(bo.task_result(bo_first.id()))
            .unwrap()
            .json(),
        &json!({"done": 0})
    );
    // Two running, four of ana's ended, two of bo's.
    assert_eq!(store.len(), 8);

    // Ended tasks in all: six. Carol's two push out the oldest, bo's first.
    let carol = registry.open_run("run-carol", &subject("carol"));
    for n in 0..2 {
        let task = start(&carol, &format!("c{n}"), "count", json!({"n": n})).unwrap();
        let _ = wait(&carol, task.id());
    }
    assert_eq!(store.len(), 8);
    assert!(matches!(
        status(&bo, bo_first.id()),
        Err(TaskError::UnknownId { .. })
    ));
    assert!(status(&bo, bo_next.id()).is_ok());
    // Bo's two, ana's thirty and two running, carol's two.
    eventually("every tool started", || executions.get() == 36);
    for task in &running {
        pollster::block_on(ana.cancel_task(task.id())).unwrap();
    }
    eventually("every tool saw its cancel", || saw_cancel.get() == 17);
}

/// N23: a task's result larger than [`TaskLimits::result_bytes`] is not kept, nor cut: the
/// task fails with a message that names the bound and how to raise it.
#[test]
fn a_result_larger_than_the_bound_fails_its_task_saying_so() {
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("echo", "Say the text back, as long as it is.")
                .scopes(["jobs:run"])
                .parameters(json!({
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                }))
                .task()
                .handler(|_ctx, args: Value| Ok::<_, String>(args["text"].clone())),
        )
        .task_limits(TaskLimits::new().with_result_bytes(1_000))
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject("ana"));
    let small = start(&run, "c1", "echo", json!({"text": "x".repeat(100)})).unwrap();
    assert_eq!(wait(&run, small.id()).json(), &json!("x".repeat(100)));
    assert_eq!(
        status(&run, small.id()).unwrap().status(),
        TaskStatus::Completed
    );

    let large = start(&run, "c2", "echo", json!({"text": "y".repeat(5_000)})).unwrap();
    let answer = wait(&run, large.id());
    assert_eq!(answer.error_kind(), Some(ErrorKind::ExecutionFailed));
    assert_eq!(answer.call_id(), "c2");
    let text = answer.error_text().unwrap();
    assert!(
        text.contains("(1000 bytes)") && text.contains("TaskLimits::with_result_bytes"),
        "{text}"
    );
    assert!(!text.contains("yyy"), "the result was kept in part: {text}");
    let ended = status(&run, large.id()).unwrap();
    assert_eq!(ended.status(), TaskStatus::Failed);
    assert_eq!(ended.message(), Some(text));
}

#[test]
fn an_ended_task_is_forgotten_after_its_ttl() {
    let executions = Counter::default();
    let store = Arc::new(MemoryTaskStore::new());
    let ttl = Duration::from_millis(150);
    let registry = Registry::builder()
        .tool(quick("count", &executions))
        .task_store(store.clone())
        .task_limits(TaskLimits::new().with_total(1).with_ttl(ttl))
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject("ana"));
    let task = start(&run, "c1", "count", json!({"n": 1})).unwrap();
    assert_eq!(wait(&run, task.id()).json(), &json!({"done": 1}));
    let ended = status(&run, task.id()).unwrap();
    assert_eq!(ended.ttl(), ttl);
    // Kept, but an ended task takes no place of the total of one.
    let next = start(&run, "c2", "count", json!({"n": 2})).unwrap();
    assert_eq!(wait(&run, next.id()).json(), &json!({"done": 2}));
    let next = status(&run, next.id()).unwrap();

    eventually("the task expired", || {
        SystemTime::now() > ended.expires_at().unwrap()
    });
    assert!(matches!(
        status(&run, task.id()),
        Err(TaskError::UnknownId { .. })
    ));
    assert!(matches!(
        pollster::block_on(run.task_result(task.id())),
        Err(TaskError::UnknownId { .. })
    ));
    eventually("the second task expired", || {
        SystemTime::now() > next.expires_at().unwrap()
    });
    assert!(store.is_empty());
    let last = start(&run, "c3", "count", json!({"n": 3})).unwrap();
    assert_eq!(wait(&run, last.id()).json(), &json!({"done": 3}));
}

#[test]
fn another_principal_can_neither_read_nor_cancel_a_task() {
    let (registry, executions, saw_cancel) = cancellable();
    let ana = registry.open_run("run-ana", &subject("ana"));
    let task = start(&ana, "c1", "wait_for_cancel", json!({})).unwrap();
    eventually("the tool started", || executions.get() == 1);

    let strangers = [
        registry.open_run("run-bo", &subject("bo")),
        // Same principal name in another tenant.
        registry.open_run(
            "run-other-tenant",
            &Subject::new("globex")
                .with_scopes(["jobs:run"])
                .with_principal("ana"),
        ),
        // No principal at all.
        registry.open_run(
            "run-nobody",
            &Subject::new("acme").with_scopes(["jobs:run"]),
        ),
    ];
    for stranger in &strangers {
        let unknown = |result: Result<(), TaskError>| {
            assert!(
                matches!(&result, Err(TaskError::UnknownId { id }) if id == task.id()),
                "{}: {result:?}",
                stranger.id()
            );
        };
        unknown(status(stranger, task.id()).map(drop));
        unknown(pollster::block_on(stranger.cancel_task(task.id())).map(drop));
        unknown(pollster::block_on(stranger.task_result(task.id())).map(drop));
        unknown(pollster::block_on(stranger.wait_task(task.id())).map(drop));
    }
    // The same error as for an id that never existed: nothing leaks.
    let never = status(&strangers[0], "task_0").unwrap_err().to_string();
    let theirs = status(&strangers[0], task.id()).unwrap_err().to_string();
    assert_eq!(never.replace("task_0", "X"), theirs.replace(task.id(), "X"));

    assert_eq!(saw_cancel.get(), 0, "a stranger's cancel reached the tool");
    assert_eq!(
        status(&ana, task.id()).unwrap().status(),
        TaskStatus::Working
    );
    // Another run of the same principal (a reconnect) reads and cancels it.
    let again = registry.open_run("run-ana-2", &subject("ana"));
    assert_eq!(status(&again, task.id()).unwrap().run_id(), "run-ana");
    pollster::block_on(again.cancel_task(task.id())).unwrap();
    eventually("the tool saw the owner's cancel", || saw_cancel.get() == 1);
}

/// Answers every question once the test opens the gate, so that a task can be seen waiting
/// for input.
#[derive(Clone, Default)]
struct Gatekeeper(Arc<(Mutex<bool>, Condvar)>);

impl Gatekeeper {
    fn open(&self) {
        *self.0.0.lock().unwrap() = true;
        self.0.1.notify_all();
    }
}

impl CallHost for Gatekeeper {
    fn elicit<'a>(
        &'a self,
        _call: &CallInfo<'_>,
        _request: ElicitRequest,
    ) -> BoxFuture<'a, Result<Elicitation<Value>, ElicitError>> {
        let (open, changed) = &*self.0;
        let guard = open.lock().unwrap();
        drop(changed.wait_while(guard, |open| !*open).unwrap());
        Box::pin(async { Ok(Elicitation::Accepted(json!({"confirm": true}))) })
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Go on.
    confirm: bool,
}

#[test]
fn progress_and_questions_show_in_the_task() {
    let keeper = Gatekeeper::default();
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("import_rows", "Import rows, asking before the last step.")
                .scopes(["jobs:run"])
                .task()
                .async_handler(|ctx: ToolContext, _args: Value| async move {
                    ctx.progress(1.0, Some(2.0), "half");
                    let answer = ctx
                        .elicit::<Confirm>("Overwrite the old rows?")
                        .await
                        .map_err(|error| error.to_string())?;
                    ctx.progress(2.0, Some(2.0), "all");
                    Ok::<_, String>(json!(answer.accepted().is_some_and(|c| c.confirm)))
                }),
        )
        .host(keeper.clone())
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject("ana"));
    let task = start(&run, "c1", "import_rows", json!({})).unwrap();
    eventually("the task asks", || {
        status(&run, task.id()).unwrap().status() == TaskStatus::InputRequired
    });
    let asking = status(&run, task.id()).unwrap();
    assert_eq!(asking.message(), Some("Overwrite the old rows?"));
    let progress = asking.progress().unwrap();
    assert_eq!((progress.done, progress.total), (1.0, Some(2.0)));
    assert_eq!(progress.message.as_deref(), Some("half"));

    keeper.open();
    assert_eq!(wait(&run, task.id()).json(), &json!(true));
    let ended = status(&run, task.id()).unwrap();
    assert_eq!(ended.status(), TaskStatus::Completed);
    assert_eq!(ended.progress().unwrap().done, 2.0);
    assert_eq!(ended.message(), None);
}

#[test]
fn a_failing_tool_ends_its_task_failed_and_audited() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("failing_job", "Fail on purpose.")
                .scopes(["jobs:run"])
                .task()
                .handler(|_, _| Err::<Value, _>("the disk is full")),
        )
        .audit_sink(recorder(&events))
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject("ana"));
    let task = start(&run, "c1", "failing_job", json!({"secret": "s3cr3t"})).unwrap_err();
    // Extra arguments are refused by the schema: the same as a call.
    assert_eq!(task.error_kind(), Some(ErrorKind::InvalidArguments));
    let task = start(&run, "c2", "failing_job", json!({})).unwrap();
    let answer = wait(&run, task.id());
    assert_eq!(answer.error_kind(), Some(ErrorKind::ExecutionFailed));
    let ended = status(&run, task.id()).unwrap();
    assert_eq!(ended.status(), TaskStatus::Failed);
    assert!(
        ended.message().unwrap().contains("the disk is full"),
        "{ended:?}"
    );
    eventually("the end is audited", || {
        events
            .lock()
            .unwrap()
            .iter()
            .any(|event| matches!(event, AuditEvent::Task(t) if t.kind == TaskEventKind::Finished))
    });
    let events = events.lock().unwrap();
    let finished = events
        .iter()
        .find_map(|event| match event {
            AuditEvent::Task(t) if t.kind == TaskEventKind::Finished => Some(t.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(finished.id, task.id());
    assert_eq!(finished.status, "failed");
    assert_eq!(finished.outcome, Some(ErrorKind::ExecutionFailed));
    assert_eq!(finished.principal.as_deref(), Some("ana"));
    assert_eq!(finished.argument_bytes, 2);
    let json = serde_json::to_string(&*events).unwrap();
    assert!(!json.contains("s3cr3t"), "an argument value was audited");
}

/// A task store that cannot keep anything: the registry must refuse, not run unbounded.
struct BrokenStore;

/// What every method of [`BrokenStore`] answers.
fn down<'a, T: Send + 'a>() -> BoxFuture<'a, Result<T, StoreError>> {
    Box::pin(async { Err(StoreError::new("the database is down")) })
}

impl TaskStore for BrokenStore {
    fn insert<'a>(
        &'a self,
        _task: &'a Task,
        _limits: &'a TaskLimits,
    ) -> BoxFuture<'a, Result<Insertion, StoreError>> {
        down()
    }

    fn get<'a>(&'a self, _id: &'a str) -> BoxFuture<'a, Result<Option<Task>, StoreError>> {
        down()
    }

    fn update<'a>(
        &'a self,
        _id: &'a str,
        _update: TaskUpdate,
        _at: SystemTime,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        down()
    }

    fn finish<'a>(
        &'a self,
        _id: &'a str,
        _end: TaskEnd,
    ) -> BoxFuture<'a, Result<Finish, StoreError>> {
        down()
    }

    fn result<'a>(
        &'a self,
        _id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Observation>, StoreError>> {
        down()
    }
}

#[test]
fn a_store_that_fails_starts_nothing() {
    let executions = Counter::default();
    let registry = Registry::builder()
        .tool(quick("count", &executions))
        .task_store(BrokenStore)
        .build()
        .unwrap();
    let run = registry
        .open_run("run-1", &subject("ana"))
        .with_call_budget(1);
    let refused = start(&run, "c1", "count", json!({"n": 1})).unwrap_err();
    assert_eq!(refused.error_kind(), Some(ErrorKind::Unavailable));
    assert_eq!(executions.get(), 0);
    assert!(matches!(
        status(&run, "task_x"),
        Err(TaskError::Store(error)) if error.to_string().contains("database is down")
    ));
    // The refused task did not spend the run's budget.
    let ok = run.call_blocking(ToolCall::new("c2", "count", json!({"n": 2})));
    assert_eq!(ok.json(), &json!({"done": 2}));
}

/// A task whose questions are for its caller asks at most `MAX_TASK_QUESTIONS` at once (one
/// more fails at once, the others still wait), and a question whose wait runs out is
/// withdrawn: the task no longer shows it, and answering it afterwards is ignored.
#[test]
fn a_tasks_questions_for_its_caller_are_bounded_and_withdrawn_when_the_wait_ends() {
    use registry_core::call::CallOptions;
    use registry_core::task::MAX_TASK_QUESTIONS;

    let registry = Registry::builder()
        .tool(
            DynamicTool::new("survey", "Ask one question more than a task may at once.")
                .scopes(["jobs:run"])
                .task()
                .async_handler(|ctx: ToolContext, _args: Value| async move {
                    let asked = (0..=MAX_TASK_QUESTIONS)
                        .map(|n| ctx.elicit::<Confirm>(format!("Question {n}?")));
                    let answers = join_all(asked.map(Box::pin).collect()).await;
                    let failed: Vec<String> = answers
                        .iter()
                        .filter_map(|answer| answer.as_ref().err().map(ToString::to_string))
                        .collect();
                    let yes = answers
                        .into_iter()
                        .filter(
                            |answer| matches!(answer, Ok(Elicitation::Accepted(c)) if c.confirm),
                        )
                        .count();
                    Ok::<_, String>(json!({ "yes": yes, "failed": failed }))
                }),
        )
        .tool(
            DynamicTool::new("impatient", "Ask, but wait only a moment.")
                .scopes(["jobs:run"])
                .task()
                .async_handler(|ctx: ToolContext, _args: Value| async move {
                    let answer = ctx.elicit::<Confirm>("Quick?").await;
                    Ok::<_, String>(json!(answer.err().map(|error| error.to_string())))
                }),
        )
        .build()
        .unwrap();
    let run = registry.open_run("run-1", &subject("ana"));
    let options = || CallOptions::new().with_task_questions_for_caller();

    let call = ToolCall::new("c1", "survey", json!({}));
    let task = pollster::block_on(run.start_task_with(call, options())).unwrap();
    eventually("the task asks as many as it may", || {
        status(&run, task.id()).unwrap().questions().count() == MAX_TASK_QUESTIONS
    });
    let asking = status(&run, task.id()).unwrap();
    assert_eq!(asking.status(), TaskStatus::InputRequired);
    let keys: Vec<String> = asking.questions().map(|q| q.key().to_owned()).collect();
    // Too many answers at once are refused whole; nothing was answered.
    let flood = (0..=MAX_TASK_QUESTIONS).map(|n| (format!("k{n}"), Elicitation::Declined));
    assert!(matches!(
        pollster::block_on(run.answer_task(task.id(), flood)),
        Err(TaskError::InvalidAnswer { .. })
    ));
    // Another principal's answers: unknown task.
    let bo = registry.open_run("run-2", &subject("bo"));
    let foreign = [(
        keys[0].clone(),
        Elicitation::Accepted(json!({"confirm": true})),
    )];
    assert!(matches!(
        pollster::block_on(bo.answer_task(task.id(), foreign)),
        Err(TaskError::UnknownId { .. })
    ));
    let answers = keys
        .iter()
        .map(|key| (key.clone(), Elicitation::Accepted(json!({"confirm": true}))));
    let done = pollster::block_on(run.answer_task(task.id(), answers)).unwrap();
    assert_eq!(done.answered, keys);
    let answer = wait(&run, task.id());
    assert_eq!(
        answer.json()["yes"],
        json!(MAX_TASK_QUESTIONS),
        "{answer:?}"
    );
    let failed = answer.json()["failed"].as_array().unwrap().clone();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        failed[0].as_str().unwrap().contains("at once already"),
        "{failed:?}"
    );
    // After the end: refused, saying it ended.
    let late = [(keys[0].clone(), Elicitation::Declined)];
    assert!(matches!(
        pollster::block_on(run.answer_task(task.id(), late)),
        Err(TaskError::AlreadyFinished {
            status: TaskStatus::Completed,
            ..
        })
    ));

    let call = ToolCall::new("c2", "impatient", json!({}));
    let options = options().with_elicit_timeout(Duration::from_millis(200));
    let task = pollster::block_on(run.start_task_with(call, options)).unwrap();
    eventually("the question is asked", || {
        status(&run, task.id()).unwrap().questions().count() == 1
    });
    let key = status(&run, task.id())
        .unwrap()
        .questions()
        .next()
        .unwrap()
        .key()
        .to_owned();
    let answer = wait(&run, task.id());
    assert!(
        answer.json().as_str().unwrap().contains("withdrawn"),
        "{answer:?}"
    );
    assert_eq!(status(&run, task.id()).unwrap().questions().count(), 0);
    let late = [(key, Elicitation::Declined)];
    assert!(pollster::block_on(run.answer_task(task.id(), late)).is_err());
}

/// Every future of `futures`, polled together, their outputs in order.
async fn join_all<F: std::future::Future + Unpin>(mut futures: Vec<F>) -> Vec<F::Output> {
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none()
                && let std::task::Poll::Ready(value) = std::pin::Pin::new(future).poll(cx)
            {
                *output = Some(value);
            }
        }
        if outputs.iter().all(Option::is_some) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}
