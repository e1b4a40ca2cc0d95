//! A first check that a throwaway cluster starts and the plane connects.
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
