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
    include_str!("../migrations/0013_roles.sql"),
    include_str!("../migrations/0014_policy_status_seen.sql"),
    include_str!("../migrations/0015_approval_notify.sql"),
    include_str!("../migrations/0016_approval_arguments_bytes.sql"),
];

/// The key of the advisory lock held while migrating (any constant the application does not
/// use itself: "registry" in ASCII).
pub(crate) const LOCK_KEY: i64 = 0x7265_6769_7374_7279;

/// Applies the migrations the database lacks, each in its own transaction, while holding a
/// session advisory lock so that replicas starting together apply each exactly once.
///
/// A schema already current is only read: a replica's role may read it, not change it (nor
/// take part in creating `registry_migrations`). After applying migrations, the roles'
/// grants are applied again ([`crate::roles`]), so that a table a migration created gets
/// them too.
pub(crate) async fn migrate(client: &mut Client) -> Result<(), Error> {
    let known = known();
    let found = current_version(client).await?;
    match found {
        Some(current) if current == known => return Ok(()),
        Some(found) if found > known => return Err(Error::SchemaTooNew { found, known }),
        _ => {}
    }
    migrate_locked(client).await.map_err(|error| match error {
        // A replica's role reaching a schema older than its program's.
        Error::PermissionDenied { detail, .. } => Error::Migration(format!(
            "the database's schema is at version {}, this program needs version {known}, \
                 and the role connecting may not apply it ({detail}); connect once as the \
                 database's owner (`registry-admin --database OWNER_URL init-roles`) before \
                 the replicas",
            found.unwrap_or(0)
        )),
        other => other,
    })
}

/// [`migrate`] under the migration lock.
async fn migrate_locked(client: &mut Client) -> Result<(), Error> {
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

/// How many migrations this program knows: the schema version it needs.
fn known() -> i32 {
    i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX)
}

/// The schema's version, or `None` when the database has no schema yet.
async fn current_version(client: &Client) -> Result<Option<i32>, Error> {
    let exists: bool = client
        .query_one("SELECT to_regclass('registry_migrations') IS NOT NULL", &[])
        .await
        .map_err(Error::db("reading the schema version"))?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let row = client
        .query_one(
            "SELECT COALESCE(max(version), 0) FROM registry_migrations",
            &[],
        )
        .await
        .map_err(Error::db("reading the schema version"))?;
    Ok(Some(row.get(0)))
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
    let known = known();
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
    if current < known {
        let transaction = client
            .transaction()
            .await
            .map_err(Error::db("starting to grant the roles"))?;
        if let Some(applied) = crate::roles::apply(&transaction, None).await? {
            tracing::info!(
                replica = %applied.roles.replica,
                admin = %applied.roles.admin,
                created = ?applied.created,
                "control-plane roles granted"
            );
        }
        transaction
            .commit()
            .await
            .map_err(Error::db("committing the roles' grants"))?;
    }
    Ok(())
}
