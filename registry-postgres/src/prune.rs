//! Bounding the tables: deleting what is older than a retention, in small batches, by one
//! replica at a time (`registry-admin prune`, [`ControlPlaneBuilder::retention`]).
//!
//! [`ControlPlaneBuilder::retention`]: crate::ControlPlaneBuilder::retention

use std::sync::Weak;
use std::time::{Duration, SystemTime};

use crate::error::Error;
use crate::plane::{ControlPlane, Inner};

/// Rows deleted by one statement at most: each batch is a short transaction of its own, so
/// a prune never holds locks that stall the replicas' writes for long.
pub(crate) const PRUNE_BATCH: i64 = 1_000;

/// The session advisory lock held while pruning, so that one replica (or operator) prunes
/// at a time ("pruning" in ASCII, and a number).
const PRUNE_LOCK: i64 = 0x7072_756e_696e_0001;

/// The youngest records a prune deletes unless forced ([`ControlPlane::prune_forced`],
/// `registry-admin prune --force`): 7 days. A retention below it is refused at connect. The
/// audit rows that record prunes are kept this long even by a forced prune.
pub const PRUNE_FLOOR: Duration = Duration::from_secs(7 * 86_400);

/// The retention of a plane built without saying otherwise: 30 days. Every plane prunes
/// what is older, at connect and then every hour, unless built with
/// [`ControlPlaneBuilder::no_retention`](crate::ControlPlaneBuilder::no_retention) (or
/// given another with [`ControlPlaneBuilder::retention`](crate::ControlPlaneBuilder::retention)).
/// A plane whose role may not prune (a replica's) logs that once and leaves it to
/// `registry-admin prune`.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 86_400);

/// What a prune deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PruneReport {
    /// Rows of `audit_events` older than the cutoff.
    pub audit_events: u64,
    /// Revocations and restorations older than the cutoff that a later revocation or
    /// restoration of the same tool supersedes.
    pub changes: u64,
    /// Approval requests decided, or expired, before the cutoff.
    pub approvals: u64,
    /// Upstream offers of dead replicas: not reported within
    /// [`UPSTREAM_OFFER_TTL`](crate::UPSTREAM_OFFER_TTL), and before the cutoff.
    pub offers: u64,
    /// Ended tasks whose time to live ran out before the cutoff.
    pub tasks: u64,
    /// Policy sets pushed before the cutoff: never the newest, nor one a replica whose
    /// status is kept runs.
    pub policy_sets: u64,
    /// Policy status rows of dead replicas: last seen before the cutoff and not within
    /// [`POLICY_STATUS_TTL`](crate::POLICY_STATUS_TTL).
    pub policy_status: u64,
    /// Quota buckets last drawn from before the cutoff and full again by now: deleting one
    /// changes nothing, a bucket is created full.
    pub quota_buckets: u64,
}

/// One table a prune deletes from: `victims` selects the keys (`key`) of the rows to go, `$1`
/// the cutoff. Deleted in this order: a policy set is kept while a kept status runs it.
struct Target {
    what: &'static str,
    table: &'static str,
    key: &'static str,
    victims: String,
    /// A condition checked again on the row the `DELETE` locks (a row changed since the
    /// victims were selected is kept when it no longer holds): `""` or `" AND ..."`.
    recheck: &'static str,
}

/// A quota bucket full again by now (as `registry_take_tokens` refills it): deleting it
/// changes nothing, a missing bucket is created full.
const BUCKET_FULL: &str = " AND tokens_us \
     + GREATEST(0, (EXTRACT(EPOCH FROM (now() - at)) * 1000000)::bigint) >= capacity_us";

