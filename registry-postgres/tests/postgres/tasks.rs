//! `PgTaskStore` through the real core: tasks started on one replica and read, cancelled and
//! collected on another; bounds across replicas; ownership; every character kept; leases
//! that run out when a replica dies; results that expire.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{bounded, cluster, sql, wait_until, wait_until_async};
use registry_core::call::CallOptions;
use registry_core::content::Content;
use registry_core::host::Elicitation;
use registry_core::server::RunExt;
use registry_core::task::{TaskError, TaskLimits, TaskStatus};
use registry_core::{DynamicTool, ErrorKind, Registry, Subject, ToolCall, ToolContext};
use registry_postgres::ControlPlane;
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(60);

/// A tool's hostile text: NUL, a newline, a carriage return, bidi overrides.
const HOSTILE: &str = "line\u{0}one\nline two\r\u{202e}evil\u{202c}\u{2066}x\u{2069}";

/// What the spinning tool of one replica saw.
#[derive(Clone, Default)]
struct Spin {
    /// Tripped by the test to end every spinning tool.
    stop: Arc<AtomicBool>,
    /// When a spinning tool saw its cancellation.
    cancelled_at: Arc<Mutex<Option<Instant>>>,
    started: Arc<AtomicBool>,
}

impl Spin {
    fn cancelled_at(&self) -> Option<Instant> {
        *self.cancelled_at.lock().unwrap()
    }
}

