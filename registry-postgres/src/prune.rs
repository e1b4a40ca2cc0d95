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
}

impl ControlPlane {
    /// Deletes what is older than `older_than`, in batches of 1,000 rows:
    ///
    /// - `audit_events` recorded before the cutoff;
    /// - `registry_approvals` decided before the cutoff, or pending and expired before it
    ///   (nothing can decide them any more);
    /// - `upstream_offers` of dead replicas: reported before the cutoff and not refreshed
    ///   within [`UPSTREAM_OFFER_TTL`](crate::UPSTREAM_OFFER_TTL);
    /// - `registry_changes`: a revocation or restoration recorded before the cutoff **only
    ///   when a later revocation or restoration of the same tool exists**. Replacements are
    ///   kept, and so is the newest revocation or restoration of every tool, whatever their
    ///   age: a replica applies changes in order from where it stopped (a new replica from
    ///   the start), and what is kept brings it to the same state as the whole log would,
    ///   however far behind it was. The table is bounded by the tools and their
    ///   replacements, not by time.
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
        self.prune_at(cutoff(older_than), false).await
    }

    /// [`prune`](Self::prune) below the floor: deletes what is older than `older_than`,
    /// however young (`registry-admin prune --force`). Recorded in the audit trail as forced.
    pub async fn prune_forced(&self, older_than: Duration) -> Result<Option<PruneReport>, Error> {
        self.prune_at(cutoff(older_than), true).await
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
        self.prune_at(cutoff, false).await
    }

    async fn prune_at(
        &self,
        cutoff: SystemTime,
        forced: bool,
    ) -> Result<Option<PruneReport>, Error> {
        // A connection of its own: the session lock goes with it, whatever happens.
        let (client, connection) = self.dedicated().await?;
        let driver = tokio::spawn(connection);
        let result = self.prune_with(&client, cutoff, forced).await;
        drop(client);
        let _ = driver.await;
        result.map_err(|error| self.name_the_role(error))
    }

    async fn prune_with(
        &self,
        client: &tokio_postgres::Client,
        cutoff: SystemTime,
        forced: bool,
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
        let report = PruneReport {
            audit_events: self
                .delete_batches(
                    client,
                    "pruning audit events",
                    // A prune's own record stays for the floor, forced or not.
                    &format!(
                        "DELETE FROM audit_events WHERE id IN (
                             SELECT id FROM audit_events
                              WHERE at < $1
                                AND NOT (kind = 'prune'
                                         AND at >= now() - make_interval(secs => {floor_secs}))
                              ORDER BY id LIMIT $2)"
                    ),
                    cutoff,
                )
                .await?,
            changes: self
                .delete_batches(
                    client,
                    "pruning changes",
                    "DELETE FROM registry_changes WHERE seq IN (
                         SELECT c.seq FROM registry_changes c
                          WHERE c.at < $1 AND c.kind IN ('revoke', 'restore')
                            AND EXISTS (SELECT 1 FROM registry_changes n
                                         WHERE n.tool = c.tool AND n.seq > c.seq
                                           AND n.kind IN ('revoke', 'restore'))
                          ORDER BY c.seq LIMIT $2)",
                    cutoff,
                )
                .await?,
            approvals: self
                .delete_batches(
                    client,
                    "pruning approval requests",
                    "DELETE FROM registry_approvals WHERE id IN (
                         SELECT id FROM registry_approvals
                          WHERE (state <> 'pending' AND COALESCE(decided_at, expires_at) < $1)
                             OR (state = 'pending' AND expires_at < $1)
                          LIMIT $2)",
                    cutoff,
                )
                .await?,
            offers: self
                .delete_batches(
                    client,
                    "pruning dead replicas' upstream offers",
                    &format!(
                        "DELETE FROM upstream_offers WHERE (replica, tool) IN (
                             SELECT replica, tool FROM upstream_offers
                              WHERE seen_at < $1
                                AND seen_at < now() - make_interval(secs => {})
                              LIMIT $2)",
                        crate::upstreams::UPSTREAM_OFFER_TTL.as_secs_f64()
                    ),
                    cutoff,
                )
                .await?,
        };
        let counts = serde_json::json!({
            "audit_events": report.audit_events,
            "changes": report.changes,
            "approvals": report.approvals,
            "offers": report.offers,
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

/// The retention task of a plane built with a retention: prunes every `every`, until the
/// plane is dropped. Every replica runs one; the advisory lock makes them take turns.
pub(crate) fn spawn_retention(plane: Weak<Inner>, retention: Duration, every: Duration) {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let Some(inner) = plane.upgrade() else {
                return;
            };
            let plane = ControlPlane { inner };
            match plane.prune(retention).await {
                Ok(Some(report)) => tracing::info!(
                    audit_events = report.audit_events,
                    changes = report.changes,
                    approvals = report.approvals,
                    offers = report.offers,
                    "pruned what is older than the retention"
                ),
                Ok(None) => tracing::debug!("another replica is pruning"),
                Err(error) => tracing::warn!(%error, "pruning failed; trying again later"),
            }
        }
    });
}
