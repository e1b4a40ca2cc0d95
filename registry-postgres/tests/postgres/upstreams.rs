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

    // Exactly the digest reviewed, matched on the registry's name only.
    let accepted = a
        .accept_upstream("notes", Some("notes_echo"), "sha256:11", None, "alice")
        .await
        .unwrap();
    assert_eq!(
        (
            accepted.seq,
            accepted.tool.as_str(),
            accepted.definition.as_str()
        ),
        (1, "notes_echo", "sha256:11")
    );
    assert_eq!(accepted.origin, "alice");
    // The upstream's own name is not the registry's: nothing matches it.
    assert!(matches!(
        a.accept_upstream("notes", Some("echo"), "sha256:11", None, "alice")
            .await,
        Err(registry_postgres::Error::NotAccepted(_))
    ));
    // b now offers something else for echo; a still offers 11: each digest is its own.
    b.report_upstream_offers(&[offer("notes_echo", "sha256:33", "changed")])
        .await
        .unwrap();
    let by_digest = b
        .accept_upstream("notes", None, "sha256:33", None, "bob")
        .await
        .unwrap();
    assert_eq!((by_digest.seq, by_digest.tool.as_str()), (2, "notes_echo"));
    b.accept_upstream("notes", None, "sha256:22", None, "bob")
        .await
        .unwrap();
    assert!(
        b.accept_upstream("gone", None, "sha256:22", None, "bob")
            .await
            .is_err()
    );
    // Two tools offering one digest: the tool must be named.
    a.report_upstream_offers(&[
        offer("notes_echo", "sha256:11", "changed"),
        offer("notes_extra", "sha256:11", "new"),
    ])
    .await
    .unwrap();
    let error = a
        .accept_upstream("notes", None, "sha256:11", None, "alice")
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("--tool"), "{error}");
    b.accept_upstream("notes", Some("notes_extra"), "sha256:11", None, "bob")
        .await
        .unwrap();

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

/// What `upstream_acceptances` holds: (tool, definition).
async fn accepted(plane: &ControlPlane) -> Vec<(String, String)> {
    plane
        .upstream_acceptances(0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.tool, a.definition))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_takes_exactly_the_reviewed_digest_and_never_a_dead_replicas_offer() {
    let url = Cluster::shared()
        .unwrap()
        .fresh_database("accepting")
        .unwrap();
    let live = plane(&url, "live").await;
    let dead = plane(&url, "dead").await;

    // The operator reviews D1, with its text, escaped by the CLI.
    let text = r#"{"name":"echo","description":"Say it back."}"#;
    live.report_upstream_offers(&[offer("notes_echo", "sha256:d1", "changed").with_offered(text)])
        .await
        .unwrap();
    let listed = live.upstream_offers(Some("notes")).await.unwrap();
    assert_eq!(listed[0].offered.as_deref(), Some(text));

    // The upstream switches to D2 before the operator accepts D1: D1 is stale, refused, and
    // nothing is accepted (neither D1 nor what is offered now).
    live.report_upstream_offers(&[offer("notes_echo", "sha256:d2", "changed")])
        .await
        .unwrap();
    let stale = live
        .accept_upstream("notes", Some("notes_echo"), "sha256:d1", None, "alice")
        .await
        .unwrap_err();
    assert!(matches!(stale, registry_postgres::Error::NotAccepted(_)));
    let said = stale.to_string();
    assert!(
        said.contains("sha256:d1") && said.contains("sha256:d2"),
        "{said}"
    );
    assert!(accepted(&live).await.is_empty());

    // The right digest: exactly that definition, once.
    let one = live
        .accept_upstream("notes", Some("notes_echo"), "sha256:d2", None, "alice")
        .await
        .unwrap();
    assert_eq!(
        (one.definition.as_str(), one.annotations.as_str()),
        ("sha256:d2", "sha256:aa")
    );
    assert_eq!(
        accepted(&live).await,
        [("notes_echo".to_owned(), "sha256:d2".to_owned())]
    );

    // A replica that died (its offer older than the TTL) offers nothing: not listed, not
    // accepted.
    dead.report_upstream_offers(&[offer("notes_echo", "sha256:d3", "changed")])
        .await
        .unwrap();
    crate::common::sql(&url)
        .await
        .execute(
            "UPDATE upstream_offers SET seen_at = now() - interval '10 minutes'
              WHERE replica = 'dead'",
            &[],
        )
        .await
        .unwrap();
    let listed = live.upstream_offers(None).await.unwrap();
    assert!(listed.iter().all(|o| o.replica == "live"), "{listed:?}");
    assert!(
        live.accept_upstream("notes", Some("notes_echo"), "sha256:d3", None, "alice")
            .await
            .is_err()
    );
    // A refresh keeps a live replica's offer.
    crate::common::sql(&url)
        .await
        .execute(
            "UPDATE upstream_offers SET seen_at = now() - interval '50 seconds'
              WHERE replica = 'live'",
            &[],
        )
        .await
        .unwrap();
    live.refresh_upstream_offers().await.unwrap();
    crate::common::sql(&url)
        .await
        .execute(
            "UPDATE upstream_offers SET seen_at = seen_at - interval '50 seconds'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(live.upstream_offers(None).await.unwrap().len(), 1);
    assert_eq!(accepted(&live).await.len(), 1);
}
