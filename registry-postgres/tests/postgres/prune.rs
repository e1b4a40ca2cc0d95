//! Pruning: what is older than the retention goes, in batches; the change log keeps what a
//! replica catching up needs; one prune at a time; a plane with a retention prunes itself.

use registry_core::server::RegistryExt;
use std::time::Duration;

use crate::common::{Counter, bounded, cluster, plane, sql};
use registry_postgres::ControlPlane;

const LIMIT: Duration = Duration::from_secs(90);
const DAY: Duration = Duration::from_secs(86_400);

/// The advisory lock a prune holds (as in `src/prune.rs`).
const PRUNE_LOCK: i64 = 0x7072_756e_696e_0001;

/// `count` audit events recorded `days` ago, call ids `{prefix}-{n}`.
async fn old_audit(url: &str, prefix: &str, count: i32, days: i32) {
    sql(url)
        .await
        .execute(
            "INSERT INTO audit_events (at, replica, kind, call_id, event)
             SELECT now() - make_interval(days => $3), 'old', 'call', $1 || '-' || n, '{}'::jsonb
               FROM generate_series(1, $2) AS n",
            &[&prefix, &count, &days],
        )
        .await
        .unwrap();
}

/// An approval request in `state`, requested and expiring relative to now, decided
/// `decided_days` ago if at all.
async fn approval(url: &str, id: &str, state: &str, expires_days: i32, decided_days: Option<i32>) {
    sql(url)
        .await
        .execute(
            "INSERT INTO registry_approvals
                 (id, tool, tenant, run_id, call_id, reason, request, requested_at, expires_at,
                  state, decided_at, origin)
             VALUES ($1, 'deploy', 'acme', 'r', 'c', 'why', '{}'::jsonb, now() - interval '60 days',
                     now() + make_interval(days => $3), $2,
                     now() - make_interval(days => $4), 'test')",
            &[&id, &state, &expires_days, &decided_days],
        )
        .await
        .unwrap();
}

async fn scalar(url: &str, query: &str) -> i64 {
    sql(url).await.query_one(query, &[]).await.unwrap().get(0)
}

