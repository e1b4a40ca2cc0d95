//! Cedar policy sets across replicas: a set pushed once reaches every replica's validation
//! through the change feed, a set one refuses changes nothing there, and a set out of bounds
//! is never recorded. The validation here is a rule testable without Cedar: a file whose text
//! says `malformed` is refused.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{Counter, bounded, cluster, plane, wait_until, wait_until_async};
use registry_core::Registry;
use registry_postgres::{
    ChangeFeed, ControlPlane, Error, MAX_POLICY_FILE_BYTES, MAX_POLICY_FILES, RecordedKind,
    ReplicaPolicyStatus,
};

const LIMIT: Duration = Duration::from_secs(90);
const PROPAGATION: Duration = Duration::from_secs(5);

type Files = Vec<(String, String)>;

/// What one replica's validation accepted: the files it runs, and how many sets it was given.
#[derive(Clone, Default)]
struct Validator {
    running: Arc<Mutex<Files>>,
    given: Arc<Mutex<usize>>,
}

impl Validator {
    /// The hook: refuses a set with a file that says `malformed` (naming the file, with what
    /// the file says after the word, hostile bytes included, and `<NUL>` as a NUL: a file's
    /// text cannot hold one), otherwise runs it.
    fn hook(&self) -> impl Fn(&[(String, String)]) -> Result<(), String> + Send + Sync + 'static {
        let running = self.running.clone();
        let given = self.given.clone();
        move |files: &[(String, String)]| {
            *given.lock().unwrap() += 1;
            if let Some((name, text)) = files.iter().find(|(_, text)| text.contains("malformed")) {
                let after = text.split("malformed").nth(1).unwrap_or_default();
                return Err(format!(
                    "{name}: malformed policy{}",
                    after.replace("<NUL>", "\0")
                ));
            }
            *running.lock().unwrap() = files.to_vec();
            Ok(())
        }
    }

    fn running(&self) -> Files {
        self.running.lock().unwrap().clone()
    }

    fn given(&self) -> usize {
        *self.given.lock().unwrap()
    }
}

fn files(list: &[(&str, &str)]) -> Files {
    list.iter()
        .map(|(name, text)| ((*name).to_owned(), (*text).to_owned()))
        .collect()
}

async fn replica(url: &str, name: &str) -> (ControlPlane, Registry, ChangeFeed) {
    let plane = plane(url, name).await;
    let registry = crate::common::builder(&Counter::default()).build().unwrap();
    let feed = plane.follow(&registry).await.unwrap();
    (plane, registry, feed)
}

