//! The upstream tools replicas withhold and the operators' acceptances of them, on a real
//! PostgreSQL cluster: a report replaces the replica's previous one, hostile bytes are kept
//! readable, an acceptance is bound to the digests offered (one per distinct offer across
//! replicas), and replicas read them in order.
use registry_postgres::throwaway::Cluster;
use registry_postgres::{ControlPlane, UpstreamOffer};

async fn plane(url: &str, replica: &str) -> ControlPlane {
    ControlPlane::builder(url)
        .replica(replica)
        .connect()
        .await
        .unwrap()
}

fn offer(tool: &str, definition: &str, why: &str) -> UpstreamOffer {
    let upstream_tool = tool.trim_start_matches("notes_");
    UpstreamOffer::new("notes", tool, upstream_tool, definition, "sha256:aa", why)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acceptances_are_bound_to_the_digests_the_replicas_report() {
    let url = Cluster::shared()
        .unwrap()
        .fresh_database("upstreams")
        .unwrap();
    let a = plane(&url, "a").await;
    let b = plane(&url, "b").await;

    // A report replaces the replica's previous one; hostile bytes stay on one line.
    a.report_upstream_offers(&[offer("notes_old", "sha256:00", "x")])
        .await
        .unwrap();
    let hostile = "withheld: changed\n\u{0}\u{202e}evil";
    a.report_upstream_offers(&[
        offer("notes_echo", "sha256:11", hostile),
        offer("notes_extra", "sha256:22", "new"),
    ])
    .await
    .unwrap();
    b.report_upstream_offers(&[offer("notes_echo", "sha256:11", "changed")])
        .await
        .unwrap();
    let offers = a.upstream_offers(Some("notes")).await.unwrap();
    let rows: Vec<(&str, &str)> = offers
        .iter()
        .map(|offer| (offer.tool.as_str(), offer.replica.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("notes_echo", "a"),
            ("notes_echo", "b"),
            ("notes_extra", "a")
        ]
    );
    assert!(
        !offers[0].withheld.contains('\u{0}'),
        "{:?}",
        offers[0].withheld
    );
    assert!(a.upstream_offers(Some("other")).await.unwrap().is_empty());

    // One acceptance per distinct offer, by the registry's name or the upstream's.
    let accepted = a
        .accept_upstream("notes", Some("echo"), "alice")
        .await
        .unwrap();
    assert_eq!(accepted.len(), 1);
    assert_eq!(
        (
            accepted[0].seq,
            accepted[0].tool.as_str(),
            accepted[0].definition.as_str()
        ),
        (1, "notes_echo", "sha256:11")
    );
    assert_eq!(accepted[0].origin, "alice");
    // A replica that now offers something else for echo: accepting the upstream records it too.
    b.report_upstream_offers(&[offer("notes_echo", "sha256:33", "changed")])
        .await
        .unwrap();
    let all = b.accept_upstream("notes", None, "bob").await.unwrap();
    let digests: Vec<&str> = all.iter().map(|a| a.definition.as_str()).collect();
    assert_eq!(digests, ["sha256:11", "sha256:33", "sha256:22"]);
    assert!(
        b.accept_upstream("gone", None, "bob")
            .await
            .unwrap()
            .is_empty()
    );

    // Read in order, from a sequence number, bounded.
    let read = a.upstream_acceptances(0, 2).await.unwrap();
    assert_eq!(read.iter().map(|a| a.seq).collect::<Vec<_>>(), [1, 2]);
    let rest = a.upstream_acceptances(2, 100).await.unwrap();
    assert_eq!(rest.iter().map(|a| a.seq).collect::<Vec<_>>(), [3, 4]);

    // An empty report clears the replica's offers.
    a.report_upstream_offers(&[]).await.unwrap();
    let left = b.upstream_offers(None).await.unwrap();
    assert!(left.iter().all(|offer| offer.replica == "b"), "{left:?}");
}
