//! `PgApprovalStore` through the real core: requests made on one replica and decided on
//! another, exactly once, operators' verdicts, expiry, and a database that is down.

use std::sync::Arc;
use std::time::Duration;

use crate::common::{Counter, bounded, builder, call, cluster, own_cluster, plane, sql, subject};
use registry_core::approval::Verdict;
use registry_core::server::RegistryExt;
use registry_core::{
    ErrorKind, Registry,
    approval::{ApprovalError, ApprovalState},
};
use registry_postgres::{ApprovalFilter, ControlPlane, VerdictOutcome};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(60);

/// A registry (a replica) on its own plane, sharing `counter`.
async fn replica(url: &str, name: &str, counter: &Counter) -> (ControlPlane, Registry) {
    let plane = crate::common::patient_plane(url, name).await;
    let registry = builder(counter)
        .approval_store(plane.approval_store())
        .build()
        .unwrap();
    (plane, registry)
}

/// Asks for approval of `deploy` on `registry`; returns the request's id.
async fn ask(registry: &Registry, call_id: &str) -> String {
    let run = registry.open_run(format!("run-{call_id}"), &subject());
    let observation = run.call(call(call_id, "deploy")).await;
    assert_eq!(
        observation.error_kind(),
        Some(ErrorKind::ApprovalRequired),
        "{observation:?}"
    );
    observation.approval().expect("a request").id().to_owned()
}

fn pending_only() -> ApprovalFilter {
    let mut filter = ApprovalFilter::default();
    filter.pending = true;
    filter
}

