//! The change feed between replicas: revocations, restorations and replacements reach every
//! replica, a late follower catches up, and a replica that loses the database holds its calls
//! until it is back and caught up.

use std::time::{Duration, Instant};

use crate::common::{Counter, bounded, call, cluster, own_cluster, plane, subject, wait_until};
use registry_core::server::RegistryExt;
use registry_core::{
    DynamicTool, ErrorKind, Registry, RegistryError, ToolContext, change::ReplaceOptions,
};
use registry_postgres::{ChangeFeed, ControlPlane, Error, RecordedKind};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(90);
const PROPAGATION: Duration = Duration::from_secs(2);

/// A following replica with `deploy`, `status` and `echo`.
async fn replica(url: &str, name: &str, counter: &Counter) -> (ControlPlane, Registry, ChangeFeed) {
    let plane = plane(url, name).await;
    let registry = crate::common::builder(counter).build().unwrap();
    let feed = plane.follow(&registry).await.unwrap();
    (plane, registry, feed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_on_one_replica_reaches_the_other() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (plane_a, registry_a, feed_a) = replica(&url, "a", &counter).await;
        let (_b, registry_b, feed_b) = replica(&url, "b", &counter).await;
        let old_run_b = registry_b.open_run("run-b", &subject());
        assert!(!old_run_b.call(call("c0", "status")).await.is_error());
        let generation = registry_b.generation();

        let record = feed_a.revoke("status", "incident 4711").await.unwrap();
        assert_eq!(record.seq, 1);
        assert_eq!(record.kind, RecordedKind::Revoke);
        assert_eq!(record.origin, "a");
        assert_eq!(record.reason, "incident 4711");
        // Applied here before it returns.
        assert_eq!(registry_a.is_revoked_now("status"), Some(true));
        assert_eq!(feed_a.applied_seq(), 1);

        wait_until(PROPAGATION, "B applies the revocation", || {
            registry_b.generation() > generation
        })
        .await;
        assert_eq!(registry_b.is_revoked_now("status"), Some(true));
        assert_eq!(feed_b.applied_seq(), 1);
        let refused = old_run_b.call(call("c1", "status")).await;
        assert_eq!(
            refused.error_kind(),
            Some(ErrorKind::Revoked),
            "{refused:?}"
        );
        let new_run_b = registry_b.open_run("run-b2", &subject());
        let refused = new_run_b.call(call("c2", "status")).await;
        assert!(refused.is_error(), "{refused:?}");
        assert_eq!(counter.get(), 1);
        // Other tools are untouched.
        let echo = registry_core::ToolCall::new("c3", "echo", serde_json::json!({"text": "hi"}));
        assert!(!new_run_b.call(echo).await.is_error());

        // Restored: new runs on B call it again; the run opened before stays revoked.
        let record = feed_a.restore("status", "fixed").await.unwrap();
        assert_eq!(record.kind, RecordedKind::Restore);
        wait_until(PROPAGATION, "B applies the restoration", || {
            registry_b.is_revoked_now("status") == Some(false)
        })
        .await;
        let run = registry_b.open_run("run-b3", &subject());
        let done = run.call(call("c4", "status")).await;
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(counter.get(), 3);
        assert_eq!(
            old_run_b.call(call("c5", "status")).await.error_kind(),
            Some(ErrorKind::Revoked)
        );
        let changes = plane_a.changes(0, 10).await.unwrap();
        assert_eq!(changes.len(), 2);
        assert_eq!(feed_b.applied_seq(), 2);
        assert!(registry_b.suspended().is_none());
        assert!(feed_b.is_live());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_follower_applies_every_change_at_start() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_a, _registry_a, feed_a) = replica(&url, "a", &counter).await;
        feed_a.revoke("status", "one").await.unwrap();
        feed_a.revoke("echo", "two").await.unwrap();
        feed_a.restore("echo", "three").await.unwrap();
        feed_a.revoke("deploy", "four").await.unwrap();
        feed_a.restore("deploy", "five").await.unwrap();
        feed_a.revoke("deploy", "six").await.unwrap();

        let plane_c = plane(&url, "c").await;
        let registry_c = crate::common::builder(&counter).build().unwrap();
        let feed_c = plane_c.follow(&registry_c).await.unwrap();
        // Nothing to wait for: following applies what was recorded before it returns.
        assert_eq!(feed_c.applied_seq(), 6);
        assert_eq!(registry_c.is_revoked_now("status"), Some(true));
        assert_eq!(registry_c.is_revoked_now("echo"), Some(false));
        assert_eq!(registry_c.is_revoked_now("deploy"), Some(true));
        assert!(registry_c.suspended().is_none());
        let run = registry_c.open_run("run-c", &subject());
        let observation = run.call(call("c1", "status")).await;
        assert!(observation.is_error(), "{observation:?}");
        assert_eq!(counter.get(), 0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_recorded_by_an_operator_propagates() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_b, registry_b, feed_b) = replica(&url, "b", &counter).await;
        let admin = plane(&url, "registry-admin").await;
        // A name this replica does not have is skipped; the feed goes on.
        let seq = admin
            .revoke("no-such-tool", "typo", "registry-admin (op)")
            .await
            .unwrap();
        assert_eq!(seq, 1);
        let seq = admin
            .revoke("status", "incident", "registry-admin (op)")
            .await
            .unwrap();
        assert_eq!(seq, 2);
        wait_until(PROPAGATION, "B applies the operator's revocation", || {
            registry_b.is_revoked_now("status") == Some(true)
        })
        .await;
        wait_until(PROPAGATION, "B's feed moves on", || {
            feed_b.applied_seq() == 2
        })
        .await;
        let seq = admin
            .restore("status", "over", "registry-admin (op)")
            .await
            .unwrap();
        assert_eq!(seq, 3);
        wait_until(PROPAGATION, "B applies the operator's restoration", || {
            registry_b.is_revoked_now("status") == Some(false)
        })
        .await;
        let changes = admin.changes(1, 10).await.unwrap();
        assert_eq!(changes.len(), 2);
        assert_eq!(changes[0].origin, "registry-admin (op)");
        assert!(registry_b.suspended().is_none());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_revokes_the_replicas_without_the_new_version() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let new_description = "Read the build status of a project, with its tests.";
        let (_a, registry_a, feed_a) = replica(&url, "a", &counter).await;
        let (_b, registry_b, _feed_b) = replica(&url, "b", &counter).await;
        // C was deployed with the new version already.
        let plane_c = plane(&url, "c").await;
        let registry_c = Registry::builder()
            .tool(crate::common::deploy(&counter))
            .tool(crate::common::status_described(&counter, new_description))
            .tool(crate::common::echo(&counter))
            .build()
            .unwrap();
        let _feed_c = plane_c.follow(&registry_c).await.unwrap();
        let generation_c = registry_c.generation();
        let old_run_a = registry_a.open_run("run-a", &subject());

        let record = feed_a
            .replace(
                crate::common::status_described(&counter, new_description),
                ReplaceOptions::keep_old_runs("v2"),
            )
            .await
            .unwrap();
        assert_eq!(record.kind, RecordedKind::Replace);
        assert_eq!(record.old_runs.as_deref(), Some("keep_shown_version"));
        assert_eq!(
            record.fingerprint.as_deref(),
            Some(
                registry_c
                    .get("status")
                    .unwrap()
                    .fingerprint()
                    .to_string()
                    .as_str()
            )
        );
        // A serves the new version to new runs, the old one to the run that was shown it.
        assert_eq!(registry_a.is_revoked_now("status"), Some(false));
        assert!(
            !registry_a
                .open_run("run-a2", &subject())
                .call(call("a1", "status"))
                .await
                .is_error()
        );
        assert!(!old_run_a.call(call("a2", "status")).await.is_error());

        // B does not have it: it stops serving its own.
        wait_until(PROPAGATION, "B revokes its version", || {
            registry_b.is_revoked_now("status") == Some(true)
        })
        .await;
        let refused = registry_b
            .open_run("run-b", &subject())
            .call(call("b1", "status"))
            .await;
        assert!(refused.is_error(), "{refused:?}");
        // C has it: it keeps serving it.
        wait_until(PROPAGATION, "C applies the replacement", || {
            _feed_c.applied_seq() == 1
        })
        .await;
        assert_eq!(registry_c.is_revoked_now("status"), Some(false));
        assert_eq!(registry_c.generation(), generation_c);
        let done = registry_c
            .open_run("run-c", &subject())
            .call(call("c1", "status"))
            .await;
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(counter.get(), 3);

        // A replica started later with the old version revokes it at once; with the new one,
        // serves it.
        let (_d, registry_d, _feed_d) = replica(&url, "d", &counter).await;
        assert_eq!(registry_d.is_revoked_now("status"), Some(true));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_the_registry_refuses_are_not_recorded() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (plane_a, registry_a, feed_a) = replica(&url, "a", &counter).await;
        let error = feed_a.revoke("nope", "x").await.unwrap_err();
        assert!(
            matches!(error, Error::Registry(RegistryError::UnknownTool { .. })),
            "{error:?}"
        );
        let error = feed_a.restore("nope", "x").await.unwrap_err();
        assert!(matches!(error, Error::Registry(_)), "{error:?}");
        let error = feed_a.restore("status", "not revoked").await.unwrap_err();
        assert!(
            matches!(error, Error::Registry(RegistryError::NotRevoked { .. })),
            "{error:?}"
        );
        let unknown = registry_core::DynamicTool::new("nope", "Nothing.")
            .public()
            .handler(|_: &registry_core::ToolContext, _: serde_json::Value| {
                Ok::<_, String>(serde_json::json!(1))
            });
        let error = feed_a
            .replace(unknown, ReplaceOptions::keep_old_runs("x"))
            .await
            .unwrap_err();
        assert!(matches!(error, Error::Registry(_)), "{error:?}");
        assert!(plane_a.changes(0, 10).await.unwrap().is_empty());
        assert_eq!(feed_a.applied_seq(), 0);
        assert_eq!(registry_a.generation(), 0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_loses_the_database_holds_its_calls_until_it_caught_up() {
    let (mut cluster, url) = own_cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_a, registry_a, feed_a) = replica(&url, "a", &counter).await;
        let run = registry_a.open_run("run-a", &subject());
        assert!(!run.call(call("c0", "status")).await.is_error());
        assert!(registry_a.suspended().is_none());

        cluster.stop().unwrap();
        // The lease is 500 ms.
        wait_until(Duration::from_millis(1500), "A holds its calls", || {
            registry_a.suspended().is_some()
        })
        .await;
        assert!(!feed_a.is_live());
        for index in 1..5 {
            let refused = run.call(call(&format!("c{index}"), "status")).await;
            assert_eq!(
                refused.error_kind(),
                Some(ErrorKind::Unavailable),
                "{refused:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert!(registry_a.suspended().is_some());
        }
        assert_eq!(counter.get(), 1);

        cluster.start_again().unwrap();
        // Another replica records a change at once, before A is back.
        let plane_b = plane(&url, "b").await;
        plane_b
            .revoke("echo", "while A was away", "b")
            .await
            .unwrap();
        wait_until(Duration::from_secs(10), "A's feed reconnects", || {
            registry_a.suspended().is_none()
        })
        .await;
        // The change is applied, whether A reconnected before or after it was recorded.
        wait_until(
            PROPAGATION,
            "A applies the change made at the restart",
            || registry_a.is_revoked_now("echo") == Some(true),
        )
        .await;
        assert_eq!(feed_a.applied_seq(), 1);
        assert!(feed_a.is_live());
        let done = run.call(call("c9", "status")).await;
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(counter.get(), 2);
        // And it follows live again.
        plane_b.revoke("status", "after", "b").await.unwrap();
        wait_until(PROPAGATION, "A applies a change made after", || {
            registry_a.is_revoked_now("status") == Some(true)
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_kept_away_catches_up_before_it_lets_calls_through() {
    // A cluster of its own: the role it makes is cluster-wide.
    let (_cluster, url) = own_cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let admin = crate::common::sql(&url).await;
        admin
            .batch_execute("CREATE ROLE replica_a LOGIN SUPERUSER")
            .await
            .unwrap();
        let url_a = url.replace("postgres://postgres@", "postgres://replica_a@");
        let (_a, registry_a, feed_a) = replica(&url_a, "kept-away", &counter).await;
        let (_b, _registry_b, feed_b) = replica(&url, "b", &counter).await;
        let run = registry_a.open_run("run-a", &subject());
        assert!(!run.call(call("c0", "status")).await.is_error());

        // A loses its connection and cannot make another. Two statements, each committed on
        // its own: in one batch (one implicit transaction) the connections were ended before
        // `NOLOGIN` was committed, and on a loaded machine A could log in again in between.
        admin
            .batch_execute("ALTER ROLE replica_a NOLOGIN")
            .await
            .unwrap();
        admin
            .batch_execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'replica_a'",
            )
            .await
            .unwrap();
        wait_until(Duration::from_secs(5), "A holds its calls", || {
            registry_a.suspended().is_some()
        })
        .await;
        // B revokes while A cannot know.
        feed_b.revoke("status", "while A was away").await.unwrap();
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(registry_a.suspended().is_some());
        let refused = run.call(call("c1", "status")).await;
        assert_eq!(refused.error_kind(), Some(ErrorKind::Unavailable), "{refused:?}");
        assert_eq!(counter.get(), 1);

        admin.batch_execute("ALTER ROLE replica_a LOGIN").await.unwrap();
        wait_until(Duration::from_secs(10), "A's feed reconnects", || {
            registry_a.suspended().is_none()
        })
        .await;
        // Calls are let through only once the feed caught up.
        assert_eq!(registry_a.is_revoked_now("status"), Some(true));
        assert_eq!(feed_a.applied_seq(), 1);
        let refused = run.call(call("c2", "status")).await;
        assert_eq!(refused.error_kind(), Some(ErrorKind::Revoked), "{refused:?}");
        assert_eq!(counter.get(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_stops_answering_holds_calls_within_the_lease() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_a, registry_a, feed_a) = replica(&url, "a", &counter).await;
        let run = registry_a.open_run("run-a", &subject());
        // The connection stays up, but the feed's reads wait behind a lock.
        let mut admin = crate::common::sql(&url).await;
        let transaction = admin.transaction().await.unwrap();
        transaction
            .batch_execute("LOCK TABLE registry_changes IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();
        wait_until(Duration::from_millis(1500), "A holds its calls", || {
            registry_a.suspended().is_some()
        })
        .await;
        let refused = run.call(call("c1", "status")).await;
        assert_eq!(
            refused.error_kind(),
            Some(ErrorKind::Unavailable),
            "{refused:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(registry_a.suspended().is_some());
        assert!(!feed_a.is_live());
        transaction.rollback().await.unwrap();
        wait_until(Duration::from_secs(5), "A lets calls through again", || {
            registry_a.suspended().is_none()
        })
        .await;
        assert!(!run.call(call("c2", "status")).await.is_error());
        assert_eq!(counter.get(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_follower_catches_up_over_many_pages() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let admin = plane(&url, "admin").await;
        crate::common::sql(&url)
            .await
            .batch_execute(
                "INSERT INTO registry_changes (seq, tool, kind, reason, origin)
                 SELECT g, 'status', CASE WHEN g % 2 = 1 THEN 'revoke' ELSE 'restore' END,
                        'bulk', 'sql'
                   FROM generate_series(1, 2501) AS g",
            )
            .await
            .unwrap();
        let (_c, registry_c, feed_c) = replica(&url, "c", &counter).await;
        assert_eq!(feed_c.applied_seq(), 2501);
        assert_eq!(registry_c.is_revoked_now("status"), Some(true));
        // And the next one is numbered after them.
        assert_eq!(admin.restore("status", "x", "admin").await.unwrap(), 2502);
        wait_until(PROPAGATION, "C applies it", || {
            registry_c.is_revoked_now("status") == Some(false)
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restoration_does_not_bring_back_a_version_replaced_elsewhere() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let new_description = "Read the build status of a project, with its tests.";
        let (_a, registry_a, feed_a) = replica(&url, "a", &counter).await;
        let (_b, registry_b, feed_b) = replica(&url, "b", &counter).await;
        feed_a
            .replace(
                crate::common::status_described(&counter, new_description),
                ReplaceOptions::keep_old_runs("v2"),
            )
            .await
            .unwrap();
        wait_until(PROPAGATION, "B revokes its old version", || {
            registry_b.is_revoked_now("status") == Some(true)
        })
        .await;
        // An incident and its end, recorded while B still has the old version only.
        feed_a.revoke("status", "incident").await.unwrap();
        feed_a.restore("status", "over").await.unwrap();
        wait_until(PROPAGATION, "B applies both", || feed_b.applied_seq() == 3).await;
        assert_eq!(registry_a.is_revoked_now("status"), Some(false));
        // B must not serve the version every other replica replaced.
        assert_eq!(registry_b.is_revoked_now("status"), Some(true));
        let refused = registry_b
            .open_run("run-b", &subject())
            .call(call("b1", "status"))
            .await;
        assert!(refused.is_error(), "{refused:?}");
        // A replica started later with the old version neither.
        let (_d, registry_d, _feed_d) = replica(&url, "d", &counter).await;
        assert_eq!(registry_d.is_revoked_now("status"), Some(true));
        // Given the new version, B serves it.
        feed_b
            .replace(
                crate::common::status_described(&counter, new_description),
                ReplaceOptions::keep_old_runs("v2 here too"),
            )
            .await
            .unwrap();
        assert_eq!(registry_b.is_revoked_now("status"), Some(false));
        let done = registry_b
            .open_run("run-b2", &subject())
            .call(call("b2", "status"))
            .await;
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(counter.get(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_recorded_at_once_by_many_planes_are_numbered_without_gaps() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_b, registry_b, feed_b) = replica(&url, "b", &counter).await;
        let mut tasks = Vec::new();
        for index in 0..8 {
            let plane = plane(&url, &format!("p{index}")).await;
            tasks.push(tokio::spawn(async move {
                let mut seqs = Vec::new();
                for round in 0..20 {
                    let tool = if round % 2 == 0 { "echo" } else { "status" };
                    seqs.push(plane.revoke(tool, "many", "p").await.unwrap());
                }
                seqs
            }));
        }
        let mut seqs = Vec::new();
        for task in tasks {
            let mine = task.await.unwrap();
            assert!(mine.windows(2).all(|pair| pair[0] < pair[1]), "{mine:?}");
            seqs.extend(mine);
        }
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=160).collect::<Vec<i64>>());
        wait_until(PROPAGATION, "B applies all 160", || {
            feed_b.applied_seq() == 160
        })
        .await;
        assert_eq!(registry_b.is_revoked_now("echo"), Some(true));
        assert_eq!(registry_b.is_revoked_now("status"), Some(true));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_without_a_notification_arrives_with_the_heartbeat() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_b, registry_b, feed_b) = replica(&url, "b", &counter).await;
        // Written as a replica would, but the notification is lost.
        crate::common::sql(&url)
            .await
            .batch_execute(
                "INSERT INTO registry_changes (seq, tool, kind, reason, origin)
                 VALUES (1, 'status', 'revoke', 'quiet', 'sql')",
            )
            .await
            .unwrap();
        // The heartbeat is 50 ms.
        let took = wait_until(Duration::from_millis(1000), "B reads it anyway", || {
            registry_b.is_revoked_now("status") == Some(true)
        })
        .await;
        assert_eq!(feed_b.applied_seq(), 1);
        eprintln!("a change without a notification was applied after {took:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_shorter_than_the_heartbeat_does_not_hold_a_healthy_replica() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        // A heartbeat of 2 s, longer than the lease of 1 s: shortened to half the lease. Not
        // shortened, the replica would be held each time a lease ran out between two beats.
        // (With the default heartbeat of 250 ms and a lease of 100 ms, then 240 ms, a loaded
        // machine's server that did not answer for that long held it: what a lease is for.)
        let plane = ControlPlane::builder(&crate::common::with_connect_timeout(&url))
            .heartbeat(Duration::from_secs(2))
            .lease(Duration::from_secs(1))
            .connect()
            .await
            .unwrap();
        let registry = crate::common::builder(&counter).build().unwrap();
        let _feed = plane.follow(&registry).await.unwrap();
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(3500) {
            assert_eq!(registry.suspended(), None, "after {:?}", started.elapsed());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_shut_down_leaves_the_registry_held() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_a, registry_a, feed_a) = replica(&url, "a", &counter).await;
        feed_a.shutdown().await;
        assert!(registry_a.suspended().is_some());
        let refused = registry_a
            .open_run("run", &subject())
            .call(call("c1", "status"))
            .await;
        assert_eq!(refused.error_kind(), Some(ErrorKind::Unavailable));
        let (_b, registry_b, feed_b) = replica(&url, "b", &counter).await;
        drop(feed_b);
        assert!(registry_b.suspended().is_some());
        assert_eq!(counter.get(), 0);
        // Shut down at once after following: the feed's tasks stop all the same.
        let plane_c = plane(&url, "c").await;
        for round in 0..30 {
            let registry = crate::common::builder(&counter).build().unwrap();
            let feed = plane_c.follow(&registry).await.unwrap();
            tokio::time::timeout(Duration::from_secs(3), feed.shutdown())
                .await
                .unwrap_or_else(|_| panic!("round {round}: the feed did not stop"));
            assert!(registry.suspended().is_some());
        }
    })
    .await;
}

/// Polls `registry` on a thread of its own, every 100 µs, until `tool` is revoked now as
/// `revoked` says; returns when it saw it.
fn watch(
    registry: &Registry,
    tool: &'static str,
    revoked: bool,
) -> tokio::task::JoinHandle<Instant> {
    let registry = registry.clone();
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + PROPAGATION;
        while registry.is_revoked_now(tool) != Some(revoked) {
            assert!(
                Instant::now() < deadline,
                "not propagated within {PROPAGATION:?}"
            );
            std::thread::sleep(Duration::from_micros(100));
        }
        Instant::now()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn propagation_delay_of_200_revoke_restore_pairs() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let admin = plane(&url, "admin").await;
        let (_b, registry_b, _feed_b) = replica(&url, "b", &counter).await;
        let mut samples = Vec::with_capacity(400);
        for _ in 0..200 {
            for revoked in [true, false] {
                let seen = watch(&registry_b, "status", revoked);
                let started = Instant::now();
                if revoked {
                    admin.revoke("status", "bench", "bench").await.unwrap();
                } else {
                    admin.restore("status", "bench", "bench").await.unwrap();
                }
                let at = seen.await.unwrap();
                samples.push(at.saturating_duration_since(started));
            }
        }
        samples.sort_unstable();
        let p = |percent: usize| samples[(samples.len() * percent / 100).min(samples.len() - 1)];
        eprintln!(
            "change propagation (commit started -> applied on another replica), {} changes: p50 {:?}, p99 {:?}, max {:?}",
            samples.len(),
            p(50),
            p(99),
            samples[samples.len() - 1]
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_does_not_concern_a_replica_with_another_version() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_a, registry_a, feed_a) = replica(&url, "a", &counter).await;
        // D runs newer code still: neither the version replaced nor the replacement.
        let newer = || {
            Registry::builder()
                .tool(crate::common::deploy(&counter))
                .tool(crate::common::status_described(
                    &counter,
                    "Read the build status of a project, with its tests and coverage.",
                ))
                .tool(crate::common::echo(&counter))
                .build()
                .unwrap()
        };
        let registry_d = newer();
        let feed_d = plane(&url, "d").await.follow(&registry_d).await.unwrap();
        let old = registry_a.get("status").unwrap().fingerprint().to_string();
        let record = feed_a
            .replace(
                crate::common::status_described(
                    &counter,
                    "Read the build status of a project, with its tests.",
                ),
                ReplaceOptions::keep_old_runs("v2"),
            )
            .await
            .unwrap();
        assert_eq!(record.old_fingerprint.as_deref(), Some(old.as_str()));
        wait_until(PROPAGATION, "D applies the replacement", || {
            feed_d.applied_seq() == record.seq
        })
        .await;
        assert_eq!(registry_d.is_revoked_now("status"), Some(false));
        // Nor does a replica of that newer code started afterwards, which replays it.
        let registry_e = newer();
        let _feed_e = plane(&url, "e").await.follow(&registry_e).await.unwrap();
        assert_eq!(registry_e.is_revoked_now("status"), Some(false));
        let done = registry_e
            .open_run("run-e", &subject())
            .call(call("e1", "status"))
            .await;
        assert!(!done.is_error(), "{done:?}");
        // A revocation and a restoration reach it as usual.
        feed_a.revoke("status", "incident").await.unwrap();
        let seq = feed_a.restore("status", "over").await.unwrap().seq;
        wait_until(PROPAGATION, "E applies both", || {
            _feed_e.applied_seq() == seq
        })
        .await;
        assert_eq!(registry_e.is_revoked_now("status"), Some(false));
    })
    .await;
}

/// `status` under `builds:read` (and `extra` scopes), answering `answer`: versions that a
/// model is shown alike, and that differ in scopes or in their handler only.
fn scoped_status(counter: &Counter, extra: &[&str], answer: &'static str) -> DynamicTool {
    let counter = counter.clone();
    let scopes: Vec<String> = std::iter::once("builds:read")
        .chain(extra.iter().copied())
        .map(str::to_owned)
        .collect();
    DynamicTool::new("status", "Read the build status of a project.")
        .parameters(crate::common::project_schema())
        .scopes(scopes)
        .read_only()
        .handler(move |_: &ToolContext, _: Value| {
            counter.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, String>(json!(answer))
        })
}

/// A following replica with only `status` as `tool`.
async fn scoped_replica(url: &str, name: &str, tool: DynamicTool) -> (Registry, ChangeFeed) {
    let registry = Registry::builder().tool(tool).build().unwrap();
    let feed = plane(url, name).await.follow(&registry).await.unwrap();
    (registry, feed)
}

fn builds_subject() -> registry_core::Subject {
    subject().with_scopes(["builds:read", "builds:audit"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_that_changes_only_scopes_stays_on_the_replica_that_made_it() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let v1 = || scoped_status(&counter, &[], "v1");
        let v2 = || scoped_status(&counter, &["builds:audit"], "v2");
        let (registry_a, feed_a) = scoped_replica(&url, "a", v1()).await;
        let (registry_b, feed_b) = scoped_replica(&url, "b", v1()).await;
        // C was deployed with the new version already.
        let (registry_c, feed_c) = scoped_replica(&url, "c", v2()).await;
        let shown = registry_a.get("status").unwrap().fingerprint();
        let old_version = registry_a.get("status").unwrap().version_fingerprint();

        let record = feed_a
            .replace(v2(), ReplaceOptions::keep_old_runs("audit scope"))
            .await
            .unwrap();
        let new = registry_a.get("status").unwrap();
        // The model is shown the same; the versions differ, and the record names both.
        assert_eq!(new.fingerprint(), shown);
        assert_ne!(new.version_fingerprint(), old_version);
        assert_eq!(
            record.version.as_deref(),
            Some(new.version_fingerprint().to_string().as_str())
        );
        assert_eq!(
            record.old_version.as_deref(),
            Some(old_version.to_string().as_str())
        );
        wait_until(PROPAGATION, "B and C apply the replacement", || {
            feed_b.applied_seq() == record.seq && feed_c.applied_seq() == record.seq
        })
        .await;
        // A applied its own record coming back through the feed, and still serves v2.
        assert_eq!(feed_a.applied_seq(), record.seq);
        assert_eq!(registry_a.is_revoked_now("status"), Some(false));
        let done = registry_a
            .open_run("run-a", &builds_subject())
            .call(call("a1", "status"))
            .await;
        assert_eq!(done.json(), &json!("v2"), "{done:?}");
        // B serves v1, which was replaced: revoked. C has v2: served.
        assert_eq!(registry_b.is_revoked_now("status"), Some(true));
        assert_eq!(registry_c.is_revoked_now("status"), Some(false));
        let done = registry_c
            .open_run("run-c", &builds_subject())
            .call(call("c1", "status"))
            .await;
        assert_eq!(done.json(), &json!("v2"), "{done:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_that_changes_only_the_handler_stays_on_the_replica_that_made_it() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (registry_a, feed_a) =
            scoped_replica(&url, "a", scoped_status(&counter, &[], "old")).await;
        let (registry_b, feed_b) =
            scoped_replica(&url, "b", scoped_status(&counter, &[], "old")).await;
        let version = registry_a.get("status").unwrap().version_fingerprint();

        let record = feed_a
            .replace(
                scoped_status(&counter, &[], "new"),
                ReplaceOptions::keep_old_runs("a fixed handler"),
            )
            .await
            .unwrap();
        // Nothing but the code differs: the versions cannot be told apart.
        assert_eq!(
            registry_a.get("status").unwrap().version_fingerprint(),
            version
        );
        assert_eq!(record.version, record.old_version);
        // Give A's feed time to have applied its own record more than once if it were to.
        wait_until(PROPAGATION, "B applies the replacement", || {
            feed_b.applied_seq() == record.seq
        })
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(feed_a.applied_seq(), record.seq);
        assert_eq!(registry_a.is_revoked_now("status"), Some(false));
        let done = registry_a
            .open_run("run-a", &builds_subject())
            .call(call("a1", "status"))
            .await;
        assert_eq!(done.json(), &json!("new"), "{done:?}");
        // B cannot know whether it has the new code: it fails closed, and stops serving.
        assert_eq!(registry_b.is_revoked_now("status"), Some(true));
        // Revoked and restored everywhere: A serves its new code again; B, which may have
        // only the old, stays revoked.
        feed_a.revoke("status", "incident").await.unwrap();
        let seq = feed_a.restore("status", "over").await.unwrap().seq;
        wait_until(PROPAGATION, "B applies both", || {
            feed_b.applied_seq() == seq
        })
        .await;
        assert_eq!(registry_a.is_revoked_now("status"), Some(false));
        assert_eq!(registry_b.is_revoked_now("status"), Some(true));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_recorded_before_version_fingerprints_is_compared_as_before() {
    let (_cluster, url) = cluster("feed");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let v1 = Registry::builder()
            .tool(scoped_status(&counter, &[], "v1"))
            .build()
            .unwrap();
        let shown = v1.get("status").unwrap().fingerprint().to_string();
        // What an earlier release recorded: the fingerprints of what was shown, no versions.
        ControlPlane::connect(&url).await.unwrap();
        crate::common::sql(&url)
            .await
            .execute(
                "INSERT INTO registry_changes
                     (seq, tool, kind, old_runs, fingerprint, old_fingerprint, reason, origin)
                 VALUES (1, 'status', 'replace', 'keep_shown_version', $1, $2, 'v2', 'old')",
                &[&"0".repeat(32), &shown],
            )
            .await
            .unwrap();
        let feed = plane(&url, "a").await.follow(&v1).await.unwrap();
        assert_eq!(feed.applied_seq(), 1);
        let records = plane(&url, "b").await.changes(0, 10).await.unwrap();
        assert_eq!(records[0].version, None);
        // It serves exactly the definition replaced: it lacks the new one.
        assert_eq!(v1.is_revoked_now("status"), Some(true));
        // A replica shown another definition is not concerned.
        let other = Registry::builder()
            .tool(crate::common::status_described(
                &counter,
                "Read the build status, with its tests.",
            ))
            .build()
            .unwrap();
        let _feed = plane(&url, "c").await.follow(&other).await.unwrap();
        assert_eq!(other.is_revoked_now("status"), Some(false));
    })
    .await;
}
