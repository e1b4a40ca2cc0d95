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
        move |source| Error::Database { context, source }
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