async fn state_of(url: &str, id: &str) -> String {
    sql(url)
        .await
        .query_one("SELECT state FROM registry_approvals WHERE id = $1", &[&id])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_made_on_one_replica_is_approved_on_another_and_runs_once() {
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_a, registry_a) = replica(&url, "a", &counter).await;
        let (_b, registry_b) = replica(&url, "b", &counter).await;
        let (_c, registry_c) = replica(&url, "c", &counter).await;
        let id = ask(&registry_a, "c1").await;
        assert_eq!(counter.get(), 0);

        let row = sql(&url)
            .await
            .query_one(
                "SELECT state, tool, tenant, agent, call_id, origin, decision IS NULL
                   FROM registry_approvals WHERE id = $1",
                &[&id],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), "pending");
        assert_eq!(row.get::<_, String>(1), "deploy");
        assert_eq!(row.get::<_, String>(2), "acme");
        assert_eq!(
            row.get::<_, Option<String>>(3).as_deref(),
            Some("release-bot")
        );
        assert_eq!(row.get::<_, String>(4), "c1");
        assert_eq!(row.get::<_, String>(5), "a");
        assert!(row.get::<_, bool>(6));

        // Another replica, a run opened for the same subject: it approves, the call runs.
        let run_b = registry_b.open_run("run-b", &subject());
        let done = run_b
            .decide(&id, Verdict::approve().by("alice"))
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(done.call_id(), "c1");
        assert_eq!(counter.get(), 1);
        assert_eq!(state_of(&url, &id).await, "approved");

        // A third decision, from any replica: decided already, nothing runs.
        for registry in [&registry_a, &registry_b, &registry_c] {
            let run = registry.open_run("run-late", &subject());
            let error = run.decide(&id, Verdict::approve()).await.unwrap_err();
            assert!(
                matches!(
                    &error,
                    ApprovalError::AlreadyDecided {
                        state: ApprovalState::Approved { by: Some(by), .. },
                        ..
                    } if by == "alice"
                ),
                "{error:?}"
            );
            let error = run
                .decide(&id, Verdict::deny("too late"))
                .await
                .unwrap_err();
            assert!(
                matches!(error, ApprovalError::AlreadyDecided { .. }),
                "{error:?}"
            );
        }
        assert_eq!(counter.get(), 1);

        // An id no replica made.
        let run = registry_c.open_run("run-c", &subject());
        let error = run
            .decide("apr_00000000000000000000000000000000", Verdict::approve())
            .await
            .unwrap_err();
        assert!(
            matches!(error, ApprovalError::UnknownId { .. }),
            "{error:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_approvals_from_eight_replicas_run_the_call_once() {
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let mut replicas = Vec::new();
        for index in 0..8 {
            replicas.push(replica(&url, &format!("r{index}"), &counter).await);
        }
        for round in 0..5 {
            let id = ask(&replicas[round % 8].1, &format!("c{round}")).await;
            let before = counter.get();
            let barrier = Arc::new(tokio::sync::Barrier::new(8));
            let tasks: Vec<_> = replicas
                .iter()
                .map(|(_, registry)| {
                    let run = registry.open_run("run-approver", &subject());
                    let id = id.clone();
                    let barrier = barrier.clone();
                    tokio::spawn(async move {
                        barrier.wait().await;
                        run.decide(&id, Verdict::approve()).await
                    })
                })
                .collect();
            let mut outcomes = Vec::new();
            for task in tasks {
                outcomes.push(task.await.unwrap());
            }
            let winners = outcomes.iter().filter(|outcome| outcome.is_ok()).count();
            assert_eq!(winners, 1, "round {round}: {outcomes:?}");
            for outcome in outcomes.iter().filter_map(|outcome| outcome.as_ref().err()) {
                assert!(
                    matches!(outcome, ApprovalError::AlreadyDecided { .. }),
                    "round {round}: {outcome:?}"
                );
            }
            assert_eq!(counter.get(), before + 1, "round {round}");
            assert_eq!(state_of(&url, &id).await, "approved");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_request_is_settled_on_any_replica() {
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let plane_a = plane(&url, "a").await;
        let plane_b = plane(&url, "b").await;
        // Long enough for the request to be asked and listed as pending on a loaded machine
        // (300 ms was not, at a load of 20).
        let ttl = Duration::from_millis(1500);
        let registry_a = builder(&counter)
            .approval_store(plane_a.approval_store())
            .approval_ttl(ttl)
            .build()
            .unwrap();
        let registry_b = builder(&counter)
            .approval_store(plane_b.approval_store())
            .approval_ttl(ttl)
            .build()
            .unwrap();
        let id = ask(&registry_a, "c1").await;
        let pending = plane_b.approvals(&pending_only()).await.unwrap();
        assert_eq!(pending.len(), 1);
        tokio::time::sleep(ttl + Duration::from_millis(100)).await;
        // Listed as expired before anyone settles it.
        let pending = plane_b.approvals(&pending_only()).await.unwrap();
        assert!(pending.is_empty(), "{pending:?}");
        let all = plane_b.approvals(&ApprovalFilter::default()).await.unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].state, "expired");

        let run_b = registry_b.open_run("run-b", &subject());
        // Expired: the call is settled, and the model is told no one approved in time.
        let observation = run_b
            .decide(&id, Verdict::approve())
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert_eq!(observation.error_kind(), Some(ErrorKind::Denied));
        assert!(
            observation.error_text().unwrap().contains("in time"),
            "{observation:?}"
        );
        assert_eq!(state_of(&url, &id).await, "expired");
        let run_a = registry_a.open_run("run-a", &subject());
        let error = run_a.decide(&id, Verdict::approve()).await.unwrap_err();
        assert!(
            matches!(
                error,
                ApprovalError::AlreadyDecided {
                    state: ApprovalState::Expired,
                    ..
                }
            ),
            "{error:?}"
        );
        // An operator's verdict on it changes nothing.
        let outcome = plane_a
            .give_verdict(&id, &Verdict::approve().by("op"))
            .await
            .unwrap();
        assert!(
            matches!(outcome, VerdictOutcome::AlreadyDecided { .. }),
            "{outcome:?}"
        );
        assert_eq!(counter.get(), 0);

        // Expired but not settled by a run: a verdict settles it as expired.
        let id = ask(&registry_a, "c2").await;
        tokio::time::sleep(ttl + Duration::from_millis(100)).await;
        let outcome = plane_b
            .give_verdict(&id, &Verdict::approve().by("op"))
            .await
            .unwrap();
        assert_eq!(outcome, VerdictOutcome::Expired);
        assert_eq!(state_of(&url, &id).await, "expired");
        let error = run_a.decide(&id, Verdict::approve()).await.unwrap_err();
        assert!(
            matches!(error, ApprovalError::AlreadyDecided { .. }),
            "{error:?}"
        );
        assert_eq!(counter.get(), 0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_verdicts_are_given_once() {
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (plane_a, registry_a) = replica(&url, "a", &counter).await;
        let admin = crate::common::patient_plane(&url, "registry-admin").await;

        // A denial decides at once.
        let denied = ask(&registry_a, "c1").await;
        let outcome = admin
            .give_verdict(&denied, &Verdict::deny("not today").by("bob"))
            .await
            .unwrap();
        assert_eq!(outcome, VerdictOutcome::Given);
        assert_eq!(state_of(&url, &denied).await, "denied");
        assert_eq!(admin.pending_approval_by(&denied).await.unwrap(), None);
        let run = registry_a.open_run("run-a", &subject());
        let error = run.decide(&denied, Verdict::approve()).await.unwrap_err();
        assert!(
            matches!(
                &error,
                ApprovalError::AlreadyDecided {
                    state: ApprovalState::Denied { by: Some(by), reason },
                    ..
                } if by == "bob" && reason == "not today"
            ),
            "{error:?}"
        );
        let again = admin
            .give_verdict(&denied, &Verdict::approve().by("carol"))
            .await
            .unwrap();
        assert!(
            matches!(again, VerdictOutcome::AlreadyDecided { .. }),
            "{again:?}"
        );
        let record = admin
            .approvals(&ApprovalFilter::default())
            .await
            .unwrap()
            .into_iter()
            .find(|record| record.id == denied)
            .unwrap();
        assert_eq!(record.state, "denied");
        assert_eq!(record.decided_by.as_deref(), Some("bob"));
        assert_eq!(record.verdict.as_deref(), Some("deny"));

        // An approval waits for the replica whose client waits on it.
        let approved = ask(&registry_a, "c2").await;
        let outcome = admin
            .give_verdict(&approved, &Verdict::approve().by("alice"))
            .await
            .unwrap();
        assert_eq!(outcome, VerdictOutcome::Given);
        assert_eq!(
            plane_a
                .pending_approval_by(&approved)
                .await
                .unwrap()
                .as_deref(),
            Some("alice")
        );
        assert_eq!(state_of(&url, &approved).await, "pending");
        let second = admin
            .give_verdict(&approved, &Verdict::deny("second").by("mallory"))
            .await
            .unwrap();
        assert!(
            matches!(&second, VerdictOutcome::AlreadyDecided { state } if state.contains("alice")),
            "{second:?}"
        );
        assert_eq!(state_of(&url, &approved).await, "pending");
        assert_eq!(counter.get(), 0);
        let done = run
            .decide(&approved, Verdict::approve().by("alice"))
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(counter.get(), 1);
        assert_eq!(plane_a.pending_approval_by(&approved).await.unwrap(), None);

        // Concurrent verdicts from eight planes: one is given.
        let contested = ask(&registry_a, "c3").await;
        let mut planes = Vec::new();
        for index in 0..8 {
            planes.push(crate::common::patient_plane(&url, &format!("op{index}")).await);
        }
        let barrier = Arc::new(tokio::sync::Barrier::new(8));
        let tasks: Vec<_> = planes
            .into_iter()
            .enumerate()
            .map(|(index, plane)| {
                let id = contested.clone();
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    let verdict = if index % 2 == 0 {
                        Verdict::approve().by(format!("op{index}"))
                    } else {
                        Verdict::deny("no").by(format!("op{index}"))
                    };
                    barrier.wait().await;
                    plane.give_verdict(&id, &verdict).await.unwrap()
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.unwrap());
        }
        let given = outcomes
            .iter()
            .filter(|outcome| **outcome == VerdictOutcome::Given)
            .count();
        assert_eq!(given, 1, "{outcomes:?}");
        assert!(
            outcomes.iter().all(|outcome| matches!(
                outcome,
                VerdictOutcome::Given | VerdictOutcome::AlreadyDecided { .. }
            )),
            "{outcomes:?}"
        );

        // No such request.
        let unknown = admin
            .give_verdict("apr_nothing", &Verdict::approve().by("x"))
            .await
            .unwrap();
        assert_eq!(unknown, VerdictOutcome::Unknown);
        assert_eq!(counter.get(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pending_list_holds_pending_requests_only() {
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (plane_a, registry_a) = replica(&url, "a", &counter).await;
        let mut ids = Vec::new();
        for index in 0..4 {
            ids.push(ask(&registry_a, &format!("c{index}")).await);
        }
        let run = registry_a.open_run("run-a", &subject());
        let _ = run
            .decide(&ids[0], Verdict::approve())
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        let denied = run
            .decide(&ids[1], Verdict::deny("no"))
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert_eq!(denied.error_kind(), Some(ErrorKind::Denied));
        let pending = plane_a.approvals(&pending_only()).await.unwrap();
        let mut listed: Vec<&str> = pending.iter().map(|record| record.id.as_str()).collect();
        listed.sort_unstable();
        let mut expected = vec![ids[2].as_str(), ids[3].as_str()];
        expected.sort_unstable();
        assert_eq!(listed, expected);
        assert!(pending.iter().all(|record| record.state == "pending"));
        assert!(
            pending
                .iter()
                .all(|record| record.question.contains("deploy"))
        );
        assert_eq!(pending[0].origin, "a");
        let all = plane_a.approvals(&ApprovalFilter::default()).await.unwrap();
        assert_eq!(all.len(), 4);
        let limited = plane_a
            .approvals(&{
                let mut filter = ApprovalFilter::default();
                filter.limit = Some(1);
                filter
            })
            .await
            .unwrap();
        assert_eq!(limited.len(), 1);
        assert_eq!(limited[0].id, ids[3], "newest first");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_is_down_refuses_approvals_and_runs_nothing() {
    let (mut cluster, url) = own_cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_a, registry_a) = replica(&url, "a", &counter).await;
        let waiting = ask(&registry_a, "c0").await;
        cluster.stop().unwrap();

        let run = registry_a.open_run("run-a", &subject());
        let observation = run.call(call("c1", "deploy")).await;
        assert_eq!(
            observation.error_kind(),
            Some(ErrorKind::Unavailable),
            "{observation:?}"
        );
        assert!(observation.approval().is_none());
        let error = run.decide(&waiting, Verdict::approve()).await.unwrap_err();
        assert!(matches!(error, ApprovalError::Store(_)), "{error:?}");
        assert_eq!(counter.get(), 0);

        cluster.start_again().unwrap();
        // The pool reconnects: the request made before is still pending, and runs once.
        let done =
            crate::common::wait_until_async(Duration::from_secs(10), "the store is back", || {
                let run = registry_a.open_run("run-again", &subject());
                let id = waiting.clone();
                async move {
                    match run.decide(&id, Verdict::approve()).await {
                        Ok(done) => done.answer().is_some_and(|done| !done.is_error()),
                        Err(ApprovalError::Store(_)) => false,
                        Err(other) => panic!("{other:?}"),
                    }
                }
            })
            .await;
        let _ = done;
        assert_eq!(counter.get(), 1);
        assert_eq!(state_of(&url, &waiting).await, "approved");
    })
    .await;
}

/// A person of tenant `acme`, agent `release-bot`.
fn person(principal: &str) -> registry_core::Subject {
    subject().with_principal(principal)
}

/// A replica whose approvals are bounded: `max_pending` per principal, and `store`'s shares.
async fn bounded_replica(
    url: &str,
    counter: &Counter,
    max_pending: usize,
    store: impl FnOnce(registry_postgres::PgApprovalStore) -> registry_postgres::PgApprovalStore,
) -> (ControlPlane, Registry) {
    let plane = crate::common::patient_plane(url, "bounded").await;
    let registry = builder(counter)
        .approval_store(store(plane.approval_store()))
        .max_pending_approvals(max_pending)
        .build()
        .unwrap();
    (plane, registry)
}

async fn pending_rows(url: &str, principal: &str) -> i64 {
    sql(url)
        .await
        .query_one(
            "SELECT count(*) FROM registry_approvals WHERE state = 'pending' AND principal = $1",
            &[&principal],
        )
        .await
        .unwrap()
        .get(0)
}

/// Issue 45 (M2): 32 concurrent calls of one principal, on a multi-threaded runtime, leave
/// exactly the bound pending: the count and the insertion are one transaction under a lock
/// on the principal.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_of_one_principal_never_pass_the_pending_bound() {
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_plane, registry) = bounded_replica(&url, &counter, 4, |store| store).await;
        let registry = Arc::new(registry);
        for round in 0..3 {
            let principal = format!("token:alice-{round}");
            let barrier = Arc::new(tokio::sync::Barrier::new(32));
            let tasks: Vec<_> = (0..32)
                .map(|index| {
                    let run = registry.open_run(format!("run-{index}"), &person(&principal));
                    let barrier = barrier.clone();
                    tokio::spawn(async move {
                        barrier.wait().await;
                        run.call(call(&format!("c{index}"), "deploy"))
                            .await
                            .error_kind()
                    })
                })
                .collect();
            let mut kinds = Vec::new();
            for task in tasks {
                kinds.push(task.await.unwrap());
            }
            let asked = kinds
                .iter()
                .filter(|kind| **kind == Some(ErrorKind::ApprovalRequired))
                .count();
            assert_eq!(asked, 4, "round {round}: {kinds:?}");
            assert!(
                kinds.iter().all(|kind| matches!(
                    kind,
                    Some(ErrorKind::ApprovalRequired | ErrorKind::RateLimited)
                )),
                "round {round}: {kinds:?}"
            );
            assert_eq!(pending_rows(&url, &principal).await, 4, "round {round}");
        }
        assert_eq!(counter.get(), 0);
    })
    .await;
}

