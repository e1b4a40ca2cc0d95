//! Changes to a built registry: revocations, restorations and replacements, each recorded
//! ([`Registry::changes`](crate::Registry::changes)); and what became of the runs they
//! caught ([`Registry::run_ends`](crate::Registry::run_ends)).

use std::time::SystemTime;

use serde::Serialize;

use crate::declare::source::Source;
use crate::shared::fingerprint::Fingerprint;

/// What happens to runs opened before a tool is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OldRuns {
    /// They keep calling exactly the version they were shown, until they end.
    KeepShownVersion,
    /// They stop getting it: their calls to it are answered `Revoked`.
    Revoke,
}

/// How [`Registry::replace`](crate::Registry::replace) treats runs already open, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplaceOptions {
    /// What old runs do.
    pub old_runs: OldRuns,
    /// Why the tool is replaced, for the record.
    pub reason: String,
}

impl ReplaceOptions {
    /// Old runs keep the version they were shown.
    pub fn keep_old_runs(reason: impl Into<String>) -> Self {
        ReplaceOptions {
            old_runs: OldRuns::KeepShownVersion,
            reason: reason.into(),
        }
    }

    /// Old runs get `Revoked` when they call the tool.
    pub fn revoke_old_runs(reason: impl Into<String>) -> Self {
        ReplaceOptions {
            old_runs: OldRuns::Revoke,
            reason: reason.into(),
        }
    }
}

/// What kind of change a [`Change`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeKind {
    /// The tool was revoked for every run.
    Revoked,
    /// A new version replaced the tool for new runs; old runs as said.
    Replaced(OldRuns),
    /// A revoked tool was brought back, for runs opened from now on; runs that saw it
    /// revoked keep getting `Revoked`.
    Restored,
}

/// The record of one revocation or replacement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Change {
    /// When it took effect (serialized as milliseconds since the Unix epoch).
    #[serde(
        rename = "at_unix_ms",
        serialize_with = "crate::approval::request::unix_ms::serialize"
    )]
    pub at: SystemTime,
    /// The tool.
    pub name: String,
    /// What happened.
    pub kind: ChangeKind,
    /// Why, as the application said.
    pub reason: String,
    /// The fingerprint of the definition that was revoked, replaced or restored, as a model
    /// was shown it ([`Tool::fingerprint`](crate::Tool::fingerprint)).
    pub old_fingerprint: Fingerprint,
    /// The version of the tool that was revoked, replaced or restored
    /// ([`Tool::version_fingerprint`](crate::Tool::version_fingerprint)).
    pub old_version: Fingerprint,
    /// The version new runs get from now on: for a replacement, the new one; for a
    /// restoration, the restored one; `None` for a revocation.
    pub new_version: Option<Fingerprint>,
}

/// What became of a run opened before the registry changed under it, in a [`RunEnd`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunEndKind {
    /// It ended (was dropped) without being reopened, and could still call every tool it
    /// was shown, in the version it was shown (a replacement kept its version).
    Finished,
    /// It was reopened ([`Registry::reopen`](crate::Registry::reopen)) as the run named in
    /// [`RunEnd::reopened_as`]: its subject goes on with what the registry has now.
    Migrated,
    /// It ended without being reopened while a tool it was shown was revoked or not ready:
    /// its calls to that tool were answered `Revoked` or `Unavailable`.
    Stopped,
}

impl RunEndKind {
    /// The kind as a snake_case word.
    pub fn as_str(self) -> &'static str {
        match self {
            RunEndKind::Finished => "finished",
            RunEndKind::Migrated => "migrated",
            RunEndKind::Stopped => "stopped",
        }
    }
}

/// The record of a run that was no longer current
/// ([`Run::is_current`](crate::Run::is_current)) when it ended or was reopened: kept by the
/// registry ([`Registry::run_ends`](crate::Registry::run_ends), the most recent
/// [`RUN_ENDS_KEPT`]) and audited ([`AuditEvent::RunEnd`](crate::audit::AuditEvent::RunEnd)).
/// A run reopened while still current is recorded too, as [`RunEndKind::Migrated`]; a run
/// that ends while current is not recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RunEnd {
    /// When it ended or was reopened (serialized as milliseconds since the Unix epoch).
    #[serde(
        rename = "at_unix_ms",
        serialize_with = "crate::approval::request::unix_ms::serialize"
    )]
    pub at: SystemTime,
    /// The run's id.
    pub run_id: String,
    /// The subject's tenant.
    pub tenant: String,
    /// The subject's principal, if it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The fingerprint of what the run was shown
    /// ([`AllowedSet::fingerprint`](crate::AllowedSet::fingerprint)).
    pub fingerprint: Fingerprint,
    /// What became of it.
    pub kind: RunEndKind,
    /// For [`RunEndKind::Migrated`], the id of the run that took over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reopened_as: Option<String>,
}

/// How many [`RunEnd`] records a registry keeps: the oldest goes first.
pub const RUN_ENDS_KEPT: usize = 1024;
/// A record of one tool replaced while the registry was built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Replacement {
    /// The tool's name.
    pub name: String,
    /// Where the replaced tool was declared.
    pub replaced: Source,
    /// Where its replacement was built.
    pub by: Source,
    /// Why, as the application said.
    pub reason: String,
}
