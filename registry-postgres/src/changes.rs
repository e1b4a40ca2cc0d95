//! Recording changes in `registry_changes`, in commit order, and reading them back.

use tokio_postgres::{Row, Transaction};

use crate::error::Error;
use crate::plane::ControlPlane;
use crate::records::{ChangeRecord, RecordedKind};
use crate::text;

/// The channel every replica listens on; the payload is the new change's sequence number.
pub(crate) const CHANNEL: &str = "registry_changes";

/// The advisory lock that orders changes: taken for the transaction that records one, so
/// that sequence numbers are assigned, and committed, one at a time.
const ORDER_LOCK: i64 = 0x7265_6763_6867_0001;

/// What to record.
pub(crate) struct NewChange<'a> {
    pub(crate) tool: &'a str,
    pub(crate) kind: RecordedKind,
    pub(crate) old_runs: Option<&'a str>,
    pub(crate) fingerprint: Option<String>,
    pub(crate) old_fingerprint: Option<String>,
    pub(crate) version: Option<String>,
    pub(crate) old_version: Option<String>,
    pub(crate) reason: &'a str,
    pub(crate) origin: &'a str,
    /// For a policy push: the generation of the set it pushed.
    pub(crate) policies: Option<i64>,
}

impl<'a> NewChange<'a> {
    /// A revocation or restoration: no replacement's fingerprints or old runs.
    pub(crate) fn plain(
        tool: &'a str,
        kind: RecordedKind,
        reason: &'a str,
        origin: &'a str,
    ) -> NewChange<'a> {
        NewChange {
            tool,
            kind,
            old_runs: None,
            fingerprint: None,
            old_fingerprint: None,
            version: None,
            old_version: None,
            reason,
            origin,
            policies: None,
        }
    }
}

impl ControlPlane {
    /// Records that `tool` is revoked on every replica, as `origin` (`registry-admin`, say);
    /// returns its sequence number. Replicas following the feed apply it within moments. A
    /// replica that follows with its registry should use [`ChangeFeed::revoke`], which also
    /// checks the name and waits until this replica applied it.
    ///
    /// [`ChangeFeed::revoke`]: crate::ChangeFeed::revoke
    pub async fn revoke(&self, tool: &str, reason: &str, origin: &str) -> Result<i64, Error> {
        self.record(NewChange::plain(tool, RecordedKind::Revoke, reason, origin))
            .await
    }

    /// Records that a revoked `tool` is back, for runs opened from now on; see
    /// [`revoke`](Self::revoke).
    pub async fn restore(&self, tool: &str, reason: &str, origin: &str) -> Result<i64, Error> {
        self.record(NewChange::plain(
            tool,
            RecordedKind::Restore,
            reason,
            origin,
        ))
        .await
    }

    /// Records one change, in order, and announces it; returns its sequence number.
    pub(crate) async fn record(&self, change: NewChange<'_>) -> Result<i64, Error> {
        self.timed("recording a change", async {
            let mut client = self.client().await?;
            let transaction = client
                .transaction()
                .await
                .map_err(Error::db("recording a change"))?;
            lock_order(&transaction).await?;
            let seq = insert_change(&transaction, &change).await?;
            transaction
                .commit()
                .await
                .map_err(Error::db("committing a change"))?;
            Ok(seq)
        })
        .await
    }

    /// The newest `limit` changes, oldest first.
    pub async fn newest_changes(&self, limit: i64) -> Result<Vec<ChangeRecord>, Error> {
        self.timed("reading changes", async {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!("SELECT * FROM ({SELECT_COLUMNS} ORDER BY seq DESC LIMIT $1) AS newest ORDER BY seq"),
                    &[&limit],
                )
                .await
                .map_err(Error::db("reading changes"))?;
            rows.iter().map(change_of).collect()
        })
        .await
    }

    /// The last change recorded for `tool`, if any.
    pub async fn latest_change_of(&self, tool: &str) -> Result<Option<ChangeRecord>, Error> {
        self.timed("reading changes", async {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    &format!("{SELECT_COLUMNS} WHERE tool = $1 ORDER BY seq DESC LIMIT 1"),
                    &[&text::text(tool)],
                )
                .await
                .map_err(Error::db("reading changes"))?;
            row.as_ref().map(change_of).transpose()
        })
        .await
    }

    /// The changes after sequence number `after`, oldest first, at most `limit`.
    pub async fn changes(&self, after: i64, limit: i64) -> Result<Vec<ChangeRecord>, Error> {
        self.timed("reading changes", async {
            let client = self.client().await?;
            let rows = client
                .query(SELECT_CHANGES, &[&after, &limit])
                .await
                .map_err(Error::db("reading changes"))?;
            rows.iter().map(change_of).collect()
        })
        .await
    }
}