/// Waits until every replica named reported `generation`.
async fn reported(
    plane: &ControlPlane,
    replicas: &[&str],
    generation: i64,
) -> Vec<ReplicaPolicyStatus> {
    wait_until_async(
        PROPAGATION,
        &format!("{replicas:?} report generation {generation}"),
        || async {
            let status = plane.policy_status().await.unwrap();
            replicas.iter().all(|name| {
                status
                    .iter()
                    .any(|report| report.replica == *name && report.generation == generation)
            })
        },
    )
    .await;
    plane.policy_status().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_switch_to_a_pushed_set_and_keep_theirs_on_a_malformed_one() {
    let (_cluster, url) = cluster("policies");
    bounded(LIMIT, async {
        let (plane_a, _registry_a, feed_a) = replica(&url, "a").await;
        let (_plane_b, _registry_b, feed_b) = replica(&url, "b").await;
        let (a, b) = (Validator::default(), Validator::default());
        // Nothing pushed yet: nothing given; each replica says it is there (generation 0,
        // running none), so that a push waits for it (`registry-admin policy push --wait`).
        feed_a.on_policies(a.hook()).await.unwrap();
        feed_b.on_policies(b.hook()).await.unwrap();
        assert_eq!((a.given(), b.given()), (0, 0));
        let present = plane_a.policy_status().await.unwrap();
        assert_eq!(present.len(), 2, "{present:?}");
        for status in &present {
            assert_eq!(status.generation, 0, "{status:?}");
            assert_eq!(status.running, None, "{status:?}");
            assert!(status.live, "{status:?}");
        }
        assert!(plane_a.policies().await.unwrap().is_none());

        // Given in any order, kept and given in name order.
        let first = files(&[
            ("tools.cedar", "permit(principal, action, resource);"),
            (
                "base.cedar",
                "forbid(principal, action == Action::\"call\", resource);",
            ),
        ]);
        let generation = plane_a
            .push_policies(first.clone(), plane_a.replica())
            .await
            .unwrap();
        assert_eq!(generation, 1);
        let mut sorted = first.clone();
        sorted.sort();
        wait_until(PROPAGATION, "both replicas run the pushed set", || {
            a.running() == sorted && b.running() == sorted
        })
        .await;
        let status = reported(&plane_a, &["a", "b"], 1).await;
        assert_eq!(status.len(), 2, "{status:?}");
        for report in &status {
            assert!(report.applied && report.error.is_none(), "{report:?}");
            assert_eq!(report.running, Some(1));
        }
        assert_eq!(feed_a.policy_generation(), Some(1));
        assert_eq!(feed_b.policy_generation(), Some(1));
        let set = plane_a.policies().await.unwrap().unwrap();
        assert_eq!((set.generation, set.origin.as_str()), (1, "a"));
        assert_eq!(set.files, sorted);
        assert_eq!(set.digest, registry_postgres::policy_digest(&first));
        // The feed carried it as a change naming the generation.
        let change = plane_a.newest_changes(1).await.unwrap().pop().unwrap();
        assert_eq!(change.kind, RecordedKind::Policies);
        assert_eq!(change.policies, Some(1));
        assert_eq!(change.origin, "a");
        assert!(change.reason.contains(&set.digest), "{change:?}");
        // Revocations still flow beside it.
        feed_a.revoke("status", "incident").await.unwrap();

        // A malformed set: both refuse it, keep what they run, and say why, hostile bytes
        // and all (NUL on record as `\u{0}`).
        let bad = files(&[
            ("base.cedar", "permit(principal, action, resource);"),
            ("z.cedar", "malformed \u{202e}txt<NUL> \u{1b}[31m\nnext"),
        ]);
        let generation = plane_a
            .push_policies(bad, "registry-admin (tester)")
            .await
            .unwrap();
        assert_eq!(generation, 2);
        let status = reported(&plane_a, &["a", "b"], 2).await;
        for report in &status {
            assert!(!report.applied, "{report:?}");
            assert_eq!(report.running, Some(1), "{report:?}");
            assert_eq!(
                report.error.as_deref(),
                Some("z.cedar: malformed policy \u{202e}txt\\u{0} \u{1b}[31m\nnext"),
            );
        }
        assert_eq!(a.running(), sorted);
        assert_eq!(b.running(), sorted);
        assert_eq!(feed_a.policy_generation(), Some(1));
        assert_eq!(feed_b.policy_generation(), Some(1));
        assert_eq!((a.given(), b.given()), (2, 2));

        // A good set after it: both switch.
        let third = files(&[(
            "base.cedar",
            "permit(principal, action, resource) when { true };",
        )]);
        let generation = plane_a.push_policies(third.clone(), "a").await.unwrap();
        assert_eq!(generation, 3);
        wait_until(PROPAGATION, "both replicas run the third set", || {
            a.running() == third && b.running() == third
        })
        .await;
        let status = reported(&plane_a, &["a", "b"], 3).await;
        assert!(
            status
                .iter()
                .all(|report| report.applied && report.running == Some(3))
        );
        assert!(feed_a.is_live() && feed_b.is_live());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_installed_after_follow_receives_the_newest_set() {
    let (_cluster, url) = cluster("policies");
    bounded(LIMIT, async {
        let admin = plane(&url, "registry-admin").await;
        admin
            .push_policies(
                files(&[("old.cedar", "permit(principal, action, resource);")]),
                "op",
            )
            .await
            .unwrap();
        let newest = files(&[("new.cedar", "forbid(principal, action, resource);")]);
        assert_eq!(admin.push_policies(newest.clone(), "op").await.unwrap(), 2);

        // A feed without a hook ignores pushed sets: it applies the changes, reports nothing.
        let (_plane_c, _registry_c, feed_c) = replica(&url, "c").await;
        assert_eq!(feed_c.applied_seq(), 2);
        assert_eq!(feed_c.policy_generation(), None);
        assert!(admin.policy_status().await.unwrap().is_empty());

        // Installed later, the hook is given the newest set before `on_policies` returns.
        let c = Validator::default();
        feed_c.on_policies(c.hook()).await.unwrap();
        assert_eq!(c.running(), newest);
        assert_eq!(c.given(), 1);
        assert_eq!(feed_c.policy_generation(), Some(2));
        let status = admin.policy_status().await.unwrap();
        assert_eq!(status.len(), 1);
        assert_eq!((status[0].replica.as_str(), status[0].generation), ("c", 2));
        assert!(status[0].applied);

        // Another hook replaces it, and is given the newest set again.
        let again = Validator::default();
        feed_c.on_policies(again.hook()).await.unwrap();
        assert_eq!(again.running(), newest);
        assert_eq!(c.given(), 1);

        // A replica that refuses the newest set at start keeps its own (it runs none pushed).
        admin
            .push_policies(files(&[("x.cedar", "malformed")]), "op")
            .await
            .unwrap();
        let (_plane_d, _registry_d, feed_d) = replica(&url, "d").await;
        let d = Validator::default();
        feed_d.on_policies(d.hook()).await.unwrap();
        assert!(d.running().is_empty());
        assert_eq!(feed_d.policy_generation(), None);
        let status = admin.policy_status().await.unwrap();
        let report = status.iter().find(|report| report.replica == "d").unwrap();
        assert_eq!(
            (report.generation, report.applied, report.running),
            (3, false, None)
        );
        assert_eq!(report.error.as_deref(), Some("x.cedar: malformed policy"));
        // And c, following, refuses it too and keeps generation 2.
        wait_until(PROPAGATION, "c is given the third set", || {
            again.given() == 2
        })
        .await;
        assert_eq!(again.running(), newest);
        assert_eq!(feed_c.policy_generation(), Some(2));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_out_of_bounds_is_refused_and_changes_nothing() {
    let (_cluster, url) = cluster("policies");
    bounded(LIMIT, async {
        let (plane_a, _registry_a, feed_a) = replica(&url, "a").await;
        let a = Validator::default();
        feed_a.on_policies(a.hook()).await.unwrap();
        let good = files(&[("base.cedar", "permit(principal, action, resource);")]);
        assert_eq!(plane_a.push_policies(good.clone(), "a").await.unwrap(), 1);
        wait_until(PROPAGATION, "a runs the set", || a.running() == good).await;
        let changes = plane_a.newest_changes(100).await.unwrap().len();

        let big = "x".repeat(MAX_POLICY_FILE_BYTES + 1);
        let quarter = "x".repeat(MAX_POLICY_FILE_BYTES);
        let many: Files = (0..=MAX_POLICY_FILES)
            .map(|i| (format!("p{i:03}.cedar"), String::new()))
            .collect();
        let too_much: Files = (0..5)
            .map(|i| (format!("p{i}.cedar"), quarter.clone()))
            .collect();
        let cases: Vec<(Files, &str)> = vec![
            (Vec::new(), "the policy set has no file"),
            (
                files(&[("base.cedar", "permit\0(principal, action, resource);")]),
                "policy file \"base.cedar\": its text holds a NUL byte (at byte 6); remove it",
            ),
            (files(&[("ba\0se.cedar", "")]), "rename it"),
            (files(&[("base.txt", "")]), "ending `.cedar`"),
            (files(&[("../base.cedar", "")]), "rename it"),
            (files(&[("base policy.cedar", "")]), "rename it"),
            (
                files(&[(&format!("{}.cedar", "a".repeat(100)), "")]),
                "rename it",
            ),
            (many, "257 files, more than 256"),
            (
                vec![("big.cedar".to_owned(), big)],
                "split it into several files",
            ),
            (too_much, "more than 4194304 (4 MiB)"),
            (
                files(&[("a.cedar", ""), ("a.cedar", "")]),
                "two files have this name",
            ),
        ];
        for (files, expected) in cases {
            let count = files.len();
            let error = plane_a.push_policies(files, "a").await.unwrap_err();
            assert!(matches!(error, Error::InvalidPolicySet { .. }), "{error:?}");
            let message = error.to_string();
            assert!(message.contains(expected), "{count} files: {message}");
            assert!(message.ends_with("; nothing was pushed"), "{message}");
        }
        assert_eq!(plane_a.policies().await.unwrap().unwrap().generation, 1);
        assert_eq!(plane_a.newest_changes(100).await.unwrap().len(), changes);
        assert_eq!(a.given(), 1);

        // Old sets are history, until pruned: the newest N are kept.
        plane_a.push_policies(good.clone(), "a").await.unwrap();
        plane_a.push_policies(good.clone(), "a").await.unwrap();
        assert_eq!(plane_a.prune_policy_sets(2).await.unwrap(), 1);
        assert_eq!(plane_a.prune_policy_sets(0).await.unwrap(), 1);
        assert_eq!(plane_a.prune_policy_sets(1).await.unwrap(), 0);
        assert_eq!(plane_a.policies().await.unwrap().unwrap().generation, 3);
        // Numbering goes on after the newest.
        assert_eq!(plane_a.push_policies(good, "a").await.unwrap(), 4);
    })
    .await;
}