/// Every table a prune deletes from, and what it deletes there.
fn targets() -> [Target; 8] {
    let floor_secs = PRUNE_FLOOR.as_secs_f64();
    let offer_ttl = crate::upstreams::UPSTREAM_OFFER_TTL.as_secs_f64();
    let status_ttl = crate::policies::POLICY_STATUS_TTL.as_secs_f64();
    [
        Target {
            what: "pruning audit events",
            table: "audit_events",
            key: "id",
            // A prune's own record stays for the floor, forced or not.
            victims: format!(
                "SELECT id FROM audit_events
                  WHERE at < $1
                    AND NOT (kind = 'prune' AND at >= now() - make_interval(secs => {floor_secs}))
                  ORDER BY id"
            ),
            recheck: "",
        },
        Target {
            what: "pruning changes",
            table: "registry_changes",
            key: "seq",
            // A policy push is superseded by any later one: a replica reads the newest set.
            victims: "SELECT c.seq FROM registry_changes c
                       WHERE c.at < $1
                         AND ((c.kind IN ('revoke', 'restore')
                               AND EXISTS (SELECT 1 FROM registry_changes n
                                            WHERE n.tool = c.tool AND n.seq > c.seq
                                              AND n.kind IN ('revoke', 'restore')))
                           OR (c.kind = 'policies'
                               AND EXISTS (SELECT 1 FROM registry_changes n
                                            WHERE n.kind = 'policies' AND n.seq > c.seq)))
                       ORDER BY c.seq"
                .to_owned(),
            recheck: "",
        },
        Target {
            what: "pruning approval requests",
            table: "registry_approvals",
            key: "id",
            victims: "SELECT id FROM registry_approvals
                       WHERE (state <> 'pending' AND COALESCE(decided_at, expires_at) < $1)
                          OR (state = 'pending' AND expires_at < $1)"
                .to_owned(),
            recheck: "",
        },
        Target {
            what: "pruning dead replicas' upstream offers",
            table: "upstream_offers",
            key: "(replica, tool)",
            victims: format!(
                "SELECT replica, tool FROM upstream_offers
                  WHERE seen_at < $1 AND seen_at < now() - make_interval(secs => {offer_ttl})"
            ),
            recheck: "",
        },
        Target {
            what: "pruning ended tasks",
            table: "registry_tasks",
            key: "id",
            victims: "SELECT id FROM registry_tasks WHERE expires_at < $1".to_owned(),
            recheck: "",
        },
        Target {
            what: "pruning dead replicas' policy status",
            table: "registry_policy_status",
            key: "replica",
            victims: format!(
                "SELECT replica FROM registry_policy_status
                  WHERE seen_at < $1 AND seen_at < now() - make_interval(secs => {status_ttl})"
            ),
            recheck: "",
        },
        Target {
            what: "pruning policy sets",
            table: "registry_policy_sets",
            key: "generation",
            victims: "SELECT s.generation FROM registry_policy_sets s
                       WHERE s.at < $1
                         AND s.generation < (SELECT max(generation) FROM registry_policy_sets)
                         AND NOT EXISTS (SELECT 1 FROM registry_policy_status r
                                          WHERE r.running = s.generation)
                       ORDER BY s.generation"
                .to_owned(),
            recheck: "",
        },
        Target {
            what: "pruning quota buckets full again",
            table: "registry_quota_buckets",
            key: "key",
            victims: format!("SELECT key FROM registry_quota_buckets WHERE at < $1{BUCKET_FULL}"),
            // A draw between the selection and the delete keeps the bucket.
            recheck: BUCKET_FULL,
        },
    ]
}