/// Issue 45 (N4): one principal filling its share (its bytes of arguments, then its pending
/// bound) does not stop another principal's approval request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_principal_filling_its_share_leaves_room_for_another() {
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_plane, registry) = bounded_replica(&url, &counter, 3, |store| {
            store.with_shares(100, 1_000).with_max_request_bytes(600)
        })
        .await;
        let sized = |id: &str, len: usize| {
            registry_core::ToolCall::new(id, "deploy", json!({"project": "p".repeat(len)}))
        };
        let alice = registry.open_run("run-alice", &person("token:alice"));
        let bob = registry.open_run("run-bob", &person("token:bob"));
        // Bytes: two requests of 400 fit alice's 1000, the third does not.
        for index in 0..2 {
            let asked = alice.call(sized(&format!("a{index}"), 400)).await;
            assert_eq!(
                asked.error_kind(),
                Some(ErrorKind::ApprovalRequired),
                "{asked:?}"
            );
        }
        let refused = alice.call(sized("a2", 400)).await;
        assert_eq!(
            refused.error_kind(),
            Some(ErrorKind::RateLimited),
            "{refused:?}"
        );
        assert!(
            refused
                .error_text()
                .unwrap()
                .contains("take all the room they may"),
            "{refused:?}"
        );
        let asked = bob.call(sized("b0", 400)).await;
        assert_eq!(
            asked.error_kind(),
            Some(ErrorKind::ApprovalRequired),
            "{asked:?}"
        );

        // Pending: alice's third small request fills her bound of 3; bob still asks.
        let asked = alice.call(call("a3", "deploy")).await;
        assert_eq!(
            asked.error_kind(),
            Some(ErrorKind::ApprovalRequired),
            "{asked:?}"
        );
        let refused = alice.call(call("a4", "deploy")).await;
        assert_eq!(
            refused.error_kind(),
            Some(ErrorKind::RateLimited),
            "{refused:?}"
        );
        assert!(
            refused
                .error_text()
                .unwrap()
                .contains("too many approvals are waiting"),
            "{refused:?}"
        );
        let asked = bob.call(call("b1", "deploy")).await;
        assert_eq!(
            asked.error_kind(),
            Some(ErrorKind::ApprovalRequired),
            "{asked:?}"
        );

        // One request larger than the store keeps: refused, and nothing stored.
        let large = bob.call(sized("b2", 700)).await;
        assert_eq!(large.error_kind(), Some(ErrorKind::Denied), "{large:?}");
        assert!(
            large.error_text().unwrap().contains("too large"),
            "{large:?}"
        );
        assert_eq!(pending_rows(&url, "token:alice").await, 3);
        assert_eq!(pending_rows(&url, "token:bob").await, 2);
        assert_eq!(counter.get(), 0);
    })
    .await;
}