/// `spin`: runs until cancelled (or the test says stop), noting when it saw the
/// cancellation. `quick`: returns text and bytes at once. `hostile`: reports progress with
/// hostile text, then fails with it.
fn tools(spin: &Spin) -> Vec<DynamicTool> {
    let seen = spin.clone();
    let spinning = DynamicTool::new("spin", "Spin until cancelled.")
        .public()
        .task()
        .handler(move |ctx: &ToolContext, _: Value| {
            seen.started.store(true, Ordering::SeqCst);
            while !seen.stop.load(Ordering::SeqCst) {
                if ctx.is_cancelled() {
                    seen.cancelled_at
                        .lock()
                        .unwrap()
                        .get_or_insert(Instant::now());
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Ok::<_, String>(json!("stopped"))
        });
    let quick = DynamicTool::new("quick", "Answer at once.")
        .public()
        .task()
        .handler(|_: &ToolContext, _: Value| {
            Ok::<_, String>(vec![
                Content::text(HOSTILE),
                Content::image(vec![0u8, 1, 2, 255, b'\n'], "image/png"),
            ])
        });
    let hostile = DynamicTool::new("hostile", "Report and fail with hostile text.")
        .public()
        .task()
        .handler(|ctx: &ToolContext, _: Value| {
            ctx.progress(1.0, Some(2.0), HOSTILE);
            Err::<Value, _>(HOSTILE.to_owned())
        });
    let asking = DynamicTool::new("ask", "Ask two things at once, then say both.")
        .public()
        .task()
        .async_handler(|ctx: ToolContext, _: Value| async move {
            let (first, second) = futures_join(
                ctx.elicit::<Word>(format!("first {HOSTILE}")),
                ctx.elicit::<Word>(format!("second {HOSTILE}")),
            )
            .await;
            let word = |answer: Result<Elicitation<Word>, _>| match answer {
                Ok(Elicitation::Accepted(Word { word })) => Ok(word),
                Ok(_) => Ok("-".to_owned()),
                Err(error) => Err(format!("{error}")),
            };
            Ok::<_, String>(json!([word(first)?, word(second)?]))
        });
    let big = DynamicTool::new("big", "Answer with 8 KiB of text.")
        .public()
        .task()
        .handler(|_: &ToolContext, _: Value| Ok::<_, String>(json!("z".repeat(8 * 1024))));
    vec![spinning, quick, hostile, asking, big]
}

/// What `ask` asks.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Word {
    /// A word.
    word: String,
}

/// Both futures, polled together.
async fn futures_join<A: std::future::Future, B: std::future::Future>(
    a: A,
    b: B,
) -> (A::Output, B::Output) {
    let (mut a, mut b) = (std::pin::pin!(a), std::pin::pin!(b));
    let (mut first, mut second) = (None, None);
    std::future::poll_fn(|cx| {
        if first.is_none()
            && let std::task::Poll::Ready(value) = a.as_mut().poll(cx)
        {
            first = Some(value);
        }
        if second.is_none()
            && let std::task::Poll::Ready(value) = b.as_mut().poll(cx)
        {
            second = Some(value);
        }
        if first.is_some() && second.is_some() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    (first.unwrap(), second.unwrap())
}

/// A replica: its own plane (task lease `lease`) and registry on the shared database.
async fn replica(
    url: &str,
    name: &str,
    spin: &Spin,
    limits: TaskLimits,
    lease: Duration,
) -> (ControlPlane, Registry) {
    let plane = ControlPlane::builder(&crate::common::with_connect_timeout(url))
        .replica(name)
        .heartbeat(Duration::from_millis(50))
        .task_lease(lease)
        .timeout(Duration::from_secs(2))
        .connect()
        .await
        .expect("the plane connects");
    let mut builder = Registry::builder()
        .task_store(plane.task_store())
        .task_limits(limits);
    for tool in tools(spin) {
        builder = builder.tool(tool);
    }
    (plane, builder.build().unwrap())
}

fn ana() -> Subject {
    Subject::new("acme").with_principal("ana")
}

fn start(id: &str, tool: &str) -> ToolCall {
    ToolCall::new(id, tool, json!({}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_started_on_one_replica_is_read_cancelled_and_collected_on_another() {
    let (_cluster, url) = cluster("tasks_across");
    bounded(LIMIT, async {
        let spin = Spin::default();
        let limits = TaskLimits::new();
        let (_a_plane, a) = replica(&url, "a", &spin, limits, Duration::from_secs(10)).await;
        let (_b_plane, b) = replica(&url, "b", &spin, limits, Duration::from_secs(10)).await;
        let on_a = a.open_run("run-a", &ana());
        let on_b = b.open_run("run-b", &ana());

        let task = on_a.start_task(start("c1", "spin")).await.unwrap();
        wait_until(LIMIT, "the tool starts on a", || {
            spin.started.load(Ordering::SeqCst)
        })
        .await;
        let read = on_b.task(task.id()).await.unwrap();
        assert_eq!(read.status(), TaskStatus::Working);
        assert_eq!(read.tool_name(), "spin");
        assert_eq!(read.tool_version(), task.tool_version());
        assert_eq!(read.principal(), Some("ana"));
        assert!(matches!(
            on_b.task_result(task.id()).await,
            Err(TaskError::NotFinished { .. })
        ));

        let cancelled = on_b.cancel_task(task.id()).await.unwrap();
        let asked = Instant::now();
        assert_eq!(cancelled.status(), TaskStatus::Cancelled);
        wait_until(
            Duration::from_secs(1),
            "the cancel reaches the tool on a",
            || spin.cancelled_at().is_some(),
        )
        .await;
        let latency = spin
            .cancelled_at()
            .unwrap()
            .saturating_duration_since(asked);
        eprintln!("a cancel on b reached the tool on a in {latency:?}");
        assert!(latency < Duration::from_secs(1), "{latency:?}");

        // Both replicas answer the same: cancelled, and the result says so.
        for run in [&on_a, &on_b] {
            let answer = run.wait_task(task.id()).await.unwrap();
            assert_eq!(
                answer.error_kind(),
                Some(ErrorKind::Cancelled),
                "{answer:?}"
            );
            assert_eq!(answer.call_id(), "c1");
            assert_eq!(
                run.task(task.id()).await.unwrap().status(),
                TaskStatus::Cancelled
            );
        }
        assert!(matches!(
            on_a.cancel_task(task.id()).await,
            Err(TaskError::AlreadyFinished {
                status: TaskStatus::Cancelled,
                ..
            })
        ));

        // A result of text and bytes, made on a, collected whole on b.
        let quick = on_a.start_task(start("c2", "quick")).await.unwrap();
        let here = on_a.wait_task(quick.id()).await.unwrap();
        let there = on_b.wait_task(quick.id()).await.unwrap();
        assert_eq!(there, here);
        assert_eq!(
            there.blocks(),
            [
                Content::text(HOSTILE),
                Content::image(vec![0u8, 1, 2, 255, b'\n'], "image/png")
            ]
        );
        assert_eq!(
            on_b.task(quick.id()).await.unwrap().status(),
            TaskStatus::Completed
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_questions_asked_on_one_replica_are_answered_on_another() {
    let (_cluster, url) = cluster("tasks_questions");
    bounded(LIMIT, async {
        let spin = Spin::default();
        let limits = TaskLimits::new();
        let (_a_plane, a) = replica(&url, "a", &spin, limits, Duration::from_secs(10)).await;
        let (_b_plane, b) = replica(&url, "b", &spin, limits, Duration::from_secs(10)).await;
        let on_a = a.open_run("run-a", &ana());
        let on_b = b.open_run("run-b", &ana());
        let options = CallOptions::new().with_task_questions_for_caller();
        let task = on_a
            .start_task_with(start("c1", "ask"), options)
            .await
            .unwrap();

        wait_until_async(LIMIT, "b reads both questions", || async {
            on_b.task(task.id()).await.unwrap().questions().count() == 2
        })
        .await;
        let asked: Vec<_> = on_b
            .task(task.id())
            .await
            .unwrap()
            .questions()
            .cloned()
            .collect();
        assert_eq!(
            on_b.task(task.id()).await.unwrap().status(),
            TaskStatus::InputRequired
        );
        // Every character of the question reads back on the other replica.
        let mut messages: Vec<&str> = asked.iter().map(|q| q.message()).collect();
        messages.sort_unstable();
        assert_eq!(
            messages,
            [format!("first {HOSTILE}"), format!("second {HOSTILE}")]
        );
        let key_of = |prefix: &str| {
            asked
                .iter()
                .find(|q| q.message().starts_with(prefix))
                .unwrap()
                .key()
                .to_owned()
        };
        let (first, second) = (key_of("first"), key_of("second"));

        // Another principal's answers: an unknown task, nothing answered.
        let bo = b.open_run("run-bo", &Subject::new("acme").with_principal("bo"));
        let foreign = [(first.clone(), Elicitation::Accepted(json!({"word": "no"})))];
        assert!(matches!(
            bo.answer_task(task.id(), foreign).await,
            Err(TaskError::UnknownId { .. })
        ));
        // One answer on b: the other question still waits, on both replicas.
        let done = on_b
            .answer_task(
                task.id(),
                [(
                    first.clone(),
                    Elicitation::Accepted(json!({"word": HOSTILE})),
                )],
            )
            .await
            .unwrap();
        assert_eq!(done.answered, std::slice::from_ref(&first));
        wait_until_async(LIMIT, "a takes the first answer", || async {
            let read = on_a.task(task.id()).await.unwrap();
            read.questions().count() == 1 && read.status() == TaskStatus::InputRequired
        })
        .await;
        // The answered key again, and one never asked: ignored.
        let again = on_b
            .answer_task(
                task.id(),
                [
                    (first.clone(), Elicitation::Declined),
                    ("q99".to_owned(), Elicitation::Declined),
                ],
            )
            .await
            .unwrap();
        assert!(again.answered.is_empty());
        assert_eq!(again.ignored.len(), 2);
        on_b.answer_task(
            task.id(),
            [(second, Elicitation::Accepted(json!({"word": "two"})))],
        )
        .await
        .unwrap();
        let answer = on_b.wait_task(task.id()).await.unwrap();
        assert_eq!(answer.json(), &json!([HOSTILE, "two"]), "{answer:?}");
        assert!(matches!(
            on_b.answer_task(task.id(), [(first, Elicitation::Declined)])
                .await,
            Err(TaskError::AlreadyFinished {
                status: TaskStatus::Completed,
                ..
            })
        ));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bounds_hold_across_replicas_started_at_once() {
    let (_cluster, url) = cluster("tasks_bounds");
    bounded(LIMIT, async {
        let spin = Spin::default();
        let limits = TaskLimits::new().with_per_principal(2).with_total(3);
        let lease = Duration::from_secs(10);
        let (_a_plane, a) = replica(&url, "a", &spin, limits, lease).await;
        let (_b_plane, b) = replica(&url, "b", &spin, limits, lease).await;

        // Eight starts of ana's at once, half on each replica: exactly two run.
        let mut starts = Vec::new();
        for n in 0..8 {
            let registry = if n % 2 == 0 { a.clone() } else { b.clone() };
            starts.push(tokio::spawn(async move {
                let run = registry.open_run(format!("run-{n}"), &ana());
                run.start_task(start(&format!("c{n}"), "spin")).await
            }));
        }
        let mut started = 0;
        for start in starts {
            match start.await.unwrap() {
                Ok(_) => started += 1,
                Err(refused) => {
                    assert_eq!(refused.error_kind(), Some(ErrorKind::RateLimited));
                    assert!(
                        refused
                            .error_text()
                            .unwrap()
                            .contains("you run 2 tasks already"),
                        "{refused:?}"
                    );
                }
            }
        }
        assert_eq!(started, 2, "the per-principal bound holds across replicas");

        // Another principal takes the last place in all; then the store is full for anyone.
        let bo = Subject::new("acme").with_principal("bo");
        b.open_run("run-bo", &bo)
            .start_task(start("bo1", "spin"))
            .await
            .unwrap();
        let full = a
            .open_run("run-bo-2", &bo)
            .start_task(start("bo2", "spin"))
            .await
            .unwrap_err();
        assert_eq!(full.error_kind(), Some(ErrorKind::RateLimited));
        assert!(
            full.error_text()
                .unwrap()
                .contains("runs as many tasks as it may (3)"),
            "{full:?}"
        );
        spin.stop.store(true, Ordering::SeqCst);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_its_principals_and_every_character_reads_back() {
    let (_cluster, url) = cluster("tasks_owners");
    bounded(LIMIT, async {
        let spin = Spin::default();
        let limits = TaskLimits::new().with_per_principal(1);
        let lease = Duration::from_secs(10);
        let (_a_plane, a) = replica(&url, "a", &spin, limits, lease).await;
        let (_b_plane, b) = replica(&url, "b", &spin, limits, lease).await;

        // Two principals the crate's text escaping would write alike stay two owners.
        let nul = Subject::new("acme").with_principal("ana\u{0}");
        let look_alike = Subject::new("acme").with_principal("ana\\u{0}");
        let mine = a
            .open_run("run-1", &nul)
            .start_task(start("c1", "hostile"))
            .await
            .unwrap();
        let theirs = a
            .open_run("run-2", &look_alike)
            .start_task(start("c2", "hostile"))
            .await
            .unwrap();
        let nul_on_b = b.open_run("run-3", &nul);
        let look_alike_on_b = b.open_run("run-4", &look_alike);
        let ended = nul_on_b.wait_task(mine.id()).await.unwrap();
        let _ = look_alike_on_b.wait_task(theirs.id()).await.unwrap();

        for (run, foreign) in [
            (&nul_on_b, theirs.id()),
            (&look_alike_on_b, mine.id()),
            (&b.open_run("run-5", &ana()), mine.id()),
        ] {
            for refused in [
                run.task(foreign).await.unwrap_err(),
                run.cancel_task(foreign).await.unwrap_err(),
                run.task_result(foreign).await.unwrap_err(),
            ] {
                assert!(
                    matches!(refused, TaskError::UnknownId { .. }),
                    "{refused:?}"
                );
            }
        }
        // An id no task can have (a NUL) is unknown, not a store failure.
        assert!(matches!(
            nul_on_b.task("task_\u{0}").await,
            Err(TaskError::UnknownId { .. })
        ));

        let task = nul_on_b.task(mine.id()).await.unwrap();
        assert_eq!(task.principal(), Some("ana\u{0}"));
        assert_eq!(task.status(), TaskStatus::Failed);
        let progress = task.progress().expect("the progress is kept");
        assert_eq!(progress.message.as_deref(), Some(HOSTILE));
        assert_eq!((progress.done, progress.total), (1.0, Some(2.0)));
        assert!(task.message().unwrap().contains(HOSTILE), "{task:?}");
        assert_eq!(ended.error_kind(), Some(ErrorKind::ExecutionFailed));
        assert!(ended.error_text().unwrap().contains(HOSTILE), "{ended:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_replicas_task_is_failed_with_the_reason_within_the_lease() {
    let (_cluster, url) = cluster("tasks_lease");
    bounded(LIMIT, async {
        let spin = Spin::default();
        let limits = TaskLimits::new().with_per_principal(1);
        let lease = Duration::from_millis(600);
        // Replica a lives on a runtime of its own: shutting it down stops everything of a's
        // at once (its lease keeper, its connections), as a killed process would.
        let (task_id, a_runtime) = {
            let url = url.clone();
            let spin = spin.clone();
            tokio::task::spawn_blocking(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .unwrap();
                let id = runtime.block_on(async {
                    let (_plane, a) = replica(&url, "a-dies", &spin, limits, lease).await;
                    let task = a
                        .open_run("run-a", &ana())
                        .start_task(start("c1", "spin"))
                        .await
                        .unwrap();
                    task.id().to_owned()
                });
                (id, runtime)
            })
            .await
            .unwrap()
        };
        let (_b_plane, b) = replica(&url, "b", &spin, limits, lease).await;
        let on_b = b.open_run("run-b", &ana());
        // Alive, a renews the lease: the task runs well past one lease.
        tokio::time::sleep(lease * 2).await;
        assert_eq!(on_b.task(&task_id).await.unwrap().status(), TaskStatus::Working);
        assert!(
            on_b.start_task(start("c2", "spin")).await.is_err(),
            "ana's one place is taken while a lives"
        );

        tokio::task::spawn_blocking(move || a_runtime.shutdown_timeout(Duration::from_secs(5)))
            .await
            .unwrap();
        let died = Instant::now();
        let took = wait_until_async(lease * 3, "b sees a's task failed", || async {
            on_b.task(&task_id).await.unwrap().status() == TaskStatus::Failed
        })
        .await;
        eprintln!(
            "a dead replica's task was failed {took:?} after it died (lease {lease:?}), {:?} in all",
            died.elapsed()
        );
        let failed = on_b.task(&task_id).await.unwrap();
        let reason = failed.message().unwrap();
        assert!(
            reason.contains("a-dies") && reason.contains("lease"),
            "{reason}"
        );
        let answer = on_b.task_result(&task_id).await.unwrap();
        assert_eq!(answer.error_kind(), Some(ErrorKind::Unavailable));
        assert_eq!(answer.error_text(), Some(reason));
        assert_eq!(answer.call_id(), "c1");
        // The failed task no longer holds ana's place.
        let again = on_b.start_task(start("c3", "spin")).await.unwrap();
        assert_eq!(again.status(), TaskStatus::Working);
        spin.stop.store(true, Ordering::SeqCst);
        let _ = on_b.wait_task(again.id()).await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_task_expires_with_its_ttl_and_is_pruned() {
    let (_cluster, url) = cluster("tasks_ttl");
    bounded(LIMIT, async {
        let spin = Spin::default();
        let ttl = Duration::from_millis(300);
        let limits = TaskLimits::new().with_ttl(ttl);
        let lease = Duration::from_secs(10);
        let (_a_plane, a) = replica(&url, "a", &spin, limits, lease).await;
        let (_b_plane, b) = replica(&url, "b", &spin, limits, lease).await;
        let on_a = a.open_run("run-a", &ana());
        let on_b = b.open_run("run-b", &ana());

        let task = on_a.start_task(start("c1", "quick")).await.unwrap();
        let _ = on_a.wait_task(task.id()).await.unwrap();
        let ended = on_b.task(task.id()).await.unwrap();
        let expires = ended.expires_at().expect("an ended task expires");
        let kept_for = expires.duration_since(ended.updated_at()).unwrap();
        assert!(
            kept_for.abs_diff(ttl) < Duration::from_millis(5),
            "{kept_for:?}"
        );

        tokio::time::sleep(ttl + Duration::from_millis(100)).await;
        for refused in [
            on_b.task(task.id()).await.unwrap_err(),
            on_b.task_result(task.id()).await.unwrap_err(),
            on_a.cancel_task(task.id()).await.unwrap_err(),
        ] {
            assert!(
                matches!(refused, TaskError::UnknownId { .. }),
                "{refused:?}"
            );
        }
        // The next task kept deletes the expired row.
        let next = on_b.start_task(start("c2", "quick")).await.unwrap();
        let ids: Vec<String> = sql(&url)
            .await
            .query("SELECT id FROM registry_tasks", &[])
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert_eq!(ids, [next.id().to_owned()]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_loses_the_database_past_the_lease_cancels_its_own_tools() {
    let (mut cluster, url) = crate::common::own_cluster("tasks_lost");
    bounded(LIMIT, async {
        let spin = Spin::default();
        let lease = Duration::from_millis(600);
        let (_a_plane, a) = replica(&url, "a", &spin, TaskLimits::new(), lease).await;
        let on_a = a.open_run("run-a", &ana());
        on_a.start_task(start("c1", "spin")).await.unwrap();
        wait_until(LIMIT, "the tool starts", || {
            spin.started.load(Ordering::SeqCst)
        })
        .await;
        // Within the lease the tool goes on, database or not.
        let lost = Instant::now();
        tokio::task::block_in_place(|| cluster.stop()).expect("the cluster stops");
        tokio::time::sleep(lease / 3).await;
        assert!(
            spin.cancelled_at().is_none(),
            "cancelled before the lease ran out"
        );
        // Past the lease, the other replicas will have failed the task: its tool is stopped.
        wait_until(
            lease * 4,
            "the tool is cancelled once the lease ran out",
            || spin.cancelled_at().is_some(),
        )
        .await;
        let after = spin.cancelled_at().unwrap().saturating_duration_since(lost);
        eprintln!(
            "the tool was cancelled {after:?} after the database went away (lease {lease:?})"
        );
        // Not before a lease after the last renewal, which was at most one heartbeat (50 ms)
        // before the database went away.
        assert!(after >= lease - Duration::from_millis(50), "{after:?}");
        tokio::task::block_in_place(|| cluster.start_again()).expect("the cluster starts again");
    })
    .await;
}

/// N5 across replicas: ana starts and ends ten times the total of tasks, half on each
/// replica, then fills her share of running ones; bo still starts a task on either replica,
/// ana keeps only her share of ended tasks (the newest), and bo's result stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_tasks_deny_no_one_and_one_principals_results_push_out_no_one_elses() {
    let (_cluster, url) = cluster("tasks_ended");
    bounded(LIMIT, async {
        let spin = Spin::default();
        let limits = TaskLimits::new()
            .with_per_principal(2)
            .with_total(3)
            .with_ended_per_principal(3)
            .with_ended(5);
        let lease = Duration::from_secs(10);
        let (_a_plane, a) = replica(&url, "a", &spin, limits, lease).await;
        let (_b_plane, b) = replica(&url, "b", &spin, limits, lease).await;
        let bo = Subject::new("acme").with_principal("bo");
        let bo_on_b = b.open_run("run-bo-b", &bo);
        let bo_first = bo_on_b.start_task(start("b0", "quick")).await.unwrap();
        let _ = bo_on_b.wait_task(bo_first.id()).await.unwrap();

        let mut ana_ended = Vec::new();
        for n in 0..30 {
            let registry = if n % 2 == 0 { &a } else { &b };
            let run = registry.open_run(format!("run-ana-{n}"), &ana());
            let task = run
                .start_task(start(&format!("a{n}"), "quick"))
                .await
                .unwrap();
            let _ = run.wait_task(task.id()).await.unwrap();
            ana_ended.push(task.id().to_owned());
        }
        let on_a = a.open_run("run-ana", &ana());
        for n in 0..2 {
            on_a.start_task(start(&format!("r{n}"), "spin"))
                .await
                .unwrap();
        }
        let third = on_a.start_task(start("r2", "spin")).await.unwrap_err();
        assert!(
            third
                .error_text()
                .unwrap()
                .contains("you run 2 tasks already"),
            "{third:?}"
        );

        // Bo still starts tasks, on either replica: thirty ended tasks take no place.
        let bo_on_a = a.open_run("run-bo-a", &bo);
        let bo_next = bo_on_a.start_task(start("b1", "quick")).await.unwrap();
        let _ = bo_on_a.wait_task(bo_next.id()).await.unwrap();
        let mut kept = Vec::new();
        for id in &ana_ended {
            if on_a.task(id).await.is_ok() {
                kept.push(id.clone());
            }
        }
        assert_eq!(
            kept,
            ana_ended[27..],
            "ana keeps her three newest ended tasks"
        );
        assert!(
            bo_on_a
                .task_result(bo_first.id())
                .await
                .unwrap()
                .error_kind()
                .is_none(),
            "bo's first result is still kept"
        );
        let rows: Vec<(String, i64)> = sql(&url)
            .await
            .query(
                "SELECT status, count(*) FROM registry_tasks GROUP BY status ORDER BY status",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        assert_eq!(
            rows,
            [("completed".to_owned(), 5), ("working".to_owned(), 2)],
            "three of ana's ended tasks, two of bo's, ana's two running"
        );

        // Carol's two ended tasks push out the oldest of all: bo's first.
        let carol = a.open_run("run-carol", &Subject::new("acme").with_principal("carol"));
        for n in 0..2 {
            let task = carol
                .start_task(start(&format!("c{n}"), "quick"))
                .await
                .unwrap();
            let _ = carol.wait_task(task.id()).await.unwrap();
        }
        assert!(matches!(
            bo_on_a.task(bo_first.id()).await,
            Err(TaskError::UnknownId { .. })
        ));
        assert!(bo_on_a.task(bo_next.id()).await.is_ok());
        spin.stop.store(true, Ordering::SeqCst);
    })
    .await;
}

/// N23 across replicas: a result larger than `TaskLimits::result_bytes` is not kept: the task
/// is failed, saying which bound and how to raise it, on every replica, and the row holds no
/// more than the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_bound_is_kept_as_an_error_naming_it() {
    let (_cluster, url) = cluster("tasks_result_bytes");
    bounded(LIMIT, async {
        let spin = Spin::default();
        let limits = TaskLimits::new().with_result_bytes(4 * 1024);
        let lease = Duration::from_secs(10);
        let (_a_plane, a) = replica(&url, "a", &spin, limits, lease).await;
        let (_b_plane, b) = replica(&url, "b", &spin, limits, lease).await;
        let on_a = a.open_run("run-a", &ana());
        let on_b = b.open_run("run-b", &ana());

        let small = on_a.start_task(start("c1", "quick")).await.unwrap();
        let _ = on_a.wait_task(small.id()).await.unwrap();
        assert_eq!(
            on_b.task(small.id()).await.unwrap().status(),
            TaskStatus::Completed
        );

        let large = on_a.start_task(start("c2", "big")).await.unwrap();
        let _ = on_a.wait_task(large.id()).await.unwrap();
        let ended = on_b.task(large.id()).await.unwrap();
        assert_eq!(ended.status(), TaskStatus::Failed);
        let answer = on_b.task_result(large.id()).await.unwrap();
        assert_eq!(answer.error_kind(), Some(ErrorKind::ExecutionFailed));
        let text = answer.error_text().unwrap();
        assert!(
            text.contains("(4096 bytes)") && text.contains("TaskLimits::with_result_bytes"),
            "{text}"
        );
        assert_eq!(ended.message(), Some(text));
        let bytes: i32 = sql(&url)
            .await
            .query_one(
                "SELECT octet_length(result) FROM registry_tasks WHERE id = $1",
                &[&large.id()],
            )
            .await
            .unwrap()
            .get(0);
        assert!(bytes < 1024, "{bytes} bytes kept");
    })
    .await;
}

/// N22: replica a's pool (one connection) is jammed, its connection waiting on a table the
/// test holds locked, for four leases; its task's lease is still renewed (on the lease
/// keeper's connection of its own), so replica b does not fail the task and a's tool goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jammed_pool_does_not_let_the_leases_run_out() {
    let (_cluster, url) = cluster("tasks_pool");
    bounded(LIMIT, async {
        let spin = Spin::default();
        let lease = Duration::from_millis(600);
        let a_plane = ControlPlane::builder(&crate::common::with_connect_timeout(&url))
            .replica("a-jammed")
            .heartbeat(Duration::from_millis(50))
            .task_lease(lease)
            .timeout(Duration::from_secs(2))
            .pool_size(1)
            .connect()
            .await
            .expect("the plane connects");
        let mut builder = Registry::builder().task_store(a_plane.task_store());
        for tool in tools(&spin) {
            builder = builder.tool(tool);
        }
        let a = builder.build().unwrap();
        let (_b_plane, b) = replica(&url, "b", &spin, TaskLimits::new(), lease).await;
        let task = a
            .open_run("run-a", &ana())
            .start_task(start("c1", "spin"))
            .await
            .unwrap();
        wait_until(LIMIT, "the tool starts", || {
            spin.started.load(Ordering::SeqCst)
        })
        .await;

        let locker = sql(&url).await;
        locker
            .batch_execute("BEGIN; LOCK TABLE registry_policy_sets IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();
        let jam = {
            let plane = a_plane.clone();
            tokio::spawn(async move {
                loop {
                    let _ = plane.policies().await;
                }
            })
        };
        let on_b = b.open_run("run-b", &ana());
        tokio::time::sleep(lease * 4).await;
        let seen = on_b.task(task.id()).await.unwrap();
        assert_eq!(
            seen.status(),
            TaskStatus::Working,
            "a's lease ran out while its pool was busy: {:?}",
            seen.message()
        );
        assert!(spin.cancelled_at().is_none(), "a's tool was cancelled");
        jam.abort();
        locker.batch_execute("COMMIT").await.unwrap();
        spin.stop.store(true, Ordering::SeqCst);
        let _ = on_b.wait_task(task.id()).await.unwrap();
    })
    .await;
}

/// N22, the stale holder: replica a's renewals are frozen in the database (a trigger keeps
/// `lease_until`), as if a were paused; its lease runs out and replica b fails the task. a's
/// tool then ends, and a's late end is refused: the row keeps b's outcome. A task's lease is
/// never handed to another replica, only ended, so every write of its holder, conditional on
/// the task still running, is fenced by that end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_holders_late_end_is_refused_and_the_row_keeps_the_failure() {
    let (_cluster, url) = cluster("tasks_stale");
    bounded(LIMIT, async {
        let spin = Spin::default();
        let lease = Duration::from_millis(600);
        let (_a_plane, a) = replica(&url, "a-stale", &spin, TaskLimits::new(), lease).await;
        let (_b_plane, b) = replica(&url, "b", &spin, TaskLimits::new(), lease).await;
        sql(&url)
            .await
            .batch_execute(
                "CREATE FUNCTION freeze_leases() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN
                     IF NEW.status = OLD.status AND NEW.lease_until > OLD.lease_until THEN
                         NEW.lease_until := OLD.lease_until;
                     END IF;
                     RETURN NEW;
                 END $$;
                 CREATE TRIGGER freeze_leases BEFORE UPDATE ON registry_tasks
                     FOR EACH ROW EXECUTE FUNCTION freeze_leases();",
            )
            .await
            .unwrap();
        let on_a = a.open_run("run-a", &ana());
        let task = on_a.start_task(start("c1", "spin")).await.unwrap();
        let on_b = b.open_run("run-b", &ana());
        wait_until_async(lease * 4, "b fails a's task", || async {
            on_b.task(task.id()).await.unwrap().status() == TaskStatus::Failed
        })
        .await;
        // a learns it at its next renewal: its tool is cancelled, returns, and a ends the
        // task as its tool said, too late.
        wait_until(LIMIT, "a's tool is cancelled", || {
            spin.cancelled_at().is_some()
        })
        .await;
        // The tool returns at once once cancelled; a's end is one statement after it.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let row = sql(&url)
            .await
            .query_one(
                "SELECT status, convert_from(message, 'UTF8'), result IS NULL
                   FROM registry_tasks WHERE id = $1",
                &[&task.id()],
            )
            .await
            .unwrap();
        let (status, message, no_result): (String, String, bool) =
            (row.get(0), row.get(1), row.get(2));
        assert_eq!(status, "failed");
        assert!(
            message.contains("a-stale") && message.contains("lease"),
            "{message}"
        );
        assert!(no_result, "a's late result was kept");
        let answer = on_b.task_result(task.id()).await.unwrap();
        assert_eq!(answer.error_kind(), Some(ErrorKind::Unavailable));
    })
    .await;
}