impl ControlPlane {
    /// Deletes what is older than `older_than`, in batches of 1,000 rows:
    ///
    /// - `audit_events` recorded before the cutoff;
    /// - `registry_approvals` decided before the cutoff, or pending and expired before it
    ///   (nothing can decide them any more);
    /// - `upstream_offers` of dead replicas: reported before the cutoff and not refreshed
    ///   within [`UPSTREAM_OFFER_TTL`](crate::UPSTREAM_OFFER_TTL);
    /// - `registry_tasks` ended, whose time to live ran out before the cutoff;
    /// - `registry_policy_status` of dead replicas: last seen before the cutoff and not
    ///   within [`POLICY_STATUS_TTL`](crate::POLICY_STATUS_TTL) (a live replica's row stays,
    ///   however long ago it reported);
    /// - `registry_policy_sets` pushed before the cutoff, but the newest and any set a
    ///   replica whose status is kept runs;
    /// - `registry_quota_buckets` last drawn from before the cutoff and full again by now
    ///   (a missing bucket is created full: nothing changes);
    /// - `registry_changes`: a revocation or restoration recorded before the cutoff **only
    ///   when a later revocation or restoration of the same tool exists**. Replacements are
    ///   kept, and so is the newest revocation or restoration of every tool, whatever their
    ///   age: a replica applies changes in order from where it stopped (a new replica from
    ///   the start), and what is kept brings it to the same state as the whole log would,
    ///   however far behind it was. A policy push (kind `policies`) before the cutoff goes
    ///   when a later push exists: a replica reads the newest set. The table is bounded by
    ///   the tools and their replacements, not by time.
    ///
    /// `None` when another replica or operator is pruning at the moment (one at a time,
    /// under an advisory lock): nothing was done.
    ///
    /// Below [`PRUNE_FLOOR`] (7 days) it refuses ([`Error::BelowPruneFloor`]) and deletes
    /// nothing; [`prune_forced`](Self::prune_forced) goes below. Each prune first records
    /// itself in the audit trail (kind `prune`: who, the cutoff, whether it was forced), then
    /// deletes, then adds what it deleted to that row; a prune's row is never deleted while
    /// it is younger than the floor. Pruning is the admin role's: a replica's role is refused
    /// by PostgreSQL ([`Error::PermissionDenied`]).
    ///
    /// ```no_run
    /// # async fn prune(plane: registry_postgres::ControlPlane) -> Result<(), registry_postgres::Error> {
    /// use std::time::Duration;
    ///
    /// if let Some(report) = plane.prune(Duration::from_secs(90 * 86_400)).await? {
    ///     println!("{} audit events deleted", report.audit_events);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn prune(&self, older_than: Duration) -> Result<Option<PruneReport>, Error> {
        if older_than < PRUNE_FLOOR {
            return Err(Error::BelowPruneFloor {
                asked: format!("older than {older_than:?}"),
                floor: PRUNE_FLOOR,
            });
        }
        self.prune_at(cutoff(older_than), false, false).await
    }

    /// [`prune`](Self::prune) below the floor: deletes what is older than `older_than`,
    /// however young (`registry-admin prune --force`). Recorded in the audit trail as forced.
    pub async fn prune_forced(&self, older_than: Duration) -> Result<Option<PruneReport>, Error> {
        self.prune_at(cutoff(older_than), true, false).await
    }

    /// [`prune`](Self::prune) with the cutoff given as a time: refused when it is later than
    /// [`PRUNE_FLOOR`] ago.
    pub async fn prune_before(&self, cutoff: SystemTime) -> Result<Option<PruneReport>, Error> {
        if cutoff
            > SystemTime::now()
                .checked_sub(PRUNE_FLOOR)
                .unwrap_or(SystemTime::UNIX_EPOCH)
        {
            return Err(Error::BelowPruneFloor {
                asked: format!("before {}", since_epoch(cutoff)),
                floor: PRUNE_FLOOR,
            });
        }
        self.prune_at(cutoff, false, false).await
    }

    /// `quiet`: the retention's turn, which records nothing (and deletes nothing) when
    /// nothing is older than the cutoff, so that an idle fleet's trail is not one prune an
    /// hour.
    async fn prune_at(
        &self,
        cutoff: SystemTime,
        forced: bool,
        quiet: bool,
    ) -> Result<Option<PruneReport>, Error> {
        // A connection of its own: the session lock goes with it, whatever happens.
        let (client, connection) = self.dedicated().await?;
        let driver = tokio::spawn(connection);
        let result = self.prune_with(&client, cutoff, forced, quiet).await;
        drop(client);
        let _ = driver.await;
        result.map_err(|error| self.name_the_role(error))
    }

    async fn prune_with(
        &self,
        client: &tokio_postgres::Client,
        cutoff: SystemTime,
        forced: bool,
        quiet: bool,
    ) -> Result<Option<PruneReport>, Error> {
        let locked: bool = self
            .timed("taking the prune lock", async {
                client
                    .query_one("SELECT pg_try_advisory_lock($1)", &[&PRUNE_LOCK])
                    .await
                    .map_err(Error::db("taking the prune lock"))
            })
            .await?
            .get(0);
        if !locked {
            return Ok(None);
        }
        let targets = targets();
        if quiet {
            let due = targets
                .iter()
                .map(|target| format!("EXISTS ({})", target.victims))
                .collect::<Vec<_>>()
                .join(" OR ");
            let due: bool = self
                .timed("looking for what the retention deletes", async {
                    client
                        .query_one(&format!("SELECT {due}"), &[&cutoff])
                        .await
                        .map_err(Error::db("looking for what the retention deletes"))
                })
                .await?
                .get(0);
            if !due {
                let _ = client
                    .execute("SELECT pg_advisory_unlock($1)", &[&PRUNE_LOCK])
                    .await;
                return Ok(Some(PruneReport::default()));
            }
        }
        // The trace first: a prune that fails halfway is still recorded.
        let replica = crate::text::text(self.replica());
        let floor_secs = PRUNE_FLOOR.as_secs_f64();
        let audit_id: i64 = self
            .timed("recording the prune in the audit trail", async {
                client
                    .query_one(
                        "INSERT INTO audit_events (at, replica, kind, outcome, event)
                         VALUES (now(), $1, 'prune', 'started', jsonb_build_object(
                             'kind', 'prune', 'cutoff', $2::timestamptz, 'forced', $3::boolean,
                             'user', session_user::text, 'floor_secs', $4::float8))
                         RETURNING id",
                        &[&replica, &cutoff, &forced, &floor_secs],
                    )
                    .await
                    .map_err(Error::db("recording the prune in the audit trail"))
            })
            .await?
            .get(0);
        let mut deleted = [0; 8];
        for (count, target) in deleted.iter_mut().zip(&targets) {
            let statement = format!(
                "DELETE FROM {} WHERE {} IN ({} LIMIT $2){}",
                target.table, target.key, target.victims, target.recheck
            );
            *count = self
                .delete_batches(client, target.what, &statement, cutoff)
                .await?;
        }
        let [
            audit_events,
            changes,
            approvals,
            offers,
            tasks,
            policy_status,
            policy_sets,
            quota_buckets,
        ] = deleted;
        let report = PruneReport {
            audit_events,
            changes,
            approvals,
            offers,
            tasks,
            policy_sets,
            policy_status,
            quota_buckets,
        };
        let counts = serde_json::json!({
            "audit_events": report.audit_events,
            "changes": report.changes,
            "approvals": report.approvals,
            "offers": report.offers,
            "tasks": report.tasks,
            "policy_sets": report.policy_sets,
            "policy_status": report.policy_status,
            "quota_buckets": report.quota_buckets,
        });
        self.timed("recording what the prune deleted", async {
            client
                .execute(
                    "UPDATE audit_events SET outcome = 'pruned', event = event || $2
                      WHERE id = $1",
                    &[&audit_id, &counts],
                )
                .await
                .map_err(Error::db("recording what the prune deleted"))
        })
        .await?;
        // The lock goes with the connection anyway; this is for tidiness.
        let _ = client
            .execute("SELECT pg_advisory_unlock($1)", &[&PRUNE_LOCK])
            .await;
        Ok(Some(report))
    }

    /// Runs `statement` (`$1` the cutoff, `$2` the batch size) until it deletes less than a
    /// batch; how many rows it deleted in all.
    async fn delete_batches(
        &self,
        client: &tokio_postgres::Client,
        what: &'static str,
        statement: &str,
        cutoff: SystemTime,
    ) -> Result<u64, Error> {
        let mut total = 0;
        loop {
            let deleted = self
                .timed(what, async {
                    client
                        .execute(statement, &[&cutoff, &PRUNE_BATCH])
                        .await
                        .map_err(Error::db(what))
                })
                .await?;
            total += deleted;
            if deleted < PRUNE_BATCH.unsigned_abs() {
                return Ok(total);
            }
            tokio::task::yield_now().await;
        }
    }
}

