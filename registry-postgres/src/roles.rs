//! The two roles a deployment connects with, and exactly what each may do: the database is
//! not the authority a replica's credential would otherwise make it.
//!
//! A **replica** (`<database>_replica`) does a replica's work: it follows the change feed and
//! records its own revocations, restorations and replacements; it keeps approval requests
//! and their decisions, quota buckets and tasks; it writes the audit trail (and cannot read
//! it back or delete it); it reports the upstream tools it withholds and reads the
//! acceptances; it reads the policy sets and reports what it did with them. It cannot push a
//! policy set, accept an upstream tool, give an operator's verdict or prune: PostgreSQL
//! refuses each (permission denied), and [`Error::PermissionDenied`] says so.
//!
//! The **admin** (`<database>_admin`, for `registry-admin`) may read and write every table.
//! Neither owns the tables: the schema is changed by the user that applies the migrations
//! (the database's owner).

use tokio_postgres::GenericClient;

use crate::error::Error;

/// What each role may do, table by table: (table, replica, admin). The replica's are every
/// statement of this crate a replica runs, and nothing else. A table created by a later
/// migration needs its row here (a test checks that every table of the schema has grants).
const GRANTS: &[(&str, &str, &str)] = &[
    // Schema bookkeeping: the migrating user's alone to change.
    ("registry_migrations", "SELECT", "SELECT"),
    ("registry_roles", "SELECT", "SELECT"),
    // The change feed reads; `ChangeFeed::revoke`, `restore` and `replace` record.
    ("registry_changes", "SELECT, INSERT", ADMIN),
    // `ChangeFeed::follow` records this replica's tools.
    ("registry_tools", "SELECT, INSERT, UPDATE", ADMIN),
    // Requests and their decisions (a request that will not run loses its `arguments`);
    // the operators' verdict columns are the admin's.
    (
        "registry_approvals",
        "SELECT, INSERT, UPDATE (state, decision, decided_at, arguments)",
        ADMIN,
    ),
    ("registry_quota_buckets", "SELECT, INSERT, UPDATE", ADMIN),
    // Written, never read back nor deleted: the trail is the operators'.
    ("audit_events", "INSERT", ADMIN),
    // Started, renewed, failed, ended and forgotten by any replica.
    ("registry_tasks", "SELECT, INSERT, UPDATE, DELETE", ADMIN),
    // A replica replaces its own report whole.
    ("upstream_offers", "SELECT, INSERT, UPDATE, DELETE", ADMIN),
    ("upstream_acceptances", "SELECT", ADMIN),
    ("registry_policy_sets", "SELECT", ADMIN),
    ("registry_policy_status", "SELECT, INSERT, UPDATE", ADMIN),
];

/// What the admin role may do on the tables of records.
const ADMIN: &str = "SELECT, INSERT, UPDATE, DELETE";

/// The sequences behind `bigserial` columns, which an `INSERT` by the admin draws from.
const ADMIN_SEQUENCES: &[&str] = &["upstream_acceptances_seq_seq"];

/// The names of the two roles of a database: see `registry-admin init-roles`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Roles {
    /// The role replicas connect with (as members of it).
    pub replica: String,
    /// The role `registry-admin` connects with.
    pub admin: String,
}

impl Roles {
    /// The names derived from the database's: `<database>_replica` and `<database>_admin`.
    /// PostgreSQL's names are at most 63 bytes: a database name longer than 57 bytes needs
    /// names of its own ([`Roles::named`]).
    ///
    /// ```
    /// let roles = registry_postgres::Roles::derived("registry").unwrap();
    /// assert_eq!(roles.replica, "registry_replica");
    /// assert_eq!(roles.admin, "registry_admin");
    /// ```
    pub fn derived(database: &str) -> Result<Roles, Error> {
        Roles::named(format!("{database}_replica"), format!("{database}_admin"))
    }

