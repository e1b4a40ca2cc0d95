//! What can go wrong talking to the control plane.

/// An error of the control plane. Each says what failed and, where it can, what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A verdict an operator cannot give (no one named, or edited arguments).
    #[error("{0}")]
    InvalidVerdict(String),
    /// The database URL could not be parsed.
    #[error(
        "the database URL is not valid ({0}); write it as postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
    )]
    Url(String),
    /// The database could not be reached or answered with an error.
    #[error("PostgreSQL: {context}: {}", with_causes(source))]
    Database {
        /// What was being done.
        context: String,
        /// The driver's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// TLS to the database could not be set up as the URL's `sslmode` asks (a CA file that
    /// cannot be read, none given for `verify-ca`/`verify-full`).
    #[error("TLS to PostgreSQL: {0}")]
    Tls(String),
    /// No connection could be had from the pool in time.
    #[error("PostgreSQL: no connection ({0}); is the database up and reachable?")]
    Pool(String),
    /// The database did not answer in time.
    #[error("PostgreSQL did not answer within {0:?} ({1})")]
    Timeout(std::time::Duration, &'static str),
    /// The schema could not be applied.
    #[error("the control plane's schema could not be applied: {0}")]
    Migration(String),
    /// The database has a newer schema than this program knows.
    #[error(
        "the database's control-plane schema is at version {found}, newer than this program's {known}; upgrade this program"
    )]
    SchemaTooNew {
        /// The version found.
        found: i32,
        /// The newest version this program knows.
        known: i32,
    },
    /// The registry refused a change (an unknown tool, a tool not revoked, an invalid
    /// replacement); nothing was recorded.
    #[error(transparent)]
    Registry(#[from] registry_core::RegistryError),
    /// A replacement was applied here, but could not be recorded for the other replicas.
    #[error(
        "the tool {tool:?} was replaced on this replica, but the change could not be recorded for the others ({source}); record it again once the database is back"
    )]
    NotRecorded {
        /// The tool.
        tool: String,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// A change was recorded, but this replica's feed did not apply it in time (its
    /// connection to the database is down); it will once it reconnects.
    #[error(
        "change #{seq} was recorded, but this replica has not applied it yet: its change feed is not connected ({why})"
    )]
    NotApplied {
        /// The change's sequence number.
        seq: i64,
        /// Why.
        why: String,
    },
    /// A policy set that cannot be pushed (no file, too many, a bad name, a text too large
    /// or with a NUL byte): nothing was recorded.
    #[error("{}{problem}; nothing was pushed", file.as_ref().map(|file| format!("policy file {file:?}: ")).unwrap_or_default())]
    InvalidPolicySet {
        /// The file at fault, if one is.
        file: Option<String>,
        /// What is wrong, and how to fix it.
        problem: String,
    },
    /// PostgreSQL refused a statement for want of a privilege: the role this plane connects
    /// as may not do it. A replica's role (see [`ControlPlane::init_roles`]) may not push a
    /// policy set, accept an upstream tool, give an operator's verdict or prune; those are
    /// the admin role's, with `registry-admin`'s URL.
    ///
    /// [`ControlPlane::init_roles`]: crate::ControlPlane::init_roles
    #[error(
        "PostgreSQL refused {context} to the role {user:?}: {detail}. It is not this role's to do: \
         pushing a policy set, accepting an upstream tool, a verdict and pruning are the admin \
         role's (run them with registry-admin and a URL whose user is a member of the admin role); \
         a role with no grants at all is not yet a member of either (see `registry-admin init-roles`)"
    )]
    PermissionDenied {
        /// What was being done.
        context: String,
        /// The role the plane connected as.
        user: String,
        /// PostgreSQL's message (`permission denied for table registry_policy_sets`).
        detail: String,
    },
    /// A prune asked to delete records younger than [`PRUNE_FLOOR`](crate::PRUNE_FLOOR):
    /// nothing was deleted.
    #[error(
        "refusing to prune records younger than the floor of {} days: {asked} was asked; \
         prune older records, or pass --force (`ControlPlane::prune_forced`) to delete them anyway",
        floor.as_secs() / 86_400
    )]
    BelowPruneFloor {
        /// What was asked, as said (`--older-than 2h`, or the cutoff).
        asked: String,
        /// The floor.
        floor: std::time::Duration,
    },
    /// An upstream acceptance that cannot be recorded as asked (a stale digest, one that names
    /// several offers): nothing was accepted. The text says why and what to do.
    #[error("{0}; nothing was accepted")]
    NotAccepted(String),
    /// The roles cannot be created or named as asked.
    #[error("the control plane's roles: {0}")]
    Roles(String),
    /// A row read from the database is not what this program wrote.
    #[error("a row of {table} could not be read: {detail}")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// What was wrong.
        detail: String,
    },
}

impl Error {
    pub(crate) fn db(context: impl Into<String>) -> impl FnOnce(tokio_postgres::Error) -> Error {
        let context = context.into();
        move |source| match source.as_db_error() {
            Some(db) if *db.code() == tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE => {
                Error::PermissionDenied {
                    detail: db.message().to_owned(),
                    user: String::new(),
                    context,
                }
            }
            _ => Error::Database { context, source },
        }
    }
}

/// The driver's error and its causes: its own message leaves them out ("db error", "error
/// connecting to server"), and they are what says what went wrong.
fn with_causes(error: &tokio_postgres::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

impl From<Error> for registry_core::gate::StoreError {
    fn from(error: Error) -> Self {
        registry_core::gate::StoreError::new(error.to_string())
    }
}
