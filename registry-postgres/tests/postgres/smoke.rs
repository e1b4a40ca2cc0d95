//! A first check that a throwaway cluster starts (one of its own, and the shared one) and the
//! plane connects.
use registry_postgres::ControlPlane;
use registry_postgres::throwaway::Cluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plane_connects_to_a_throwaway_cluster_and_migrates_twice() {
    let cluster = Cluster::start().unwrap();
    let url = cluster.create_database("smoke").unwrap();
    let plane = ControlPlane::connect(&url).await.unwrap();
    let again = ControlPlane::connect(&url).await.unwrap();
    assert!(plane.changes(0, 10).await.unwrap().is_empty());
    let seq = again.revoke("deploy", "test", "me").await.unwrap();
    assert_eq!(seq, 1);
    assert_eq!(plane.changes(0, 10).await.unwrap()[0].tool, "deploy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_changes_and_a_tools_latest_are_read_in_one_query_each() {
    let url = Cluster::shared().unwrap().fresh_database("newest").unwrap();
    let plane = ControlPlane::connect(&url).await.unwrap();
    for (tool, restore) in [
        ("a", false),
        ("b", false),
        ("a", true),
        ("c", false),
        ("b", true),
    ] {
        if restore {
            plane.restore(tool, "x", "me").await.unwrap();
        } else {
            plane.revoke(tool, "x", "me").await.unwrap();
        }
    }
    let newest = plane.newest_changes(2).await.unwrap();
    let seqs: Vec<i64> = newest.iter().map(|change| change.seq).collect();
    assert_eq!(seqs, [4, 5], "oldest first");
    let latest = plane.latest_change_of("a").await.unwrap().unwrap();
    assert_eq!((latest.seq, latest.kind.as_str()), (3, "restore"));
    assert!(plane.latest_change_of("z").await.unwrap().is_none());
    assert_eq!(plane.newest_changes(50).await.unwrap().len(), 5);
}
