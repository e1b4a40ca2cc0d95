//! `PgAuditSink`: events of real calls in `audit_events` without argument values, batches,
//! a flushing shutdown, and both answers to a full queue while the database is down.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{Counter, bounded, call, cluster, own_cluster, plane, sql, subject};
use registry_core::approval::Verdict;
use registry_core::{
    Registry, ToolCall,
    audit::{AuditEvent, AuditSink},
};
use registry_postgres::{AuditConfig, AuditFilter, PgAuditSink, WhenFull};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(90);
const SECRET: &str = "hunter2-Zq9-very-secret-value";

async fn count(url: &str, kind: &str) -> i64 {
    sql(url)
        .await
        .query_one(
            "SELECT count(*) FROM audit_events WHERE kind = $1",
            &[&kind],
        )
        .await
        .unwrap()
        .get(0)
}

/// The one `bigint` that `query` (no parameters) answers.
async fn scalar(url: &str, query: &str) -> i64 {
    sql(url).await.query_one(query, &[]).await.unwrap().get(0)
}

/// A queue of 10 events written 5 at a time, which `when_full` says what to do with when
/// the database is down.
fn tiny_queue(when_full: WhenFull) -> AuditConfig {
    AuditConfig::default()
        .capacity(10)
        .batch(5)
        .flush_every(Duration::from_millis(20))
        .when_full(when_full)
}

/// Some real events: those of a registry's run that makes a few calls (a projection, calls
/// that succeed or fail, an approval request).
fn sample_events() -> Vec<AuditEvent> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
    };
    let counter = Counter::default();
    let registry = crate::common::builder(&counter)
        .audit_sink(sink)
        .build()
        .unwrap();
    let run = registry.open_run("run-sample", &subject());
    let _ = run.call_blocking(call("c1", "status"));
    let _ = run.call_blocking(call("c2", "deploy"));
    let _ = run.call_blocking(ToolCall::new("c3", "echo", json!({"text": 1})));
    let events = events.lock().unwrap().clone();
    assert!(events.len() >= 4, "{events:?}");
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_real_calls_are_written_without_argument_values() {
    let (_cluster, url) = cluster("audit");
    bounded(LIMIT, async {
        let plane = crate::common::patient_plane(&url, "a").await;
        let (sink, writer) = plane.audit_sink(AuditConfig::default());
        let counter = Counter::default();
        let registry = crate::common::builder(&counter)
            .audit_sink(sink)
            .approval_store(plane.approval_store())
            .build()
            .unwrap();
        let run = registry.open_run("run-1", &subject());
        let done = run
            .call(ToolCall::new("c1", "echo", json!({"text": SECRET})))
            .await;
        assert!(!done.is_error(), "{done:?}");
        let refused = run
            .call(ToolCall::new("c2", "echo", json!({"text": 42, "other": SECRET})))
            .await;
        assert!(refused.is_error());
        let asked = run
            .call(ToolCall::new("c3", "deploy", json!({"project": SECRET})))
            .await;
        let id = asked.approval().unwrap().id().to_owned();
        let denied = run.decide(&id, Verdict::deny("no")).await.unwrap().into_answer().unwrap();
        assert_eq!(denied.error_kind(), Some(registry_core::ErrorKind::Denied));
        assert!(writer.flush(Duration::from_secs(10)).await);

        let client = sql(&url).await;
        let rows = client
            .query(
                "SELECT kind, tool, outcome, call_id, run_id, tenant, replica, approval_id, event::text
                   FROM audit_events ORDER BY id",
                &[],
            )
            .await
            .unwrap();
        assert!(!rows.is_empty());
        for row in &rows {
            let event: String = row.get(8);
            assert!(!event.contains(SECRET), "an argument value was written: {event}");
            assert_eq!(row.get::<_, String>(6), "a");
        }
        let leaks: i64 = client
            .query_one(
                "SELECT count(*) FROM audit_events t WHERE t::text LIKE '%' || $1 || '%'",
                &[&SECRET],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(leaks, 0);
        let calls: Vec<(String, String, String)> = rows
            .iter()
            .filter(|row| row.get::<_, String>(0) == "call")
            .map(|row| (row.get(1), row.get(2), row.get(3)))
            .collect();
        assert!(
            calls.contains(&("echo".into(), "ok".into(), "c1".into())),
            "{calls:?}"
        );
        assert!(
            calls.contains(&("echo".into(), "invalid_arguments".into(), "c2".into())),
            "{calls:?}"
        );
        let call_row = rows
            .iter()
            .find(|row| row.get::<_, String>(0) == "call")
            .unwrap();
        assert_eq!(call_row.get::<_, Option<String>>(4).as_deref(), Some("run-1"));
        assert_eq!(call_row.get::<_, Option<String>>(5).as_deref(), Some("acme"));
        let approvals: Vec<(String, Option<String>)> = rows
            .iter()
            .filter(|row| row.get::<_, String>(0) == "approval")
            .map(|row| (row.get(2), row.get(7)))
            .collect();
        assert!(
            approvals.contains(&("requested".into(), Some(id.clone()))),
            "{approvals:?}"
        );
        assert!(approvals.contains(&("denied".into(), Some(id))), "{approvals:?}");
        assert!(rows.iter().any(|row| row.get::<_, String>(0) == "projection"));

        // The operators' view.
        let mut filter = AuditFilter::default();
        filter.kind = Some("call".into());
        filter.tool = Some("echo".into());
        let listed = plane.audit_events(&filter).await.unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].call_id.as_deref(), Some("c2"), "newest first");
        writer.shutdown(Duration::from_secs(10)).await.unwrap();
    })
    .await;
}