impl ControlPlane {
    /// Records the tools `registry` has, as this replica's: what `registry-admin` checks a
    /// name against. Done by [`follow`](Self::follow).
    pub(crate) async fn record_tools(
        &self,
        registry: &registry_core::Registry,
    ) -> Result<(), Error> {
        let tools: Vec<registry_core::Tool> = registry.iter().collect();
        let names: Vec<String> = tools
            .iter()
            .map(|tool| text::owned(tool.name().to_owned()))
            .collect();
        let fingerprints: Vec<String> = tools
            .iter()
            .map(|tool| text::owned(tool.fingerprint().to_string()))
            .collect();
        let replica = text::text(self.replica());
        self.timed("recording this replica's tools", async {
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO registry_tools (replica, tool, fingerprint)
                     SELECT $1, tool, fingerprint FROM unnest($2::text[], $3::text[]) AS t(tool, fingerprint)
                     ON CONFLICT (replica, tool) DO UPDATE
                        SET fingerprint = EXCLUDED.fingerprint, seen_at = now()",
                    &[&replica, &names, &fingerprints],
                )
                .await
                .map_err(Error::db("recording this replica's tools"))?;
            Ok(())
        })
        .await
    }

    /// Every tool name some replica has recorded ([`follow`](Self::follow) records them), in
    /// name order, with how many replicas have it: what `registry-admin revoke` checks a name
    /// against.
    pub async fn known_tools(&self) -> Result<Vec<(String, i64)>, Error> {
        self.timed("reading the replicas' tools", async {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT tool, count(*) FROM registry_tools GROUP BY tool ORDER BY tool",
                    &[],
                )
                .await
                .map_err(Error::db("reading the replicas' tools"))?;
            Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
        })
        .await
    }
}

/// Takes the lock that orders changes, for the rest of `transaction`.
pub(crate) async fn lock_order(transaction: &Transaction<'_>) -> Result<(), Error> {
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&ORDER_LOCK])
        .await
        .map_err(Error::db("ordering a change"))?;
    Ok(())
}

/// Inserts `change` with the next sequence number and announces it, inside `transaction`
/// (which holds the order lock, [`lock_order`]); returns its sequence number.
pub(crate) async fn insert_change(
    transaction: &Transaction<'_>,
    change: &NewChange<'_>,
) -> Result<i64, Error> {
    let row = transaction
        .query_one(
            "INSERT INTO registry_changes
                 (seq, tool, kind, old_runs, fingerprint, old_fingerprint, reason, origin,
                  version, old_version, policies)
             SELECT COALESCE(max(seq), 0) + 1, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
               FROM registry_changes
             RETURNING seq",
            &[
                &text::text(change.tool),
                &change.kind.as_str(),
                &text::opt(change.old_runs),
                &change.fingerprint.as_deref().map(text::text),
                &change.old_fingerprint.as_deref().map(text::text),
                &text::text(change.reason),
                &text::text(change.origin),
                &change.version,
                &change.old_version,
                &change.policies,
            ],
        )
        .await
        .map_err(Error::db("recording a change"))?;
    let seq: i64 = row.get(0);
    transaction
        .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &seq.to_string()])
        .await
        .map_err(Error::db("announcing a change"))?;
    Ok(seq)
}

/// A change's columns, in the order [`change_of`] reads them.
macro_rules! select_columns {
    () => {
        "SELECT seq, at, tool, kind, old_runs, fingerprint, reason, origin, old_fingerprint,
                version, old_version, policies
           FROM registry_changes"
    };
}
const SELECT_COLUMNS: &str = select_columns!();

/// The changes after a sequence number (`$1`), oldest first, at most `$2`.
pub(crate) const SELECT_CHANGES: &str =
    concat!(select_columns!(), " WHERE seq > $1 ORDER BY seq LIMIT $2");

pub(crate) fn change_of(row: &Row) -> Result<ChangeRecord, Error> {
    let kind: String = row.get(3);
    Ok(ChangeRecord {
        seq: row.get(0),
        at: row.get(1),
        tool: row.get(2),
        kind: RecordedKind::parse(&kind).ok_or_else(|| Error::Corrupt {
            table: "registry_changes",
            detail: format!("unknown kind {kind:?}"),
        })?,
        old_runs: row.get(4),
        fingerprint: row.get(5),
        reason: row.get(6),
        origin: row.get(7),
        old_fingerprint: row.get(8),
        version: row.get(9),
        old_version: row.get(10),
        policies: row.get(11),
    })
}
