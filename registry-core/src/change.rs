//! Changes to a built registry: revocations, restorations and replacements, each recorded
//! ([`Registry::changes`](crate::Registry::changes)).

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
