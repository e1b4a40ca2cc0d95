//! The person across replicas: a request made by one principal on one replica cannot be
//! decided by another principal of the same tenant and agent on another replica; a row
//! stored before principals were recorded is decided only by a subject without one; the
//! bound on pending requests holds across replicas; quota buckets and audit rows are per
//! principal.

use std::time::Duration;

use crate::common::{Counter, bounded, builder, call, cluster, plane, sql};
use registry_core::approval::Verdict;
use registry_core::server::RegistryExt;
use registry_core::{
    DynamicTool, ErrorKind, Registry, Subject, ToolCall, ToolContext, approval::ApprovalError,
};
use registry_postgres::{AuditConfig, ControlPlane, VerdictOutcome};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(60);

/// An audit row: kind, call id, the `principal` column, the event's `principal`.
type AuditRow = (String, Option<String>, Option<String>, Option<String>);

fn person(principal: &str) -> Subject {
    Subject::new("acme")
        .with_agent("release-bot")
        .with_scopes(["ops:read"])
        .with_principal(principal)
}

/// `ping`: 2 calls a minute per subject, behind a scope.
fn ping() -> DynamicTool {
    DynamicTool::new("ping", "Answer pong.")
        .read_only()
        .scopes(["ops:read"])
        .rate_limit("2/min")
        .handler(|_: &ToolContext, _: Value| Ok::<_, String>(json!("pong")))
}

/// A replica on its own plane: approvals, quotas and the audit trail in the database.
async fn replica(
    url: &str,
    name: &str,
    counter: &Counter,
    max_pending: usize,
) -> (ControlPlane, Registry, registry_postgres::AuditWriter) {
    let plane = plane(url, name).await;
    let (sink, writer) = plane.audit_sink(AuditConfig::default());
    let registry = builder(counter)
        .tool(ping())
        .approval_store(plane.approval_store())
        .quota_store(plane.quota_store().exact())
        .audit_sink(sink)
        .max_pending_approvals(max_pending)
        .build()
        .unwrap();
    (plane, registry, writer)
}

async fn ask(registry: &Registry, subject: &Subject, call_id: &str) -> String {
    let run = registry.open_run(format!("run-{call_id}"), subject);
    let observation = run.call(call(call_id, "deploy")).await;
    assert_eq!(
        observation.error_kind(),
        Some(ErrorKind::ApprovalRequired),
        "{observation:?}"
    );
    observation.approval().expect("a request").id().to_owned()
}

async fn row_of(url: &str, id: &str) -> (String, Option<String>) {
    let row = sql(url)
        .await
        .query_one(
            "SELECT state, principal FROM registry_approvals WHERE id = $1",
            &[&id],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principal_cannot_decide_a_request_on_another_replica() {
    let (_cluster, url) = cluster("principals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_a, replica_a, _wa) = replica(&url, "a", &counter, 64).await;
        let (plane_b, replica_b, _wb) = replica(&url, "b", &counter, 64).await;
        let alice = person("iss:24:https://idp.example.comsub:alice");
        let bob = person("iss:24:https://idp.example.comsub:bob");
        let id = ask(&replica_a, &alice, "c1").await;
        assert_eq!(
            row_of(&url, &id).await,
            ("pending".to_owned(), alice.principal().map(str::to_owned))
        );

        // Bob, same tenant, agent and tools, on the other replica: neither approves nor denies.
        let bobs = replica_b.open_run("run-bob", &bob);
        let error = bobs.decide(&id, Verdict::approve()).await.unwrap_err();
        assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
        let error = bobs
            .decide(&id, Verdict::deny("mine now"))
            .await
            .unwrap_err();
        assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
        let error = bobs
            .decide(&id, Verdict::approve().by("bob"))
            .await
            .unwrap_err();
        assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
        assert_eq!(row_of(&url, &id).await.0, "pending");
        assert_eq!(counter.get(), 0);

        // Alice on the other replica does.
        let alices = replica_b.open_run("run-alice-b", &alice);
        let done = alices
            .decide(&id, Verdict::approve())
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(counter.get(), 1);
        assert_eq!(row_of(&url, &id).await.0, "approved");

        // An operator's verdict through the control plane still decides any request.
        let second = ask(&replica_a, &alice, "c2").await;
        let verdict = Verdict::deny("freeze").by("ops@example.com");
        assert_eq!(
            plane_b.give_verdict(&second, &verdict).await.unwrap(),
            VerdictOutcome::Given
        );
        assert_eq!(row_of(&url, &second).await.0, "denied");
        // And Bob still learns nothing of it.
        let error = bobs.decide(&second, Verdict::approve()).await.unwrap_err();
        assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
    })
    .await;
}

/// A row written before migration 7: no `principal` column value, no `principal` in the
/// request's JSON. Only a subject without a principal decides it: fail closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_stored_before_principals_is_decided_only_without_one() {
    let (_cluster, url) = cluster("principals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_a, registry, _w) = replica(&url, "a", &counter, 64).await;
        let alice = person("token:alice");
        let id = ask(&registry, &alice, "c1").await;
        sql(&url)
            .await
            .execute(
                "UPDATE registry_approvals SET principal = NULL, request = request - 'principal',
                        body = convert_to(
                            (convert_from(body, 'UTF8')::jsonb - 'principal')::text, 'UTF8')
                  WHERE id = $1",
                &[&id],
            )
            .await
            .unwrap();
        let (request, _) = registry.approval_request(&id).await.unwrap().unwrap();
        assert_eq!(request.principal(), None);

        let named = registry.open_run("run-alice", &alice);
        let error = named.decide(&id, Verdict::approve()).await.unwrap_err();
        assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
        let error = named.decide(&id, Verdict::deny("no")).await.unwrap_err();
        assert!(matches!(error, ApprovalError::OtherRun { .. }), "{error:?}");
        assert_eq!(counter.get(), 0);

        let unnamed = Subject::new("acme")
            .with_agent("release-bot")
            .with_scopes(["ops:read"]);
        let done = registry
            .open_run("run-old", &unnamed)
            .decide(&id, Verdict::approve())
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(counter.get(), 1);
    })
    .await;
}