async fn ids(url: &str, query: &str) -> Vec<String> {
    sql(url)
        .await
        .query(query, &[])
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_deletes_what_is_old_and_keeps_what_replicas_need() {
    let (_cluster, url) = cluster("prune");
    bounded(LIMIT, async {
        let plane = plane(&url, "a").await;
        // The change log: deploy revoked, restored, revoked; status revoked; echo replaced
        // twice (records a replica wrote, as `ChangeFeed::replace` does).
        plane.revoke("deploy", "one", "test").await.unwrap();
        plane.restore("deploy", "two", "test").await.unwrap();
        plane.revoke("deploy", "three", "test").await.unwrap();
        plane.revoke("status", "four", "test").await.unwrap();
        sql(&url)
            .await
            .batch_execute(
                "INSERT INTO registry_changes (seq, tool, kind, old_runs, fingerprint, reason, origin)
                 VALUES (5, 'echo', 'replace', 'keep_shown_version', 'f1', 'five', 'test'),
                        (6, 'echo', 'replace', 'keep_shown_version', 'f2', 'six', 'test');
                 UPDATE registry_changes SET at = now() - interval '30 days';",
            )
            .await
            .unwrap();
        // 2,500 old audit events (three batches), and 4 recent ones.
        old_audit(&url, "old", 2_500, 30).await;
        old_audit(&url, "new", 4, 0).await;
        // Approvals: decided long ago (goes), decided lately (stays), pending and expired
        // long ago (goes), pending and live (stays, however old the request).
        approval(&url, "apr_old_denied", "denied", -29, Some(29)).await;
        approval(&url, "apr_new_denied", "denied", 1, Some(0)).await;
        approval(&url, "apr_old_pending", "pending", -20, None).await;
        approval(&url, "apr_live_pending", "pending", 1, None).await;

        let report = plane.prune(7 * DAY).await.unwrap().expect("no other prune");
        assert_eq!(report.audit_events, 2_500);
        assert_eq!(report.changes, 2, "the first two changes of deploy");
        assert_eq!(report.approvals, 2);

        assert_eq!(
            scalar(&url, "SELECT count(*) FROM audit_events WHERE kind <> 'prune'").await,
            4
        );
        let kept: Vec<i64> = sql(&url)
            .await
            .query("SELECT seq FROM registry_changes ORDER BY seq", &[])
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert_eq!(kept, [3, 4, 5, 6]);
        assert_eq!(
            ids(&url, "SELECT id FROM registry_approvals ORDER BY id").await,
            ["apr_live_pending", "apr_new_denied"]
        );
        // The newest change of a tool is what `registry-admin restore` checks.
        let latest = plane.latest_change_of("deploy").await.unwrap().unwrap();
        assert_eq!(latest.seq, 3);

        // A replica starting now, from what is left, reaches the state the whole log gave:
        // deploy and status revoked.
        let counter = Counter::default();
        let registry = crate::common::builder(&counter).build().unwrap();
        let feed = plane.follow(&registry).await.unwrap();
        assert_eq!(registry.is_revoked_now("deploy"), Some(true));
        assert_eq!(registry.is_revoked_now("status"), Some(true));
        feed.shutdown().await;

        // Nothing is left to prune; a second prune deletes nothing.
        let again = plane.prune(7 * DAY).await.unwrap().unwrap();
        assert_eq!(again, registry_postgres::PruneReport::default());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_prune_at_a_time() {
    let (_cluster, url) = cluster("prune");
    bounded(LIMIT, async {
        let plane = plane(&url, "a").await;
        old_audit(&url, "old", 10, 30).await;
        let holder = sql(&url).await;
        holder
            .execute("SELECT pg_advisory_lock($1)", &[&PRUNE_LOCK])
            .await
            .unwrap();
        assert_eq!(plane.prune(7 * DAY).await.unwrap(), None);
        assert_eq!(scalar(&url, "SELECT count(*) FROM audit_events").await, 10);
        holder
            .execute("SELECT pg_advisory_unlock($1)", &[&PRUNE_LOCK])
            .await
            .unwrap();
        let report = plane.prune(7 * DAY).await.unwrap().unwrap();
        assert_eq!(report.audit_events, 10);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plane_with_a_retention_prunes_on_its_own() {
    let (_cluster, url) = cluster("prune");
    bounded(LIMIT, async {
        // Two replicas with a retention: they take turns under the lock.
        let planes: Vec<ControlPlane> = {
            let mut planes = Vec::new();
            for name in ["a", "b"] {
                planes.push(
                    ControlPlane::builder(&crate::common::with_connect_timeout(&url))
                        .replica(name)
                        .retention(7 * DAY)
                        .prune_every(Duration::from_millis(50))
                        .connect()
                        .await
                        .unwrap(),
                );
            }
            planes
        };
        old_audit(&url, "new", 3, 0).await;
        for round in 0..3 {
            old_audit(&url, &format!("old{round}"), 100, 30).await;
            crate::common::wait_until_async(
                Duration::from_secs(10),
                "old events pruned",
                || async {
                    scalar(
                        &url,
                        "SELECT count(*) FROM audit_events WHERE kind <> 'prune'",
                    )
                    .await
                        == 3
                },
            )
            .await;
        }
        drop(planes);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_below_the_floor_is_refused_unless_forced_and_every_prune_is_audited() {
    let (_cluster, url) = cluster("prune");
    bounded(LIMIT, async {
        let plane = plane(&url, "ops").await;
        old_audit(&url, "recent", 5, 0).await;
        old_audit(&url, "old", 3, 30).await;

        // `--older-than 0s`: refused, nothing deleted, nothing recorded.
        for asked in [
            Duration::ZERO,
            DAY,
            registry_postgres::PRUNE_FLOOR - Duration::from_secs(1),
        ] {
            let refused = plane.prune(asked).await.unwrap_err();
            assert!(
                matches!(refused, registry_postgres::Error::BelowPruneFloor { .. }),
                "{refused:?}"
            );
            assert!(refused.to_string().contains("--force"), "{refused}");
        }
        let cutoff = std::time::SystemTime::now() - DAY;
        assert!(plane.prune_before(cutoff).await.is_err());
        assert_eq!(scalar(&url, "SELECT count(*) FROM audit_events").await, 8);
        // A retention below the floor is refused at connect.
        let short = ControlPlane::builder(&url).retention(DAY).connect().await;
        assert!(
            matches!(short, Err(registry_postgres::Error::BelowPruneFloor { .. })),
            "{short:?}"
        );

        // Offers: a dead replica's (reported 30 days ago) and a live one's.
        sql(&url)
            .await
            .batch_execute(
                "INSERT INTO upstream_offers
                     (replica, upstream, tool, upstream_tool, definition, annotations, withheld,
                      seen_at)
                 VALUES ('dead', 'notes', 'notes_echo', 'echo', 'sha256:1', 'sha256:a', 'new',
                         now() - interval '30 days'),
                        ('live', 'notes', 'notes_echo', 'echo', 'sha256:2', 'sha256:a', 'new',
                         now())",
            )
            .await
            .unwrap();

        // At the floor: the old go, and the prune is recorded with what it deleted.
        let report = plane.prune(7 * DAY).await.unwrap().unwrap();
        assert_eq!(report.audit_events, 3);
        assert_eq!(report.offers, 1);
        assert_eq!(
            ids(&url, "SELECT replica FROM upstream_offers").await,
            ["live"]
        );
        let row = sql(&url)
            .await
            .query_one(
                "SELECT replica, outcome, event FROM audit_events WHERE kind = 'prune'",
                &[],
            )
            .await
            .unwrap();
        let (replica, outcome, event): (String, String, serde_json::Value) =
            (row.get(0), row.get(1), row.get(2));
        assert_eq!((replica.as_str(), outcome.as_str()), ("ops", "pruned"));
        assert_eq!(event["audit_events"], 3);
        assert_eq!(event["offers"], 1);
        assert_eq!(event["forced"], false);
        assert_eq!(event["user"], "postgres");

        // Forced to zero: every event goes but the prunes' own records.
        let forced = plane.prune_forced(Duration::ZERO).await.unwrap().unwrap();
        assert_eq!(forced.audit_events, 5);
        let kinds: Vec<String> = ids(
            &url,
            "SELECT kind || ':' || (event->>'forced') FROM audit_events ORDER BY id",
        )
        .await;
        assert_eq!(kinds, ["prune:false", "prune:true"]);
    })
    .await;
}

/// Rows older than the default retention in every table a prune covers, and rows it must
/// keep: the newest policy set (however old), a live replica's policy status (however long
/// ago it reported), a dead replica's status seen lately, a set a kept status runs.
async fn rows_of_every_kind(url: &str, plane: &ControlPlane) {
    // Three policy sets and their `policies` changes.
    for text in [
        "permit(principal, action, resource);",
        "forbid(principal, action, resource);",
        "permit(principal, action, resource) when { true };",
    ] {
        plane
            .push_policies([("base.cedar".to_owned(), text.to_owned())], "test")
            .await
            .unwrap();
    }
    plane.revoke("deploy", "one", "test").await.unwrap();
    plane.restore("deploy", "two", "test").await.unwrap();
    old_audit(url, "old", 20, 40).await;
    old_audit(url, "new", 2, 0).await;
    approval(url, "apr_old_denied", "denied", -39, Some(39)).await;
    approval(url, "apr_new_denied", "denied", 1, Some(0)).await;
    sql(url)
        .await
        .batch_execute(
            "UPDATE registry_changes SET at = now() - interval '40 days';
             UPDATE registry_policy_sets SET at = now() - interval '40 days';
             -- 'live' reported long ago and is seen now; 'gone' is dead and ran set 1;
             -- 'lately' died a minute and a half ago and runs set 2.
             INSERT INTO registry_policy_status
                 (replica, generation, outcome, error, running, at, seen_at)
             VALUES ('live', 3, 'applied', NULL, 3, now() - interval '40 days', now()),
                    ('gone', 1, 'applied', NULL, 1, now() - interval '40 days',
                     now() - interval '40 days'),
                    ('lately', 3, 'refused', 'no', 2, now() - interval '40 days',
                     now() - interval '90 seconds');
             INSERT INTO upstream_offers
                 (replica, upstream, tool, upstream_tool, definition, annotations, withheld,
                  seen_at)
             VALUES ('gone', 'notes', 'notes_echo', 'echo', 'sha256:1', 'sha256:a', 'new',
                     now() - interval '40 days');
             INSERT INTO registry_tasks
                 (id, owner, tenant, tool, status, record, replica, lease_until, ttl_ms,
                  updated_at, expires_at)
             VALUES ('task_old', '\\x00', 'acme', 'deploy', 'completed', '\\x00', 'gone',
                     now() - interval '41 days', 1000, now() - interval '41 days',
                     now() - interval '40 days'),
                    ('task_running', '\\x00', 'acme', 'deploy', 'working', '\\x00', 'live',
                     now() + interval '1 hour', 1000, now() - interval '41 days', NULL);
             -- Drawn from 40 days ago: full again (goes); empty, with a refill slower than
             -- that (stays: deleting it would give its subject a full bucket).
             INSERT INTO registry_quota_buckets (key, tokens_us, at, capacity_us, interval_us)
             VALUES ('\\x01', 0, now() - interval '40 days', 60000000, 1000000),
                    ('\\x02', 0, now() - interval '40 days', 9000000000000000, 1000000);",
        )
        .await
        .unwrap();
}

/// What is left of the rows of [`rows_of_every_kind`], table by table.
async fn left(url: &str) -> Vec<String> {
    let mut left = Vec::new();
    for (table, query) in [
        (
            "audit",
            "SELECT count(*)::text FROM audit_events WHERE kind <> 'prune'",
        ),
        (
            "approvals",
            "SELECT string_agg(id, ',' ORDER BY id) FROM registry_approvals",
        ),
        (
            "changes",
            "SELECT string_agg(kind, ',' ORDER BY seq) FROM registry_changes",
        ),
        (
            "sets",
            "SELECT string_agg(generation::text, ',' ORDER BY generation) FROM registry_policy_sets",
        ),
        (
            "status",
            "SELECT string_agg(replica, ',' ORDER BY replica) FROM registry_policy_status",
        ),
        ("offers", "SELECT count(*)::text FROM upstream_offers"),
        (
            "tasks",
            "SELECT string_agg(id, ',' ORDER BY id) FROM registry_tasks",
        ),
        (
            "buckets",
            "SELECT string_agg(encode(key, 'hex'), ',' ORDER BY key) FROM registry_quota_buckets",
        ),
    ] {
        let row = sql(url).await.query_one(query, &[]).await.unwrap();
        let value: Option<String> = row.get(0);
        left.push(format!("{table}: {}", value.unwrap_or_default()));
    }
    left
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plane_built_with_defaults_prunes_every_covered_table_on_its_own() {
    let (_cluster, url) = cluster("prune");
    bounded(LIMIT, async {
        let url = crate::common::with_connect_timeout(&url);
        // Turned off explicitly: nothing goes, however often it would prune.
        let off = ControlPlane::builder(&url)
            .replica("off")
            .no_retention()
            .prune_every(Duration::from_millis(20))
            .connect()
            .await
            .unwrap();
        rows_of_every_kind(&url, &off).await;
        let before = left(&url).await;
        assert_eq!(
            before,
            [
                "audit: 22",
                "approvals: apr_new_denied,apr_old_denied",
                "changes: policies,policies,policies,revoke,restore",
                "sets: 1,2,3",
                "status: gone,lately,live",
                "offers: 1",
                "tasks: task_old,task_running",
                "buckets: 01,02",
            ]
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(left(&url).await, before, "no retention: nothing pruned");
        assert_eq!(
            scalar(
                &url,
                "SELECT count(*) FROM audit_events WHERE kind = 'prune'"
            )
            .await,
            0
        );

        // Built with the defaults (only the period shortened): the default retention, 30
        // days, prunes every covered table without being asked.
        let default = ControlPlane::builder(&url)
            .replica("default")
            .prune_every(Duration::from_millis(50))
            .connect()
            .await
            .unwrap();
        let expected = [
            "audit: 2",
            "approvals: apr_new_denied",
            // The newest push and the newest change of deploy stay, whatever their age.
            "changes: policies,restore",
            // The newest set stays, and set 2, which a kept status runs.
            "sets: 2,3",
            // The live replica's status stays, however long ago it reported; so does a dead
            // replica's seen within the retention.
            "status: lately,live",
            "offers: 0",
            "tasks: task_running",
            "buckets: 02",
        ];
        crate::common::wait_until_async(
            Duration::from_secs(20),
            "the default retention pruned",
            || async { left(&url).await == expected },
        )
        .await;
        // Recorded in the audit trail, with what it deleted.
        let event: serde_json::Value = sql(&url)
            .await
            .query_one(
                "SELECT event FROM audit_events WHERE kind = 'prune' AND replica = 'default'
                  ORDER BY id LIMIT 1",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(event["audit_events"], 20, "{event}");
        assert_eq!(event["policy_sets"], 1, "{event}");
        assert_eq!(event["policy_status"], 1, "{event}");
        assert_eq!(event["tasks"], 1, "{event}");
        assert_eq!(event["quota_buckets"], 1, "{event}");
        // Nothing more to prune: later turns record nothing.
        let prunes = scalar(
            &url,
            "SELECT count(*) FROM audit_events WHERE kind = 'prune'",
        )
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            scalar(
                &url,
                "SELECT count(*) FROM audit_events WHERE kind = 'prune'"
            )
            .await,
            prunes
        );
        assert_eq!(left(&url).await, expected);
        drop((off, default));
    })
    .await;
}