/// Issue 45 (N7): a request denied (through a run, or by an operator) or expired keeps its
/// arguments' digest only, in the table; operators see "arguments discarded".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_denied_or_expired_keeps_only_the_digest_of_its_arguments() {
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let plane = crate::common::patient_plane(&url, "a").await;
        let ttl = Duration::from_millis(1500);
        let registry = builder(&counter)
            .approval_store(plane.approval_store())
            .approval_ttl(ttl)
            .build()
            .unwrap();
        let secret = "the-secret-project";
        let ask_secret = |id: &'static str| {
            let run = registry.open_run(format!("run-{id}"), &subject());
            async move {
                let observation = run
                    .call(registry_core::ToolCall::new(
                        id,
                        "deploy",
                        json!({ "project": secret }),
                    ))
                    .await;
                observation.approval().expect("a request").clone()
            }
        };
        let denied = ask_secret("c1").await;
        let by_operator = ask_secret("c2").await;
        let expired = ask_secret("c3").await;
        let digest = denied.argument_digest();

        let run = registry.open_run("run-a", &subject());
        let answer = run
            .decide(denied.id(), Verdict::deny("no"))
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert_eq!(answer.error_kind(), Some(ErrorKind::Denied));
        let outcome = plane
            .give_verdict(by_operator.id(), &Verdict::deny("freeze").by("ops"))
            .await
            .unwrap();
        assert_eq!(outcome, VerdictOutcome::Given);
        tokio::time::sleep(ttl + Duration::from_millis(100)).await;
        let answer = run
            .decide(expired.id(), Verdict::approve())
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert_eq!(answer.error_kind(), Some(ErrorKind::Denied));
        assert_eq!(counter.get(), 0);

        for id in [denied.id(), by_operator.id(), expired.id()] {
            let row = sql(&url)
                .await
                .query_one(
                    "SELECT state, arguments IS NULL, request::text, arguments_size,
                            arguments_hash, position($2::bytea in body)
                       FROM registry_approvals WHERE id = $1",
                    &[&id, &secret.as_bytes()],
                )
                .await
                .unwrap();
            let state: String = row.get(0);
            assert!(["denied", "expired"].contains(&state.as_str()), "{state}");
            assert!(row.get::<_, bool>(1), "{id}: arguments kept");
            let request: String = row.get(2);
            assert!(!request.contains(secret), "{request}");
            assert_eq!(row.get::<_, Option<i64>>(3), Some(digest.size() as i64));
            assert_eq!(row.get::<_, Option<String>>(4).as_deref(), digest.hash());
            assert_eq!(row.get::<_, i32>(5), 0, "the body holds no argument");
        }
        // What the core and operators read back: the digest in the arguments' place.
        let (request, _) = registry
            .approval_request(denied.id())
            .await
            .unwrap()
            .unwrap();
        assert!(request.arguments().is_null());
        assert_eq!(request.discarded(), Some(&digest));
        let records = plane.approvals(&ApprovalFilter::default()).await.unwrap();
        assert_eq!(records.len(), 3);
        for record in &records {
            assert!(!record.question.contains(secret), "{record:?}");
            assert!(
                record.question.contains("arguments discarded"),
                "{record:?}"
            );
        }
    })
    .await;
}