    /// Roles of these names, checked: not empty, at most 63 bytes, no NUL, not the same
    /// name twice, not a name PostgreSQL reserves (`pg_…`, `public`).
    pub fn named(replica: impl Into<String>, admin: impl Into<String>) -> Result<Roles, Error> {
        let roles = Roles {
            replica: replica.into(),
            admin: admin.into(),
        };
        for (what, name) in [("replica", &roles.replica), ("admin", &roles.admin)] {
            let problem = if name.is_empty() {
                Some("is empty")
            } else if name.len() > 63 {
                Some("is longer than PostgreSQL's 63 bytes")
            } else if name.contains('\0') {
                Some("holds a NUL character")
            } else if name.starts_with("pg_") || name == "public" {
                Some("is reserved by PostgreSQL")
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(Error::Roles(format!(
                    "the {what} role's name {:?} {problem}; name the roles with \
                     `registry-admin init-roles --replica-role NAME --admin-role NAME`",
                    crate::text::text(name)
                )));
            }
        }
        if roles.replica == roles.admin {
            return Err(Error::Roles(format!(
                "the replica and admin roles are both named {:?}; they must differ",
                crate::text::text(&roles.replica)
            )));
        }
        Ok(roles)
    }
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The roles granted to.
    pub(crate) roles: Roles,
    /// The roles it created (NOLOGIN).
    pub(crate) created: Vec<String>,
}

/// Records `names` (or, if none is given, keeps the names recorded, or derives them from
/// the database's), creates the roles that do not exist when this user may create roles,
/// and grants each exactly its privileges. Roles that were recorded before under other names
/// lose their grants. Called under the migration lock, in a transaction.
///
/// `Ok(None)` when a role does not exist and this user cannot create it: nothing is granted,
/// and a warning says how to create them.
pub(crate) async fn apply(
    client: &impl GenericClient,
    names: Option<&Roles>,
) -> Result<Option<Applied>, Error> {
    let recorded = recorded(client).await?;
    let roles = match (names, &recorded) {
        (Some(names), _) => names.clone(),
        (None, Some(recorded)) => recorded.clone(),
        (None, None) => {
            let database: String = client
                .query_one("SELECT current_database()", &[])
                .await
                .map_err(Error::db("reading the database's name"))?
                .get(0);
            Roles::derived(&database)?
        }
    };
    let row = client
        .query_one(
            "SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user",
            &[],
        )
        .await
        .map_err(Error::db("reading what this user may do"))?;
    let may_create: bool = row.get(0);
    let mut created = Vec::new();
    for name in [&roles.replica, &roles.admin] {
        let exists = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)",
                &[name],
            )
            .await
            .map_err(Error::db("reading the roles"))?
            .get::<_, bool>(0);
        if exists {
            continue;
        }
        if !may_create {
            if names.is_some() {
                return Err(Error::Roles(format!(
                    "the role {name:?} does not exist and this user may not create roles; \
                     run `registry-admin init-roles` as a user with CREATEROLE"
                )));
            }
            tracing::warn!(
                role = %name,
                "the control plane's roles were not created: this user may not create roles; \
                 run `registry-admin init-roles` as a user with CREATEROLE"
            );
            return Ok(None);
        }
        client
            .batch_execute(&format!("CREATE ROLE {} NOLOGIN", ident(name)))
            .await
            .map_err(Error::db(format!("creating the role {name:?}")))?;
        created.push(name.clone());
    }
    if let Some(old) = &recorded {
        for (old, new) in [(&old.replica, &roles.replica), (&old.admin, &roles.admin)] {
            if old != new && role_exists(client, old).await? {
                revoke_all(client, old).await?;
            }
        }
    }
    // Whatever was granted before is taken back first: a role gets exactly these.
    revoke_all(client, &roles.replica).await?;
    revoke_all(client, &roles.admin).await?;
    let schema: String = client
        .query_one("SELECT current_schema()", &[])
        .await
        .map_err(Error::db("reading the schema"))?
        .get(0);
    let mut grants = format!(
        "GRANT USAGE ON SCHEMA {schema} TO {replica}, {admin};\n",
        schema = ident(&schema),
        replica = ident(&roles.replica),
        admin = ident(&roles.admin),
    );
    for (table, replica, admin) in GRANTS {
        grants.push_str(&format!(
            "GRANT {replica} ON {table} TO {};\nGRANT {admin} ON {table} TO {};\n",
            ident(&roles.replica),
            ident(&roles.admin),
        ));
    }
    for sequence in ADMIN_SEQUENCES {
        grants.push_str(&format!(
            "GRANT USAGE, SELECT ON SEQUENCE {sequence} TO {};\n",
            ident(&roles.admin)
        ));
    }
    client
        .batch_execute(&grants)
        .await
        .map_err(Error::db("granting the roles their privileges"))?;
    client
        .execute(
            "INSERT INTO registry_roles (kind, role) VALUES ('replica', $1), ('admin', $2)
             ON CONFLICT (kind) DO UPDATE SET role = EXCLUDED.role",
            &[&roles.replica, &roles.admin],
        )
        .await
        .map_err(Error::db("recording the roles"))?;
    Ok(Some(Applied { roles, created }))
}

