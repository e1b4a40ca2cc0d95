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
}

impl ControlPlane {
    /// Deletes what is older than `older_than`, in batches of 1,000 rows:
    ///
    /// - `audit_events` recorded before the cutoff;
    /// - `registry_approvals` decided before the cutoff, or pending and expired before it
    ///   (nothing can decide them any more);
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
        let cutoff = SystemTime::now()
            .checked_sub(older_than)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        self.prune_before(cutoff).await
    }

    /// [`prune`](Self::prune) with the cutoff given as a time.
    pub async fn prune_before(&self, cutoff: SystemTime) -> Result<Option<PruneReport>, Error> {
        // A connection of its own: the session lock goes with it, whatever happens.
        let (client, connection) = self.dedicated().await?;
        let driver = tokio::spawn(connection);
        let result = self.prune_with(&client, cutoff).await;
        drop(client);
        let _ = driver.await;
        result
    }

    async fn prune_with(
        &self,
        client: &tokio_postgres::Client,
        cutoff: SystemTime,
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
        let report = PruneReport {
            audit_events: self
                .delete_batches(
                    client,
                    "pruning audit events",
                    "DELETE FROM audit_events WHERE id IN (
                         SELECT id FROM audit_events WHERE at < $1 ORDER BY id LIMIT $2)",
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
        };
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
                    "pruned what is older than the retention"
                ),
                Ok(None) => tracing::debug!("another replica is pruning"),
                Err(error) => tracing::warn!(%error, "pruning failed; trying again later"),
            }
        }
    });
}
