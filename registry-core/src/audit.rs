//! Structured records of every projection, call decision and change, for the operators.
//!
//! Each event is emitted through `tracing` (target `registry_core::audit`) and handed to the
//! application's [`AuditSink`], if it registered one. Argument values are never recorded:
//! only their size and a hash.

use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;

use crate::discover::fingerprint::Fingerprint;
use crate::execute::observation::ErrorKind;

/// The `tracing` target of audit events.
pub const AUDIT_TARGET: &str = "registry_core::audit";

/// One audited event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuditEvent {
    /// A run was opened and its allowed set fixed.
    Projection(ProjectionEvent),
    /// A call was decided: refused, or executed with some outcome.
    Call(CallEvent),
    /// A tool was revoked or replaced.
    Change(ChangeEvent),
    /// An approval request was made or decided.
    Approval(ApprovalEvent),
    /// A tool's readiness changed.
    Readiness(ReadinessEvent),
}

/// What happened to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalEventKind {
    /// A call asked for approval; nothing ran.
    Requested,
    /// A person approved it as requested; it ran.
    Approved,
    /// A person approved it with edited arguments; it ran with those.
    Edited,
    /// A person (or a policy, for edited arguments) denied it.
    Denied,
    /// It expired undecided.
    Expired,
    /// Its tool was revoked or replaced before a decision.
    Revoked,
}

impl ApprovalEventKind {
    /// The kind as a snake_case word.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalEventKind::Requested => "requested",
            ApprovalEventKind::Approved => "approved",
            ApprovalEventKind::Edited => "edited",
            ApprovalEventKind::Denied => "denied",
            ApprovalEventKind::Expired => "expired",
            ApprovalEventKind::Revoked => "revoked",
        }
    }
}

/// One step of an approval request.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ApprovalEvent {
    /// What happened.
    pub kind: ApprovalEventKind,
    /// The request's id.
    pub id: String,
    /// The run deciding (or asking).
    pub run_id: String,
    /// The subject's tenant.
    pub tenant: String,
    /// The model's call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Who decided, when the application said.
    pub by: Option<String>,
    /// Why it needed approval, or why it was denied.
    pub reason: String,
    /// A hash (XXH3-64, hex) of the requested arguments as JSON; never the values.
    pub argument_hash: String,
}

/// A tool became ready, or stopped being ready.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ReadinessEvent {
    /// The tool.
    pub tool: String,
    /// Why it is not ready; `None`: it is now.
    pub not_ready: Option<String>,
}

/// A run's projection.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ProjectionEvent {
    /// The run.
    pub run_id: String,
    /// The subject's tenant.
    pub tenant: String,
    /// The agent, if the subject names one.
    pub agent: Option<String>,
    /// The fingerprint of the allowed set.
    pub fingerprint: Fingerprint,
    /// How many tools the run may see and call.
    pub visible: usize,
    /// How many registered tools it may not.
    pub hidden: usize,
}

/// One call's decision and outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallEvent {
    /// The run.
    pub run_id: String,
    /// The subject's tenant.
    pub tenant: String,
    /// The fingerprint of the run's allowed set.
    pub fingerprint: Fingerprint,
    /// The model's call id.
    pub call_id: String,
    /// The tool name as the model wrote it.
    pub tool: String,
    /// `None` on success, otherwise why it failed.
    pub outcome: Option<ErrorKind>,
    /// From the start of resolution to the observation.
    #[serde(with = "micros")]
    pub duration: Duration,
    /// The size of the arguments as JSON, in bytes (0 when they did not parse).
    pub argument_bytes: usize,
    /// A hash (XXH3-64, hex) of the arguments as JSON: equal arguments, equal hash.
    pub argument_hash: String,
    /// What the model was not told: a panic's message, a failure's text, a policy's reason.
    pub detail: Option<String>,
    /// The approval request the call waits for, or ran under.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
}

/// A revocation or replacement.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ChangeEvent {
    /// What happened.
    pub change: crate::register::change::Change,
}

mod micros {
    use std::time::Duration;

    use serde::Serializer;

