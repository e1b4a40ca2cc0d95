//! The schema is applied once, whoever connects first and however many connect at once.

use std::time::Duration;

use crate::common::{bounded, cluster, own_cluster, sql};
use registry_postgres::ControlPlane;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_planes_connecting_at_once_migrate_once() {
    let (cluster, _) = cluster("unused");
    bounded(Duration::from_secs(60), async {
        for round in 0..3 {
            let url = cluster.fresh_database("fresh").unwrap();
            let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(8));
            let tasks: Vec<_> = (0..8)
                .map(|index| {
                    let url = url.clone();
                    let barrier = barrier.clone();
                    tokio::spawn(async move {
                        barrier.wait().await;
                        ControlPlane::builder(&url)
                            .replica(format!("r{index}"))
                            .timeout(Duration::from_secs(10))
                            .connect()
                            .await
                    })
                })
                .collect();
            let mut planes = Vec::new();
            for task in tasks {
                planes.push(task.await.unwrap().expect("every plane connects"));
            }
            let rows = sql(&url)
                .await
                .query(
                    "SELECT version, count(*) FROM registry_migrations GROUP BY version ORDER BY version",
                    &[],
                )
                .await
                .unwrap();
            let versions: Vec<(i32, i64)> = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
            let expected: Vec<(i32, i64)> = (1..=migrations()).map(|version| (version, 1)).collect();
            assert_eq!(versions, expected, "round {round}");
            // Every plane works.
            for (index, plane) in planes.iter().enumerate() {
                let seq = plane.revoke("tool", "x", &format!("r{index}")).await.unwrap();
                assert!(seq >= 1);
            }
            assert_eq!(planes[0].changes(0, 100).await.unwrap().len(), 8);
            // Connecting again applies nothing new.
            ControlPlane::connect(&url).await.unwrap();
            let again: i64 = sql(&url)
                .await
                .query_one("SELECT count(*) FROM registry_migrations", &[])
                .await
                .unwrap()
                .get(0);
            assert_eq!(again, i64::from(migrations()));
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_newer_than_the_program_is_refused() {
    let (_cluster, url) = cluster("newer");
    bounded(Duration::from_secs(60), async {
        ControlPlane::connect(&url).await.unwrap();
        sql(&url)
            .await
            .batch_execute("INSERT INTO registry_migrations (version) VALUES (99)")
            .await
            .unwrap();
        let error = ControlPlane::connect(&url).await.unwrap_err();
        assert!(
            matches!(
                error,
                registry_postgres::Error::SchemaTooNew { found: 99, .. }
            ),
            "{error:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_is_down_is_an_error_in_time() {
    let (mut cluster, url) = own_cluster("down");
    bounded(Duration::from_secs(60), async {
        cluster.stop().unwrap();
        let started = std::time::Instant::now();
        let error = ControlPlane::builder(&url)
            .timeout(Duration::from_secs(1))
            .connect()
            .await
            .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert!(!error.to_string().is_empty());
    })
    .await;
}

/// How many migrations the crate has: the files in `migrations/`.
fn migrations() -> i32 {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations");
    let count = std::fs::read_dir(dir)
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|entry| entry.path().extension().is_some_and(|ext| ext == "sql"))
        })
        .count();
    i32::try_from(count).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_urls_connect_timeout_bounds_connecting_instead_of_the_planes_timeout() {
    let (_cluster, url) = cluster("connect_timeout");
    bounded(Duration::from_secs(60), async {
        // No time at all to connect: the plane's timeout bounds connecting.
        let error = ControlPlane::builder(&url)
            .timeout(Duration::ZERO)
            .connect()
            .await
            .unwrap_err();
        assert!(error.to_string().contains("connecting"), "{error}");
        // The URL's connect_timeout (10 s) bounds it instead; the rest keeps the plane's.
        let plane = ControlPlane::builder(&crate::common::with_connect_timeout(&url))
            .timeout(Duration::ZERO)
            .connect()
            .await;
        assert!(plane.is_ok(), "{:?}", plane.err());
    })
    .await;
}