/// `max_pending_approvals` counts in the database: requests made on two replicas count
/// against one bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bound_on_pending_requests_holds_across_replicas() {
    let (_cluster, url) = cluster("principals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_a, replica_a, _wa) = replica(&url, "a", &counter, 2).await;
        let (_b, replica_b, _wb) = replica(&url, "b", &counter, 2).await;
        let alice = person("token:alice");
        let first = ask(&replica_a, &alice, "c1").await;
        ask(&replica_b, &alice, "c2").await;
        let refused = replica_a
            .open_run("run-c3", &alice)
            .call(call("c3", "deploy"))
            .await;
        assert_eq!(
            refused.error_kind(),
            Some(ErrorKind::RateLimited),
            "{refused:?}"
        );
        let text = refused.error_text().unwrap();
        assert!(text.contains("too many approvals are waiting"), "{text}");
        let stored: i64 = sql(&url)
            .await
            .query_one("SELECT count(*) FROM registry_approvals", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(stored, 2, "nothing stored for the refused call");

        // Another principal, and the agent without one, have their own bound.
        ask(&replica_a, &person("token:bob"), "c4").await;
        let unnamed = Subject::new("acme").with_agent("release-bot");
        ask(&replica_b, &unnamed, "c5").await;

        // Deciding one makes room; so does one expiring (not counted once expired).
        let denied = replica_b
            .open_run("run-alice", &alice)
            .decide(&first, Verdict::deny("no"))
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));
        ask(&replica_a, &alice, "c6").await;
        assert_eq!(counter.get(), 0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_and_audit_rows_are_per_principal() {
    let (_cluster, url) = cluster("principals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_a, replica_a, writer_a) = replica(&url, "a", &counter, 64).await;
        let (_b, replica_b, writer_b) = replica(&url, "b", &counter, 64).await;
        let alice = replica_a.open_run("run-alice", &person("token:alice"));
        let alice_b = replica_b.open_run("run-alice-b", &person("token:alice"));
        let bob = replica_b.open_run("run-bob", &person("token:bob"));
        let ping = |id: &str| ToolCall::new(id, "ping", json!({}));
        assert!(!alice.call(ping("p1")).await.is_error());
        assert!(!alice_b.call(ping("p2")).await.is_error());
        let limited = alice.call(ping("p3")).await;
        assert_eq!(limited.error_kind(), Some(ErrorKind::RateLimited));
        // Bob, same tenant and agent, has his own bucket in the shared store.
        assert!(!bob.call(ping("p4")).await.is_error());
        assert!(!bob.call(ping("p5")).await.is_error());
        assert_eq!(
            bob.call(ping("p6")).await.error_kind(),
            Some(ErrorKind::RateLimited)
        );
        assert!(writer_a.flush(Duration::from_secs(10)).await);
        assert!(writer_b.flush(Duration::from_secs(10)).await);

        let rows = sql(&url)
            .await
            .query(
                "SELECT kind, call_id, principal, event->>'principal' FROM audit_events
                  WHERE kind IN ('call', 'projection') ORDER BY id",
                &[],
            )
            .await
            .unwrap();
        let rows: Vec<AuditRow> = rows
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
            .collect();
        assert_eq!(rows.len(), 9, "{rows:?}");
        for (kind, call_id, column, event) in &rows {
            let expected = match call_id.as_deref() {
                Some("p4" | "p5" | "p6") => "token:bob",
                Some(_) => "token:alice",
                None => continue,
            };
            assert_eq!(column.as_deref(), Some(expected), "{kind} {call_id:?}");
            assert_eq!(event.as_deref(), Some(expected), "{kind} {call_id:?}");
        }
        let projections: Vec<_> = rows
            .iter()
            .filter(|(kind, ..)| kind == "projection")
            .map(|(_, _, column, _)| column.clone())
            .collect();
        assert_eq!(projections.len(), 3);
        assert!(projections.iter().all(Option::is_some), "{projections:?}");
    })
    .await;
}