/// `stash`: needs approval, takes a `text` of at most 5 characters and answers it as it got
/// it.
fn stash(counter: &Counter) -> registry_core::DynamicTool {
    let counter = counter.clone();
    registry_core::DynamicTool::new("stash", "Stash a short text.")
        .public()
        .parameters(json!({
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 5}},
            "required": ["text"],
            "additionalProperties": false
        }))
        .needs_approval()
        .handler(
            move |_: &registry_core::ToolContext, args: serde_json::Value| {
                counter.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok::<_, String>(args["text"].clone())
            },
        )
}

/// Issue 45 (N10): an argument holding NUL and U+202E, approved through `PgApprovalStore`
/// on another replica, runs with exactly the characters the model sent (the database's
/// sanitizer, which writes NUL as `\u{0}`, would have made it 9 characters, past the
/// schema's `maxLength` of 5).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_arguments_come_back_byte_for_byte() {
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let mut registries = Vec::new();
        for name in ["a", "b"] {
            let plane = crate::common::patient_plane(&url, name).await;
            let registry = builder(&counter)
                .tool(stash(&counter))
                .approval_store(plane.approval_store())
                .build()
                .unwrap();
            registries.push((plane, registry));
        }
        let text = "a\u{0}\u{202e}b\u{0}";
        let run_a = registries[0].1.open_run("run-a", &subject());
        let asked = run_a
            .call(registry_core::ToolCall::new(
                "c1",
                "stash",
                json!({ "text": text }),
            ))
            .await;
        let id = asked.approval().expect("a request").id().to_owned();
        let run_b = registries[1].1.open_run("run-b", &subject());
        let done = run_b
            .decide(&id, Verdict::approve())
            .await
            .unwrap()
            .into_answer()
            .unwrap();
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(done.json(), &json!(text));
        assert_eq!(counter.get(), 1);
        let stored: Vec<u8> = sql(&url)
            .await
            .query_one(
                "SELECT arguments FROM registry_approvals WHERE id = $1",
                &[&id],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            stored,
            serde_json::to_vec(&json!({ "text": text })).unwrap()
        );
    })
    .await;
}

