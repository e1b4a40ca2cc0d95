//! What the control plane's tables hold, as operators read them.

use std::time::SystemTime;

use serde::Serialize;

/// What a recorded change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RecordedKind {
    /// The tool was revoked on every replica.
    Revoke,
    /// A revoked tool was brought back, for runs opened from then on.
    Restore,
    /// The tool was replaced by a new version; replicas without that version stop serving
    /// the old one.
    Replace,
    /// A Cedar policy set was pushed ([`ControlPlane::push_policies`]): every replica whose
    /// feed has a validation ([`ChangeFeed::on_policies`]) validates the newest set and
    /// switches to it, or keeps its own and reports why. The record names no tool (its
    /// `tool` is empty) and gives the set's generation in
    /// [`policies`](ChangeRecord::policies).
    ///
    /// [`ControlPlane::push_policies`]: crate::ControlPlane::push_policies
    /// [`ChangeFeed::on_policies`]: crate::ChangeFeed::on_policies
    Policies,
}

impl RecordedKind {
    /// The kind as the table writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordedKind::Revoke => "revoke",
            RecordedKind::Restore => "restore",
            RecordedKind::Replace => "replace",
            RecordedKind::Policies => "policies",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<RecordedKind> {
        match text {
            "revoke" => Some(RecordedKind::Revoke),
            "restore" => Some(RecordedKind::Restore),
            "replace" => Some(RecordedKind::Replace),
            "policies" => Some(RecordedKind::Policies),
            _ => None,
        }
    }
}

/// One row of `registry_changes`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ChangeRecord {
    /// Its place in the order every replica applies changes in.
    pub seq: i64,
    /// When it was committed.
    pub at: SystemTime,
    /// The tool.
    pub tool: String,
    /// What it did.
    pub kind: RecordedKind,
    /// For a replacement, what happens to runs opened before it (`keep_shown_version` or
    /// `revoke`).
    pub old_runs: Option<String>,
    /// For a replacement, the new definition's fingerprint.
    pub fingerprint: Option<String>,
    /// For a replacement, the fingerprint of the definition it replaced.
    pub old_fingerprint: Option<String>,
    /// For a replacement, the new version's
    /// [`Tool::version_fingerprint`](registry_core::Tool::version_fingerprint): its
    /// definition, hints, scopes, tenants and gate flags. `None` in records made before
    /// version 8 of the schema.
    pub version: Option<String>,
    /// For a replacement, the version fingerprint of the version it replaced: replicas
    /// serving exactly that version stop serving it (those of records without one compare
    /// [`old_fingerprint`](Self::old_fingerprint)).
    pub old_version: Option<String>,
    /// For a policy push ([`RecordedKind::Policies`]), the generation of the policy set it
    /// pushed ([`PolicySetRecord::generation`](crate::PolicySetRecord::generation)).
    pub policies: Option<i64>,
    /// Why, as the operator or application said.
    pub reason: String,
    /// Who made it: a replica, or `registry-admin`.
    pub origin: String,
}

/// Which approval requests to list.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ApprovalFilter {
    /// Only those still pending (and not expired).
    pub pending: bool,
    /// At most this many, newest first (default 100).
    pub limit: Option<i64>,
}

/// One approval request as an operator sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ApprovalRecord {
    /// The request's id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The subject's tenant.
    pub tenant: String,
    /// The subject's agent.
    pub agent: Option<String>,
    /// The principal the request belongs to (`Subject::principal`): only a run of the same
    /// principal decides it, or an operator's verdict. `None` for a subject without one, and
    /// for requests stored before principals were recorded.
    pub principal: Option<String>,
    /// Why it needs approval.
    pub reason: String,
    /// The one-line question a person is asked, arguments included.
    pub question: String,
    /// pending, approved, denied, expired or revoked.
    pub state: String,
    /// Who decided, when someone did.
    pub decided_by: Option<String>,
    /// When it was made.
    pub requested_at: SystemTime,
    /// When it expires, undecided.
    pub expires_at: SystemTime,
    /// An operator's verdict (`approve` or `deny`) waiting to be applied, or applied.
    pub verdict: Option<String>,
    /// The replica that made it.
    pub origin: String,
}

/// What [`ControlPlane::give_verdict`](crate::ControlPlane::give_verdict) did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerdictOutcome {
    /// The verdict was recorded. A denial is final at once; an approval is applied by the
    /// replica whose client waits on the request.
    Given,
    /// The request was decided already (or another verdict came first): nothing changed.
    AlreadyDecided {
        /// Its state, or the verdict given first.
        state: String,
    },
    /// It expired undecided: nothing changed.
    Expired,
    /// No request has that id.
    Unknown,
}

/// Which audit events to list.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct AuditFilter {
    /// Only events at or after this time.
    pub since: Option<SystemTime>,
    /// Only events about this tool.
    pub tool: Option<String>,
    /// Only events of this kind (`call`, `approval`, `change`, `projection`, `readiness`,
    /// `task`).
    pub kind: Option<String>,
    /// At most this many, newest first (default 100).
    pub limit: Option<i64>,
}

/// One row of `audit_events`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AuditRecord {
    /// Its id, in insertion order.
    pub id: i64,
    /// When the event happened.
    pub at: SystemTime,
    /// The replica that recorded it.
    pub replica: String,
    /// `call`, `approval`, `change`, `projection`, `readiness`, or `dropped` (a count of
    /// events a full queue dropped, under [`WhenFull::Drop`](crate::WhenFull::Drop)).
    pub kind: String,
    /// The run.
    pub run_id: Option<String>,
    /// The tenant.
    pub tenant: Option<String>,
    /// The principal of the run (`Subject::principal`), if its subject names one.
    pub principal: Option<String>,
    /// The tool.
    pub tool: Option<String>,
    /// The model's call id.
    pub call_id: Option<String>,
    /// `ok`, an error kind, or an approval step.
    pub outcome: Option<String>,
    /// The approval request.
    pub approval_id: Option<String>,
    /// The whole event as the core serializes it (no argument values).
    pub event: serde_json::Value,
}
