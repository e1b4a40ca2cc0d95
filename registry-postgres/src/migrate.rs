//! The embedded schema, applied once per database under an advisory lock.

use tokio_postgres::Client;

use crate::error::Error;

/// Every migration, in order: version `i + 1` is `MIGRATIONS[i]`.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_control_plane.sql"),
    include_str!("../migrations/0002_quota_time_never_goes_back.sql"),
    include_str!("../migrations/0003_tokens_in_chunks.sql"),
    include_str!("../migrations/0004_replaced_version.sql"),
    include_str!("../migrations/0005_tool_catalog.sql"),
    include_str!("../migrations/0006_prune.sql"),
    include_str!("../migrations/0007_principal.sql"),
    include_str!("../migrations/0008_version_fingerprint.sql"),
    include_str!("../migrations/0009_tasks.sql"),
    include_str!("../migrations/0010_task_questions.sql"),
    include_str!("../migrations/0011_upstream_acceptances.sql"),
    include_str!("../migrations/0012_policy_sets.sql"),
];

/// The key of the advisory lock held while migrating (any constant the application does not
/// use itself: "registry" in ASCII).
const LOCK_KEY: i64 = 0x7265_6769_7374_7279;

/// Applies the migrations the database lacks, each in its own transaction, while holding a
/// session advisory lock so that replicas starting together apply each exactly once.
pub(crate) async fn migrate(client: &mut Client) -> Result<(), Error> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(Error::db("taking the migration lock"))?;
    let result = apply(client).await;
    let unlock = client
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY])
        .await
        .map_err(Error::db("releasing the migration lock"));
    result.and(unlock.map(drop))
}

async fn apply(client: &mut Client) -> Result<(), Error> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS registry_migrations (
                 version    integer     PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(Error::db("creating registry_migrations"))?;
    let row = client
        .query_one(
            "SELECT COALESCE(max(version), 0) FROM registry_migrations",
            &[],
        )
        .await
        .map_err(Error::db("reading the schema version"))?;
    let current: i32 = row.get(0);
    let known = i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX);
    if current > known {
        return Err(Error::SchemaTooNew {
            found: current,
            known,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = i32::try_from(index + 1).unwrap_or(i32::MAX);
        let transaction = client
            .transaction()
            .await
            .map_err(Error::db("starting a migration"))?;
        transaction
            .batch_execute(sql)
            .await
            .map_err(|error| Error::Migration(format!("version {version}: {error}")))?;
        transaction
            .execute(
                "INSERT INTO registry_migrations (version) VALUES ($1)",
                &[&version],
            )
            .await
            .map_err(Error::db("recording a migration"))?;
        transaction
            .commit()
            .await
            .map_err(|error| Error::Migration(format!("version {version}: {error}")))?;
        tracing::info!(version, "control-plane schema migrated");
    }
    Ok(())
}