/// A row written before migration 16 (no `body`, the whole request in `request`) is still
/// read and decided; one whose arguments the migration dropped reads as discarded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_written_before_the_exact_columns_is_still_decided() {
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_plane, registry) = replica(&url, "a", &counter).await;
        let old = ask(&registry, "c1").await;
        let dropped = ask(&registry, "c2").await;
        let client = sql(&url).await;
        client
            .execute(
                "UPDATE registry_approvals
                    SET request = convert_from(body, 'UTF8')::jsonb
                                  || jsonb_build_object('arguments', convert_from(arguments, 'UTF8')::jsonb),
                        body = NULL, arguments = NULL, arguments_hash = NULL
                  WHERE id = $1",
                &[&old],
            )
            .await
            .unwrap();
        client
            .execute(
                "UPDATE registry_approvals
                    SET request = convert_from(body, 'UTF8')::jsonb, body = NULL,
                        arguments = NULL, arguments_hash = NULL
                  WHERE id = $1",
                &[&dropped],
            )
            .await
            .unwrap();
        let (request, _) = registry.approval_request(&dropped).await.unwrap().unwrap();
        assert!(request.arguments().is_null());
        assert!(request.discarded().is_some());
        let run = registry.open_run("run-old", &subject());
        let done = run.decide(&old, Verdict::approve()).await.unwrap().into_answer().unwrap();
        assert!(!done.is_error(), "{done:?}");
        assert_eq!(counter.get(), 1);
        // Without arguments, an approval runs nothing.
        let refused = run.decide(&dropped, Verdict::approve()).await.unwrap().into_answer().unwrap();
        assert_eq!(refused.error_kind(), Some(ErrorKind::InvalidArguments));
        assert_eq!(counter.get(), 1);
    })
    .await;
}