/// Records `events` round-robin, `total` times in all.
fn record_many(sink: &PgAuditSink, events: &[AuditEvent], total: usize) {
    for index in 0..total {
        sink.record(&events[index % events.len()]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_events_are_written_in_batches() {
    let (_cluster, url) = cluster("audit");
    bounded(LIMIT, async {
        let events = sample_events();
        let plane = plane(&url, "a").await;
        let (sink, writer) = plane.audit_sink(AuditConfig::default().batch(500));
        record_many(&sink, &events, 5_000);
        assert!(writer.flush(Duration::from_secs(20)).await);
        assert_eq!(writer.written(), 5_000);
        assert_eq!(writer.queued(), 0);
        assert_eq!(writer.dropped(), 0);
        let total: i64 = scalar(&url, "SELECT count(*) FROM audit_events").await;
        assert_eq!(total, 5_000);
        writer.shutdown(Duration::from_secs(10)).await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_writes_everything_left() {
    let (_cluster, url) = cluster("audit");
    bounded(LIMIT, async {
        let events = sample_events();
        let plane = plane(&url, "a").await;
        // Nothing would be written for a minute, nor before 100,000 events.
        let (sink, writer) = plane.audit_sink(
            AuditConfig::default()
                .batch(100_000)
                .capacity(200_000)
                .flush_every(Duration::from_secs(60)),
        );
        record_many(&sink, &events, 1_234);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(writer.written(), 0);
        writer.shutdown(Duration::from_secs(20)).await.unwrap();
        // Recorded after the shutdown: not written, not kept either (memory stays bounded).
        record_many(&sink, &events, 50_000);
        assert_eq!(writer.queued(), 0);
        assert_eq!(writer.dropped(), 50_000);
        let total: i64 = scalar(&url, "SELECT count(*) FROM audit_events").await;
        assert_eq!(total, 1_234);
        assert_eq!(writer.written(), 1_234);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_drops_and_counts_and_the_gap_is_on_record() {
    let (mut cluster, url) = own_cluster("audit");
    bounded(LIMIT, async {
        let events = sample_events();
        let plane = plane(&url, "a").await;
        let (sink, writer) = plane.audit_sink(tiny_queue(WhenFull::Drop));
        cluster.stop().unwrap();
        let started = Instant::now();
        let mut slowest = Duration::ZERO;
        for index in 0..1_000 {
            let one = Instant::now();
            sink.record(&events[index % events.len()]);
            slowest = slowest.max(one.elapsed());
        }
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
        assert!(slowest < Duration::from_millis(50), "{slowest:?}");
        let dropped = writer.dropped();
        // The queue holds 10, and the writer holds at most one batch of 5.
        assert!(dropped >= 985, "{dropped}");
        assert_eq!(writer.written(), 0);
        cluster.start_again().unwrap();
        crate::common::wait_until_async(Duration::from_secs(15), "the queue is written", || async {
            writer.queued() == 0 && writer.dropped() == 0
        })
        .await;
        assert!(writer.flush(Duration::from_secs(10)).await);
        let recorded = scalar(
            &url,
            "SELECT COALESCE(sum((event->>'count')::bigint), 0)::bigint FROM audit_events WHERE kind = 'dropped'",
        )
        .await;
        assert_eq!(u64::try_from(recorded).unwrap(), dropped);
        let written = scalar(&url, "SELECT count(*) FROM audit_events WHERE kind <> 'dropped'").await;
        assert_eq!(u64::try_from(written).unwrap(), writer.written());
        assert_eq!(written + recorded, 1_000);
        writer.shutdown(Duration::from_secs(10)).await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_blocks_and_loses_nothing() {
    let (mut cluster, url) = own_cluster("audit");
    bounded(LIMIT, async {
        let events = sample_events();
        let plane = plane(&url, "a").await;
        let (sink, writer) = plane.audit_sink(tiny_queue(WhenFull::Block));
        let sink = Arc::new(sink);
        cluster.stop().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        // A caller that waits as a run's asynchronous paths do: `ready`, then `record`.
        let recording = {
            let done = done.clone();
            let sink = sink.clone();
            tokio::spawn(async move {
                for index in 0..100 {
                    sink.ready().await;
                    sink.record(&events[index % events.len()]);
                }
                done.store(true, Ordering::SeqCst);
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!done.load(Ordering::SeqCst), "recording did not wait");
        // The queue's 10, and the writer's batch of 5.
        assert!(writer.queued() <= 15, "{}", writer.queued());
        cluster.start_again().unwrap();
        crate::common::wait_until(Duration::from_secs(15), "recording returns", || {
            done.load(Ordering::SeqCst)
        })
        .await;
        recording.await.unwrap();
        assert!(writer.flush(Duration::from_secs(10)).await);
        assert_eq!(writer.written(), 100);
        assert_eq!(writer.dropped(), 0);
        let total = count(&url, "call").await
            + count(&url, "projection").await
            + count(&url, "approval").await;
        assert_eq!(total, 100);
        assert_eq!(count(&url, "dropped").await, 0);
        writer.shutdown(Duration::from_secs(10)).await.unwrap();
    })
    .await;
}

/// Issue 18: `WhenFull::Block` parked tokio workers on a condition variable. With the
/// table locked (the database stalls), forty calls on a runtime of two workers wait for
/// room, and a timer on the same runtime keeps ticking; once the lock goes, every event is
/// written, none dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_waits_without_parking_a_worker() {
    let (_cluster, url) = cluster("audit");
    bounded(LIMIT, async {
        let plane = plane(&url, "a").await;
        let (sink, writer) = plane.audit_sink(tiny_queue(WhenFull::Block));
        let counter = Counter::default();
        let registry = crate::common::builder(&counter)
            .audit_sink(sink)
            .build()
            .unwrap();
        let run = Arc::new(registry.open_run("run-stalled", &subject()));
        assert!(writer.flush(Duration::from_secs(10)).await);

        let mut locker = sql(&url).await;
        let lock = locker.transaction().await.unwrap();
        lock.batch_execute("LOCK TABLE audit_events IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();

        let ticks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let ticker = {
            let ticks = ticks.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    ticks.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        let finished = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // One call after another, 5 ms apart, so that each has recorded its event before the
        // next asks for room (`ready` is a check, not a reservation: calls that pass it
        // together go into the bounded overflow). Once the queue is full, the rest wait.
        let mut callers = Vec::new();
        for index in 0..40 {
            let run = run.clone();
            let finished = finished.clone();
            callers.push(tokio::spawn(async move {
                let done = run
                    .call(ToolCall::new(
                        format!("c{index}"),
                        "echo",
                        json!({"text": "hi"}),
                    ))
                    .await;
                assert!(!done.is_error(), "{done:?}");
                finished.fetch_add(1, Ordering::SeqCst);
            }));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let before = ticks.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let during = ticks.load(Ordering::SeqCst) - before;
        assert!(
            during >= 10,
            "the runtime stalled: {during} ticks in 500 ms"
        );
        let waiting = 40 - finished.load(Ordering::SeqCst);
        assert!(
            waiting >= 20,
            "calls did not wait for room: {waiting} waiting"
        );

        lock.rollback().await.unwrap();
        for caller in callers {
            caller.await.unwrap();
        }
        ticker.abort();
        assert!(writer.flush(Duration::from_secs(10)).await);
        assert_eq!(writer.dropped(), 0);
        assert_eq!(count(&url, "call").await, 40);
        assert_eq!(count(&url, "dropped").await, 0);
        writer.shutdown(Duration::from_secs(10)).await.unwrap();
    })
    .await;
}

/// Issue 18: one NUL byte in a batch made the insert fail and the writer retry it forever;
/// nothing after it was written. Now every text, columns and event alike, keys included,
/// is written with each NUL as the visible `\u{0}`, and the events after it are written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nul_everywhere_is_written_escaped_and_what_follows_too() {
    let (_cluster, url) = cluster("audit");
    bounded(LIMIT, async {
        let plane = plane(&url, "a\0replica").await;
        let (sink, writer) = plane.audit_sink(AuditConfig::default());
        let counter = Counter::default();
        let registry = crate::common::builder(&counter)
            .audit_sink(sink)
            .approval_store(plane.approval_store())
            .build()
            .unwrap();
        let hostile = registry_core::Subject::new("ac\0me").with_agent("bot\0");
        let run = registry.open_run("run\0-1", &hostile);
        let unknown = run.call(ToolCall::new("id\0x", "to\0ol", json!({}))).await;
        assert!(unknown.is_error());
        let asked = run
            .call(ToolCall::new("ask\0", "deploy", json!({"project": "web"})))
            .await;
        let id = asked
            .approval()
            .expect("an approval request")
            .id()
            .to_owned();
        // Kept byte for byte (its body is `bytea`; only the operators' columns are escaped),
        // the request still names this run exactly: the run decides it (before issue 45 it
        // could not, and the request expired).
        let denied = run
            .decide(&id, Verdict::deny("no\0way"))
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert_eq!(
            denied.error_kind(),
            Some(registry_core::ErrorKind::Denied),
            "{denied:?}"
        );
        for index in 0..5 {
            let done = run
                .call(crate::common::echo_call(&format!("after-{index}"), "hi"))
                .await;
            assert!(!done.is_error(), "{done:?}");
        }
        assert!(writer.flush(Duration::from_secs(10)).await);
        assert_eq!(writer.unwritable(), 0);

        let client = sql(&url).await;
        let row = client
            .query_one(
                "SELECT tool, call_id, run_id, tenant, replica, event::text FROM audit_events
                  WHERE kind = 'call' AND call_id LIKE 'id%'",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), r"to\u{0}ol");
        assert_eq!(row.get::<_, String>(1), r"id\u{0}x");
        assert_eq!(row.get::<_, String>(2), r"run\u{0}-1");
        assert_eq!(row.get::<_, String>(3), r"ac\u{0}me");
        assert_eq!(row.get::<_, String>(4), r"a\u{0}replica");
        let event: String = row.get(5);
        assert!(event.contains(r#""to\\u{0}ol""#), "{event}");
        let projection: String = client
            .query_one(
                "SELECT event::text FROM audit_events WHERE kind = 'projection'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert!(projection.contains(r#""bot\\u{0}""#), "{projection}");
        // The approval request was kept too, and its denial is on record.
        let kept: (String, String) = client
            .query_one("SELECT call_id, reason FROM registry_approvals", &[])
            .await
            .map(|row| (row.get(0), row.get(1)))
            .unwrap();
        assert_eq!(kept.0, r"ask\u{0}");
        let requested = count(&url, "approval").await;
        assert!(requested >= 1, "{requested}");
        let after: i64 = client
            .query_one(
                "SELECT count(*) FROM audit_events WHERE kind = 'call' AND call_id LIKE 'after-%'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(after, 5);
        writer.shutdown(Duration::from_secs(10)).await.unwrap();
    })
    .await;
}

/// A batch the database refuses (here a constraint refuses one event of it) is split: the
/// other events are written, in order, the refused one is on record as `unwritable` with
/// the database's reason, and events recorded later are written too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_batch_is_split_and_the_refused_event_is_on_record() {
    let (_cluster, url) = cluster("audit");
    bounded(LIMIT, async {
        let plane = plane(&url, "a").await;
        sql(&url)
            .await
            .batch_execute(
                "ALTER TABLE audit_events ADD CONSTRAINT no_poison
                     CHECK (call_id IS DISTINCT FROM 'poison')",
            )
            .await
            .unwrap();
        let (sink, writer) = plane.audit_sink(
            AuditConfig::default()
                .batch(16)
                .flush_every(Duration::from_millis(500)),
        );
        let counter = Counter::default();
        let registry = crate::common::builder(&counter)
            .audit_sink(sink)
            .build()
            .unwrap();
        let run = registry.open_run("run-1", &subject());
        for index in 0..7 {
            let _ = run
                .call(crate::common::echo_call(&format!("before-{index}"), "hi"))
                .await;
        }
        let _ = run.call(crate::common::echo_call("poison", "hi")).await;
        for index in 0..7 {
            let _ = run
                .call(crate::common::echo_call(&format!("after-{index}"), "hi"))
                .await;
        }
        assert!(writer.flush(Duration::from_secs(10)).await);
        assert_eq!(writer.unwritable(), 1);
        assert_eq!(writer.written(), 15, "the projection and fourteen calls");
        let client = sql(&url).await;
        let ids: Vec<String> = client
            .query(
                "SELECT call_id FROM audit_events WHERE kind = 'call' ORDER BY id",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let expected: Vec<String> = (0..7)
            .map(|index| format!("before-{index}"))
            .chain((0..7).map(|index| format!("after-{index}")))
            .collect();
        assert_eq!(ids, expected, "written, in order");
        let unwritable = client
            .query_one(
                "SELECT event->>'kind', event->>'reason', call_id FROM audit_events
                  WHERE kind = 'unwritable'",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(unwritable.get::<_, String>(0), "call");
        let reason: String = unwritable.get(1);
        assert!(
            reason.contains("no_poison") && reason.contains("23514"),
            "{reason}"
        );
        assert_eq!(unwritable.get::<_, Option<String>>(2), None);

        // Later events are written as before.
        let _ = run.call(crate::common::echo_call("later", "hi")).await;
        assert!(writer.flush(Duration::from_secs(10)).await);
        assert_eq!(writer.written(), 16);
        writer.shutdown(Duration::from_secs(10)).await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_twenty_thousand_events() {
    let (_cluster, url) = cluster("audit");
    bounded(LIMIT, async {
        let events = sample_events();
        let plane = plane(&url, "a").await;
        let (sink, writer) = plane.audit_sink(AuditConfig::default().capacity(50_000).batch(1_000));
        let started = Instant::now();
        record_many(&sink, &events, 20_000);
        let queued = started.elapsed();
        assert!(writer.flush(Duration::from_secs(60)).await);
        let elapsed = started.elapsed();
        assert_eq!(writer.written(), 20_000);
        eprintln!(
            "audit: 20,000 events recorded in {queued:?}, written in {elapsed:?}: {:.0} events/s",
            20_000.0 / elapsed.as_secs_f64()
        );
        writer.shutdown(Duration::from_secs(10)).await.unwrap();
    })
    .await;
}

/// A registry whose sink is the control plane's, dropped without shutdown: nothing hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_dropped_without_shutdown_does_not_hang() {
    let (_cluster, url) = cluster("audit");
    bounded(LIMIT, async {
        let plane = plane(&url, "a").await;
        let (sink, writer) = plane.audit_sink(AuditConfig::default());
        let counter = Counter::default();
        let registry: Registry = crate::common::builder(&counter)
            .audit_sink(sink)
            .build()
            .unwrap();
        let run = registry.open_run("run", &subject());
        assert!(!run.call(call("c1", "status")).await.is_error());
        drop(writer);
        assert!(!run.call(call("c2", "status")).await.is_error());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_with_the_database_down_says_so_in_time() {
    let (mut cluster, url) = own_cluster("audit");
    bounded(LIMIT, async {
        let events = sample_events();
        let plane = plane(&url, "a").await;
        let (sink, writer) = plane.audit_sink(AuditConfig::default());
        cluster.stop().unwrap();
        record_many(&sink, &events, 10);
        let started = Instant::now();
        let outcome = writer.shutdown(Duration::from_millis(500)).await;
        assert!(outcome.is_err(), "{outcome:?}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(writer.written(), 0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_waits_for_the_events_before_it_not_for_a_quiet_moment() {
    let (_cluster, url) = cluster("audit");
    bounded(LIMIT, async {
        let events = sample_events();
        let plane = plane(&url, "a").await;
        let (sink, writer) = plane.audit_sink(AuditConfig::default().capacity(1_000_000));
        let sink = Arc::new(sink);
        record_many(&sink, &events, 2_000);
        // A replica that keeps serving: events keep coming while it flushes.
        let stop = Arc::new(AtomicBool::new(false));
        let busy = {
            let (sink, stop, events) = (sink.clone(), stop.clone(), events.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    record_many(&sink, &events, 50);
                    std::thread::sleep(Duration::from_micros(200));
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = Instant::now();
        // A flush that waited for a quiet moment would never end here; 15 s, not 5, because on
        // a loaded machine the first 2,000 events alone took longer than 5 s to be written.
        let flushed = writer.flush(Duration::from_secs(15)).await;
        let took = started.elapsed();
        stop.store(true, Ordering::SeqCst);
        busy.join().unwrap();
        assert!(
            flushed,
            "flush gave up after {took:?} while events kept coming"
        );
        assert!(writer.written() >= 2_000);
        // What came during the flush (at this rate, faster than a writer: the point) may be
        // more than a loaded machine writes in 5 s; then the shutdown says so, and says only
        // that (other tests check that a shutdown writes what is left).
        match writer.shutdown(Duration::from_secs(5)).await {
            Ok(()) | Err(registry_postgres::Error::Timeout(..)) => {}
            Err(other) => panic!("the shutdown failed otherwise: {other}"),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_applied_from_the_feed_are_audited() {
    let (_cluster, url) = cluster("audit");
    bounded(LIMIT, async {
        let plane = plane(&url, "a").await;
        let (sink, writer) = plane.audit_sink(AuditConfig::default());
        let counter = Counter::default();
        let registry = crate::common::builder(&counter)
            .audit_sink(sink)
            .build()
            .unwrap();
        let feed = plane.follow(&registry).await.unwrap();
        feed.revoke("status", "incident").await.unwrap();
        feed.restore("status", "over").await.unwrap();
        assert!(writer.flush(Duration::from_secs(10)).await);
        let rows = sql(&url)
            .await
            .query(
                "SELECT tool, outcome, replica FROM audit_events WHERE kind = 'change' ORDER BY id",
                &[],
            )
            .await
            .unwrap();
        let changes: Vec<(Option<String>, Option<String>, String)> = rows
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2)))
            .collect();
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert_eq!(changes[0].0.as_deref(), Some("status"));
        assert_eq!(changes[0].2, "a");
        assert!(
            changes[0]
                .1
                .as_deref()
                .is_some_and(|kind| kind.starts_with("revok")),
            "{changes:?}"
        );
        assert!(
            changes[1]
                .1
                .as_deref()
                .is_some_and(|kind| kind.starts_with("restor")),
            "{changes:?}"
        );
        feed.shutdown().await;
        writer.shutdown(Duration::from_secs(10)).await.unwrap();
    })
    .await;
}