    pub(super) fn serialize<S: Serializer>(duration: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u128(duration.as_micros())
    }
}

/// Receives every audit event. Any `Fn(&AuditEvent) + Send + Sync` is one.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use registry_core::{AuditEvent, Registry, Subject};
///
/// let events = Arc::new(Mutex::new(Vec::new()));
/// let sink = {
///     let events = events.clone();
///     move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
/// };
/// let registry = Registry::builder().audit_sink(sink).build().unwrap();
/// let _run = registry.open_run("run-1", &Subject::new("tenant-a"));
/// assert!(matches!(events.lock().unwrap()[0], AuditEvent::Projection(_)));
/// ```
pub trait AuditSink: Send + Sync + 'static {
    /// Records one event. Called on the thread that caused it: keep it quick.
    fn record(&self, event: &AuditEvent);
}

impl<F> AuditSink for F
where
    F: Fn(&AuditEvent) + Send + Sync + 'static,
{
    fn record(&self, event: &AuditEvent) {
        self(event)
    }
}

/// Emits `event` through `tracing` and to `sink`.
pub(crate) fn emit(sink: Option<&dyn AuditSink>, event: AuditEvent) {
    match &event {
        AuditEvent::Projection(p) => tracing::info!(
            target: AUDIT_TARGET,
            event = "projection",
            run_id = %p.run_id,
            tenant = %p.tenant,
            agent = p.agent.as_deref(),
            fingerprint = %p.fingerprint,
            visible = p.visible,
            hidden = p.hidden,
        ),
        AuditEvent::Call(c) => tracing::info!(
            target: AUDIT_TARGET,
            event = "call",
            run_id = %c.run_id,
            tenant = %c.tenant,
            fingerprint = %c.fingerprint,
            call_id = %c.call_id,
            tool = %c.tool,
            outcome = c.outcome.map_or("ok", ErrorKind::as_str),
            duration_us = u64::try_from(c.duration.as_micros()).unwrap_or(u64::MAX),
            argument_bytes = c.argument_bytes,
            argument_hash = %c.argument_hash,
            detail = c.detail.as_deref(),
            approval_id = c.approval_id.as_deref(),
        ),
        AuditEvent::Change(c) => tracing::info!(
            target: AUDIT_TARGET,
            event = "change",
            tool = %c.change.name,
            kind = ?c.change.kind,
            reason = %c.change.reason,
            old_fingerprint = %c.change.old_fingerprint,
        ),
        AuditEvent::Approval(a) => tracing::info!(
            target: AUDIT_TARGET,
            event = "approval",
            kind = a.kind.as_str(),
            id = %a.id,
            run_id = %a.run_id,
            tenant = %a.tenant,
            call_id = %a.call_id,
            tool = %a.tool,
            by = a.by.as_deref(),
            reason = %a.reason,
            argument_hash = %a.argument_hash,
        ),
        AuditEvent::Readiness(r) => tracing::info!(
            target: AUDIT_TARGET,
            event = "readiness",
            tool = %r.tool,
            ready = r.not_ready.is_none(),
            not_ready = r.not_ready.as_deref(),
        ),
    }
    if let Some(sink) = sink {
        sink.record(&event);
    }
}

/// Whether anyone listens: a sink, or a `tracing` subscriber for audit events.
pub(crate) fn wanted(sink: Option<&dyn AuditSink>) -> bool {
    sink.is_some() || tracing::enabled!(target: AUDIT_TARGET, tracing::Level::INFO)
}

/// Now, for change records.
pub(crate) fn now() -> SystemTime {
    SystemTime::now()
}

/// How many characters of a model-chosen name or call id the audit log keeps.
pub(crate) const AUDITED_NAME: usize = 256;

/// The size and hash of the arguments as compact JSON, for the audit log.
pub(crate) fn argument_fingerprint(arguments: &Value) -> (usize, String) {
    let json = serde_json::to_vec(arguments).unwrap_or_default();
    (
        json.len(),
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&json)),
    )
}

/// At most `max` characters of `text`, for echoing untrusted names.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}