/// The cutoff `older_than` before now (the epoch if that is before it).
fn cutoff(older_than: Duration) -> SystemTime {
    SystemTime::now()
        .checked_sub(older_than)
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// `time` as seconds since the epoch, for an error message.
fn since_epoch(time: SystemTime) -> String {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(since) => format!("{} s after the epoch", since.as_secs()),
        Err(_) => "a time before the epoch".to_owned(),
    }
}

/// The retention task of a plane (every plane has one unless built with
/// [`no_retention`](crate::ControlPlaneBuilder::no_retention)): prunes every `every`, until
/// the plane is dropped. Every replica runs one; the advisory lock makes them take turns. A
/// plane whose role may not delete from the tables (a replica's role) says so once and stops.
pub(crate) fn spawn_retention(plane: Weak<Inner>, retention: Duration, every: Duration) {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut allowed = false;
        loop {
            ticker.tick().await;
            let Some(inner) = plane.upgrade() else {
                return;
            };
            let plane = ControlPlane { inner };
            if !allowed {
                match plane.may_prune().await {
                    Ok(true) => allowed = true,
                    Ok(false) => {
                        tracing::warn!(
                            replica = ?plane.replica(),
                            user = ?plane.inner.config.get_user().unwrap_or_default(),
                            retention_days = retention.as_secs() / 86_400,
                            "this plane's role may not prune (pruning is the admin role's), so \
                             its retention does nothing: schedule `registry-admin prune \
                             --older-than 30d` as the admin role, or build the plane with \
                             no_retention() to say so"
                        );
                        return;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the retention could not check its role; trying again later");
                        continue;
                    }
                }
            }
            let cutoff = cutoff(retention);
            match plane.prune_at(cutoff, false, true).await {
                Ok(Some(report)) => tracing::info!(
                    audit_events = report.audit_events,
                    changes = report.changes,
                    approvals = report.approvals,
                    offers = report.offers,
                    tasks = report.tasks,
                    policy_sets = report.policy_sets,
                    policy_status = report.policy_status,
                    quota_buckets = report.quota_buckets,
                    "pruned what is older than the retention"
                ),
                Ok(None) => tracing::debug!("another replica is pruning"),
                Err(error) => tracing::warn!(%error, "pruning failed; trying again later"),
            }
        }
    });
}

impl ControlPlane {
    /// Whether this plane's role may delete from every table a prune deletes from.
    async fn may_prune(&self) -> Result<bool, Error> {
        let tables: Vec<&str> = targets().iter().map(|target| target.table).collect();
        self.timed("checking the role's privileges", async {
            let client = self.client().await?;
            let row = client
                .query_one(
                    "SELECT bool_and(has_table_privilege(t, 'DELETE')) FROM unnest($1::text[]) t",
                    &[&tables],
                )
                .await
                .map_err(Error::db("checking the role's privileges"))?;
            Ok(row.get::<_, Option<bool>>(0).unwrap_or(false))
        })
        .await
    }
}