/// A wait on `registry`'s approval store for `id`, once its listener listens.
async fn watching(
    registry: &Registry,
    id: &str,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>> {
    use registry_core::server::RegistryExt;
    let started = std::time::Instant::now();
    loop {
        if let Some(wake) = registry.watch_approval(id) {
            return wake;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the listener never listened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verdict_on_one_replica_wakes_a_wait_on_another_at_once() {
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (plane_a, registry_a) = replica(&url, "a", &counter).await;
        let (_plane_b, registry_b) = replica(&url, "b", &counter).await;
        let approved = ask(&registry_a, "c1").await;
        let denied = ask(&registry_a, "c2").await;
        let untouched = ask(&registry_a, "c3").await;

        // Replica b waits on all three; an operator decides two of them through replica a.
        // The old wait polled every 250 ms; a wake is a notification, nothing polls.
        let mut latencies = Vec::new();
        for (id, verdict) in [
            (&approved, Verdict::approve().by("op")),
            (&denied, Verdict::deny("not today").by("op")),
        ] {
            let wake = watching(&registry_b, id).await;
            let other = watching(&registry_b, &untouched).await;
            let started = std::time::Instant::now();
            plane_a.give_verdict(id, &verdict).await.unwrap();
            tokio::time::timeout(Duration::from_secs(5), wake)
                .await
                .expect("the verdict woke the wait");
            latencies.push(started.elapsed());
            // A wait on another request is not woken.
            assert!(
                tokio::time::timeout(Duration::from_millis(300), other)
                    .await
                    .is_err()
            );
        }
        // Under the old poll interval (250 ms), measured from before the verdict's
        // transaction to the wake (a few milliseconds on a quiet host; the margin is for a
        // loaded one). The wait itself never polls: without the notification it never ends.
        assert!(
            latencies
                .iter()
                .all(|latency| *latency < Duration::from_millis(240)),
            "{latencies:?}"
        );
        eprintln!("woken after {latencies:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_listener_drops_every_wait_is_woken_and_questions_poll_until_it_is_back() {
    use registry_core::server::RegistryExt;
    let (_cluster, url) = cluster("approvals");
    bounded(LIMIT, async {
        let counter = Counter::default();
        let (_plane, registry) = replica(&url, "a", &counter).await;
        let id = ask(&registry, "c1").await;
        let wake = watching(&registry, &id).await;
        // The listener's connection is cut: nothing could tell the wait of a decision made
        // now, so it is woken (to look, then poll).
        let cut: i64 = sql(&url)
            .await
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                  WHERE query = 'LISTEN registry_approvals' AND pid <> pg_backend_pid()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(cut, 1, "one listener per plane");
        tokio::time::timeout(Duration::from_secs(5), wake)
            .await
            .expect("the dropped listener woke the wait");
        // Listening again, with backoff: waits are woken by notifications again.
        let wake = watching(&registry, &id).await;
        sql(&url)
            .await
            .execute(
                "UPDATE registry_approvals SET state = 'expired' WHERE id = $1",
                &[&id],
            )
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(5), wake)
            .await
            .expect("the listener is back");
        assert!(registry.watch_approval("apr_none").is_some());
    })
    .await;
}