/// The names recorded in `registry_roles`, if both are.
pub(crate) async fn recorded(client: &impl GenericClient) -> Result<Option<Roles>, Error> {
    let rows = client
        .query("SELECT kind, role FROM registry_roles", &[])
        .await
        .map_err(Error::db("reading the control plane's roles"))?;
    let find = |kind: &str| {
        rows.iter()
            .find(|row| row.get::<_, &str>(0) == kind)
            .map(|row| row.get::<_, String>(1))
    };
    Ok(match (find("replica"), find("admin")) {
        (Some(replica), Some(admin)) => Some(Roles { replica, admin }),
        _ => None,
    })
}

async fn role_exists(client: &impl GenericClient, name: &str) -> Result<bool, Error> {
    Ok(client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)",
            &[&name],
        )
        .await
        .map_err(Error::db("reading the roles"))?
        .get(0))
}

/// Takes back from `role` every privilege on the control plane's tables and sequences.
async fn revoke_all(client: &impl GenericClient, role: &str) -> Result<(), Error> {
    let mut revokes = String::new();
    for (table, _, _) in GRANTS {
        revokes.push_str(&format!("REVOKE ALL ON {table} FROM {};\n", ident(role)));
    }
    for sequence in ADMIN_SEQUENCES {
        revokes.push_str(&format!(
            "REVOKE ALL ON SEQUENCE {sequence} FROM {};\n",
            ident(role)
        ));
    }
    client
        .batch_execute(&revokes)
        .await
        .map_err(Error::db(format!("taking back the privileges of {role:?}")))
}

/// `name` as a quoted SQL identifier (`"` doubled).
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl crate::ControlPlane {
    /// Creates the control plane's two roles if they do not exist (NOLOGIN; the user needs
    /// CREATEROLE), records their names (`names`, or those recorded before, or the names
    /// derived from the database's: [`Roles::derived`]) and grants each exactly its
    /// privileges, taking back those of roles recorded before under other names. What
    /// `registry-admin init-roles` does; migrations apply the same grants to the roles
    /// recorded, so a table created later gets its grants too. Returns the roles, and which
    /// of them it created.
    ///
    /// A deployment then makes its login roles members: `GRANT <database>_replica TO api_1`
    /// for each replica's user, `GRANT <database>_admin TO ops` for registry-admin's.
    ///
    /// ```no_run
    /// # async fn roles(plane: registry_postgres::ControlPlane) -> Result<(), registry_postgres::Error> {
    /// let (roles, created) = plane.init_roles(None).await?;
    /// println!("replicas: {}, registry-admin: {} (created: {created:?})", roles.replica, roles.admin);
    /// # Ok(()) }
    /// ```
    pub async fn init_roles(&self, names: Option<&Roles>) -> Result<(Roles, Vec<String>), Error> {
        self.timed("creating the roles", async {
            let mut client = self.client().await?;
            let transaction = client
                .transaction()
                .await
                .map_err(Error::db("creating the roles"))?;
            // Under the migration lock: two of these at once, or one beside a migration,
            // would grant in turn rather than at once.
            transaction
                .execute(
                    "SELECT pg_advisory_xact_lock($1)",
                    &[&crate::migrate::LOCK_KEY],
                )
                .await
                .map_err(Error::db("taking the migration lock"))?;
            let applied = apply(&*transaction, names).await?.ok_or_else(|| {
                Error::Roles(
                    "the roles do not exist and this user may not create roles; \
                     connect as a user with CREATEROLE (the database's owner, say)"
                        .to_owned(),
                )
            })?;
            transaction
                .commit()
                .await
                .map_err(Error::db("committing the roles"))?;
            Ok((applied.roles, applied.created))
        })
        .await
    }

    /// The roles recorded for this database, if any ([`init_roles`](Self::init_roles)).
    pub async fn roles(&self) -> Result<Option<Roles>, Error> {
        self.timed("reading the roles", async {
            let client = self.client().await?;
            recorded(&**client).await
        })
        .await
    }
}
