//! Structured records of every projection, call decision and change, for the operators.
//!
//! Each event is emitted through `tracing` (target `registry_core::audit`) and handed to the
//! application's [`AuditSink`], if it registered one. Argument values are never recorded:
//! only their size and a hash. Every text field of an event is written as it is when
//! it is a plain word, quoted and escaped (`Debug`) otherwise, so that a name or id chosen
//! by a client cannot start a line or forge a field of its own.
//!
//! Tests: `tests/tests/audit.rs`.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::execute::observation::ErrorKind;
use crate::shared::fingerprint::Fingerprint;
pub(crate) use crate::shared::logged::Logged;

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
    /// A task started, ended, or was cancelled.
    Task(TaskEvent),
    /// A tool's readiness changed.
    Readiness(ReadinessEvent),
    /// A change to the tools was attempted and refused: a failed
    /// [`build`](crate::RegistryBuilder::build), [`replace`](crate::Registry::replace),
    /// [`revoke`](crate::Registry::revoke) or [`restore`](crate::Registry::restore). Nothing
    /// changed.
    ChangeRefused(ChangeRefusedEvent),
    /// A deferred session's search found nothing good, or found tools none of which was then
    /// called: where discovery fails.
    Discovery(DiscoveryEvent),
    /// A run that was no longer current ended (finished or stopped), or a run was reopened
    /// (migrated): see [`Registry::run_ends`](crate::Registry::run_ends).
    RunEnd(crate::change::RunEnd),
}

/// What became of a search, in a [`DiscoveryEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DiscoveryKind {
    /// No tool matched the query well: the answer said so and loaded nothing.
    NothingFound,
    /// Tools were found, and none of them was called before the next search or the end of
    /// the session.
    NotCalled,
}

impl DiscoveryKind {
    /// The kind as a snake_case word.
    pub fn as_str(self) -> &'static str {
        match self {
            DiscoveryKind::NothingFound => "nothing_found",
            DiscoveryKind::NotCalled => "not_called",
        }
    }
}

/// A search of a deferred session that did not lead to a call. The query is the model's
/// text, an argument like any other: only its size and hash are recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DiscoveryEvent {
    /// The run.
    pub run_id: String,
    /// The subject's tenant.
    pub tenant: String,
    /// The principal, if the subject names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The fingerprint of the run's allowed set.
    pub fingerprint: Fingerprint,
    /// What became of the search.
    pub kind: DiscoveryKind,
    /// The search call's id.
    pub call_id: String,
    /// The size of the query, in bytes.
    pub query_bytes: usize,
    /// A hash (HMAC-SHA-256 under the registry's audit key, its first 8 bytes in hex) of
    /// the query as JSON: equal queries, equal hash, under one key
    /// ([`RegistryBuilder::audit_hash_key`](crate::RegistryBuilder::audit_hash_key)).
    pub query_hash: String,
    /// The tools the search found (of the run's allowed set), best first; none for
    /// [`DiscoveryKind::NothingFound`].
    pub found: Vec<String>,
}

/// What was attempted, in a [`ChangeRefusedEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeAttempt {
    /// Building a registry ([`RegistryBuilder::build`](crate::RegistryBuilder::build),
    /// [`Registry::from_inventory`](crate::Registry::from_inventory)).
    Build,
    /// Replacing a tool ([`Registry::replace`](crate::Registry::replace)).
    Replace,
    /// Revoking a tool ([`Registry::revoke`](crate::Registry::revoke)).
    Revoke,
    /// Restoring a revoked tool ([`Registry::restore`](crate::Registry::restore)).
    Restore,
}

impl ChangeAttempt {
    /// The attempt as a snake_case word.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeAttempt::Build => "build",
            ChangeAttempt::Replace => "replace",
            ChangeAttempt::Revoke => "revoke",
            ChangeAttempt::Restore => "restore",
        }
    }
}

/// A refused change: what was attempted, and every reason it was refused.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ChangeRefusedEvent {
    /// What was attempted.
    pub attempt: ChangeAttempt,
    /// The tool it named (at most 256 characters); `None` for a build.
    pub tool: Option<String>,
    /// The reason the application gave for the change, if it gave one (at most
    /// [`REFUSAL_TEXT`] characters).
    pub reason: Option<String>,
    /// Why it was refused: one entry per problem ([`BuildProblem`](crate::BuildProblem)s of
    /// a build or replacement), at most [`REFUSAL_PROBLEMS`] of them, each at most
    /// [`REFUSAL_TEXT`] characters.
    pub problems: Vec<String>,
    /// How many problems there were in all (more than `problems` holds when it was cut).
    pub problem_count: usize,
}

/// How many problems a [`ChangeRefusedEvent`] lists at most.
pub const REFUSAL_PROBLEMS: usize = 64;

/// How many characters of one problem a [`ChangeRefusedEvent`] keeps.
pub const REFUSAL_TEXT: usize = 1024;

/// How many tools a [`ProjectionEvent`] lists by name and version at most; past that,
/// [`ProjectionEvent::versions`] still covers them all.
pub const PROJECTED_TOOLS: usize = 256;

/// One tool by name and version ([`Tool::version_fingerprint`](crate::Tool::version_fingerprint)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolVersion {
    /// The tool's name.
    pub name: String,
    /// Its version fingerprint.
    pub version: Fingerprint,
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
    /// The principal the request belongs to ([`Subject::principal`](crate::Subject::principal)),
    /// if its subject names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The model's call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Who decided, when the application said.
    pub by: Option<String>,
    /// Why it needed approval, or why it was denied.
    pub reason: String,
    /// A hash (HMAC-SHA-256 under the registry's audit key, its first 8 bytes in hex) of the
    /// requested arguments as JSON; never the values
    /// ([`RegistryBuilder::audit_hash_key`](crate::RegistryBuilder::audit_hash_key)).
    pub argument_hash: String,
    /// The version of the tool the request is bound to, and that runs if it is approved
    /// ([`Tool::version_fingerprint`](crate::Tool::version_fingerprint)).
    pub tool_version: Fingerprint,
}

/// What happened to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskEventKind {
    /// The call passed the gate and its task started
    /// ([`Run::start_task`](crate::Run::start_task)). A call refused before it started is
    /// a [`CallEvent`], as any refused call.
    Started,
    /// Its tool ended: completed or failed ([`TaskEvent::outcome`]).
    Finished,
    /// It was cancelled ([`Run::cancel_task`](crate::Run::cancel_task)) before its tool
    /// ended.
    Cancelled,
    /// A store shared by replicas marked it failed because the replica that ran it stopped
    /// renewing its lease (it exited, or lost the database): its tool may not have finished
    /// ([`TaskEvent::detail`] says which replica, and since when). Written by the store
    /// (`registry-postgres`), once, by the replica that failed it.
    LeaseExpired,
}

impl TaskEventKind {
    /// The kind as a snake_case word.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskEventKind::Started => "started",
            TaskEventKind::Finished => "finished",
            TaskEventKind::Cancelled => "cancelled",
            TaskEventKind::LeaseExpired => "lease_expired",
        }
    }
}

/// One step of a task ([`task`](crate::task)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TaskEvent {
    /// What happened.
    pub kind: TaskEventKind,
    /// The task's id.
    pub id: String,
    /// The run that started it (for `cancelled`: the run that cancelled it).
    pub run_id: String,
    /// The subject's tenant.
    pub tenant: String,
    /// The principal the task belongs to, if its subject names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The model's call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The task's status after this step (`working`, `completed`, `failed`, `cancelled`).
    pub status: String,
    /// For `finished`: `None` if the tool succeeded, else the kind of failure.
    pub outcome: Option<ErrorKind>,
    /// For `finished`: how long the tool ran; zero otherwise.
    #[serde(with = "micros")]
    pub duration: Duration,
    /// The arguments' size as JSON, in bytes; never the values.
    pub argument_bytes: usize,
    /// A hash (HMAC-SHA-256 under the registry's audit key, its first 8 bytes in hex) of the
    /// arguments as JSON; never the values
    /// ([`RegistryBuilder::audit_hash_key`](crate::RegistryBuilder::audit_hash_key)).
    pub argument_hash: String,
    /// What only operators see: a panic's message, a store's error.
    pub detail: Option<String>,
    /// The version of the tool that runs
    /// ([`Tool::version_fingerprint`](crate::Tool::version_fingerprint)).
    pub tool_version: Fingerprint,
}

impl TaskEvent {
    /// The event of `task`, which a store shared by replicas has just failed because its
    /// lease ran out ([`TaskEventKind::LeaseExpired`]), `reason` saying why; for a
    /// [`TaskStore`](crate::task::TaskStore) that ends tasks itself.
    pub fn lease_expired(task: &crate::task::Task, reason: impl Into<String>) -> TaskEvent {
        TaskEvent {
            kind: TaskEventKind::LeaseExpired,
            id: task.id().to_owned(),
            run_id: task.run_id().to_owned(),
            tenant: task.tenant().to_owned(),
            principal: task.principal().map(str::to_owned),
            call_id: truncate(task.call_id(), AUDITED_NAME),
            tool: task.tool_name().to_owned(),
            status: task.status().as_str().to_owned(),
            outcome: Some(ErrorKind::Unavailable),
            duration: Duration::ZERO,
            argument_bytes: 0,
            argument_hash: String::new(),
            detail: Some(reason.into()),
            tool_version: task.tool_version(),
        }
    }
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
    /// The principal, if the subject names one ([`Subject::principal`](crate::Subject::principal)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The fingerprint of the allowed set.
    pub fingerprint: Fingerprint,
    /// How many tools the run may see and call.
    pub visible: usize,
    /// How many registered tools it may not.
    pub hidden: usize,
    /// The fingerprint of the visible tools' names and versions
    /// ([`AllowedSet::version_fingerprint`](crate::AllowedSet::version_fingerprint)): what
    /// the run may execute, gate flags included.
    pub versions: Fingerprint,
    /// The visible tools by name and version, in name order; at most [`PROJECTED_TOOLS`]
    /// of them (`visible` says how many there are).
    pub tools: Vec<ToolVersion>,
    /// The keys of the subject's attributes ([`Subject::attributes`](crate::Subject::attributes)),
    /// sorted: never their values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attribute_keys: Vec<String>,
    /// The attributes the subject was given and that were refused, each its key (escaped)
    /// and why: they match nothing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused_attributes: Vec<(String, String)>,
}

/// One call's decision and outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallEvent {
    /// The run.
    pub run_id: String,
    /// The subject's tenant.
    pub tenant: String,
    /// The principal the run acts for, if its subject names one
    /// ([`Subject::principal`](crate::Subject::principal)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
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
    /// A hash (HMAC-SHA-256 under the registry's audit key, its first 8 bytes in hex) of the
    /// arguments as JSON: equal arguments, equal hash, under one key
    /// ([`RegistryBuilder::audit_hash_key`](crate::RegistryBuilder::audit_hash_key)).
    pub argument_hash: String,
    /// What the model was not told: a panic's message, a failure's text, a policy's reason.
    pub detail: Option<String>,
    /// The approval request the call waits for, or ran under.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// The version of the tool the call resolved to
    /// ([`Tool::version_fingerprint`](crate::Tool::version_fingerprint)): the one that ran,
    /// or would have; `None` when the name is not one of the run's tools.
    pub tool_version: Option<Fingerprint>,
    /// The W3C trace id of the distributed trace the call belongs to, when its caller sent
    /// one ([`CallOptions::with_trace`](crate::call::CallOptions::with_trace); an MCP
    /// request's `_meta.traceparent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Who made the call: the model, or code it wrote ([`Caller`](crate::call::Caller)).
    pub caller: crate::shared::caller::Caller,
    /// The ids of the policies that decided the call, when a policy names them
    /// ([`CallPolicy::determine`](crate::gate::CallPolicy::determine): a Cedar policy set's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<String>,
    /// What the result checks ([`ResultCheck`](crate::gate::ResultCheck)) did to the
    /// result of a call that ran: `None` when they passed it unchanged (or there are none, or
    /// the call did not run). `detail` says which check and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_check: Option<ResultChecked>,
}

/// What the result checks did to a call's result ([`CallEvent::result_check`]).
///
/// ```
/// use registry_core::audit::ResultChecked;
///
/// assert_eq!(ResultChecked::Withheld.as_str(), "withheld");
/// assert_eq!(serde_json::to_value(ResultChecked::Redacted).unwrap(), "redacted");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResultChecked {
    /// A check changed the result; the model got the changed one.
    Redacted,
    /// A check withheld the result (or panicked): the tool ran, and the model got an error
    /// saying the result was withheld.
    Withheld,
}

impl ResultChecked {
    /// `"redacted"` or `"withheld"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultChecked::Redacted => "redacted",
            ResultChecked::Withheld => "withheld",
        }
    }
}

/// A revocation or replacement.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ChangeEvent {
    /// What happened.
    pub change: crate::change::Change,
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
/// use registry_core::{audit::AuditEvent, Registry, Subject};
///
/// let events = Arc::new(Mutex::new(Vec::new()));
/// let sink = {
///     let events = events.clone();
///     move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
/// };
/// let registry = Registry::builder().audit_sink(sink).allow_empty().build().unwrap();
/// let _run = registry.open_run("run-1", &Subject::new("tenant-a"));
/// assert!(matches!(events.lock().unwrap()[0], AuditEvent::Projection(_)));
/// ```
pub trait AuditSink: Send + Sync + 'static {
    /// Records one event. Called on the thread that caused it, sometimes under a lock of the
    /// caller's: keep it quick, and never block in it. A sink that applies backpressure does
    /// it in [`ready`](Self::ready).
    fn record(&self, event: &AuditEvent);

    /// Resolves once the sink has room for the events a call is about to record: the
    /// asynchronous paths of a run ([`Run::call`](crate::Run::call) and its `_with` form, and
    /// the approval methods) await it before they start, holding no lock, so a sink whose
    /// store is slow slows those calls down without parking a thread. The synchronous paths
    /// (`call_blocking`, `open_run`, the registry's own changes) do not wait; `record` must
    /// cope on its own there. The default is ready at once. (The future is a
    /// [`BoxFuture`](crate::definition::BoxFuture), spelled out.)
    fn ready(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(std::future::ready(()))
    }
}

/// Waits until `sink`, if there is one, has room (see [`AuditSink::ready`]).
pub(crate) async fn ready(sink: Option<&dyn AuditSink>) {
    if let Some(sink) = sink {
        sink.ready().await;
    }
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
            run_id = %Logged(&p.run_id),
            tenant = %Logged(&p.tenant),
            agent = p.agent.as_deref().map(Logged::field),
            principal = p.principal.as_deref().map(Logged::field),
            fingerprint = %p.fingerprint,
            visible = p.visible,
            hidden = p.hidden,
            versions = %p.versions,
            attribute_keys = ?p.attribute_keys,
            refused_attributes = p.refused_attributes.len(),
        ),
        AuditEvent::Call(c) => {
            let policies = c.policies.join(",");
            tracing::info!(
            target: AUDIT_TARGET,
            event = "call",
            run_id = %Logged(&c.run_id),
            tenant = %Logged(&c.tenant),
            principal = c.principal.as_deref().map(Logged::field),
            fingerprint = %c.fingerprint,
            call_id = %Logged(&c.call_id),
            tool = %Logged(&c.tool),
            outcome = c.outcome.map_or("ok", ErrorKind::as_str),
            duration_us = u64::try_from(c.duration.as_micros()).unwrap_or(u64::MAX),
            argument_bytes = c.argument_bytes,
            argument_hash = %c.argument_hash,
            detail = c.detail.as_deref().map(Logged::field),
            approval_id = c.approval_id.as_deref().map(Logged::field),
            tool_version = c.tool_version.map(tracing::field::display),
            caller = c.caller.as_str(),
            policies = (!policies.is_empty()).then(|| Logged::field(&policies)),
            result_check = c.result_check.map(ResultChecked::as_str),
            )
        }
        AuditEvent::Change(c) => tracing::info!(
            target: AUDIT_TARGET,
            event = "change",
            tool = %Logged(&c.change.name),
            kind = ?c.change.kind,
            reason = %Logged(&c.change.reason),
            old_fingerprint = %c.change.old_fingerprint,
            old_version = %c.change.old_version,
            new_version = c.change.new_version.map(tracing::field::display),
        ),
        AuditEvent::Approval(a) => tracing::info!(
            target: AUDIT_TARGET,
            event = "approval",
            kind = a.kind.as_str(),
            id = %Logged(&a.id),
            run_id = %Logged(&a.run_id),
            tenant = %Logged(&a.tenant),
            principal = a.principal.as_deref().map(Logged::field),
            call_id = %Logged(&a.call_id),
            tool = %Logged(&a.tool),
            by = a.by.as_deref().map(Logged::field),
            reason = %Logged(&a.reason),
            argument_hash = %a.argument_hash,
            tool_version = %a.tool_version,
        ),
        AuditEvent::Task(t) => tracing::info!(
            target: AUDIT_TARGET,
            event = "task",
            kind = t.kind.as_str(),
            id = %Logged(&t.id),
            run_id = %Logged(&t.run_id),
            tenant = %Logged(&t.tenant),
            principal = t.principal.as_deref().map(Logged::field),
            call_id = %Logged(&t.call_id),
            tool = %Logged(&t.tool),
            status = t.status.as_str(),
            outcome = t.outcome.map_or("ok", ErrorKind::as_str),
            duration_us = u64::try_from(t.duration.as_micros()).unwrap_or(u64::MAX),
            argument_bytes = t.argument_bytes,
            argument_hash = %t.argument_hash,
            detail = t.detail.as_deref().map(Logged::field),
            tool_version = %t.tool_version,
        ),
        AuditEvent::Readiness(r) => tracing::info!(
            target: AUDIT_TARGET,
            event = "readiness",
            tool = %Logged(&r.tool),
            ready = r.not_ready.is_none(),
            not_ready = r.not_ready.as_deref().map(Logged::field),
        ),
        AuditEvent::Discovery(d) => tracing::info!(
            target: AUDIT_TARGET,
            event = "discovery",
            kind = d.kind.as_str(),
            run_id = %Logged(&d.run_id),
            tenant = %Logged(&d.tenant),
            principal = d.principal.as_deref().map(Logged::field),
            fingerprint = %d.fingerprint,
            call_id = %Logged(&d.call_id),
            query_bytes = d.query_bytes,
            query_hash = %d.query_hash,
            found = %Logged(&d.found.join(",")),
        ),
        AuditEvent::RunEnd(r) => tracing::info!(
            target: AUDIT_TARGET,
            event = "run_end",
            kind = r.kind.as_str(),
            run_id = %Logged(&r.run_id),
            tenant = %Logged(&r.tenant),
            principal = r.principal.as_deref().map(Logged::field),
            fingerprint = %r.fingerprint,
            reopened_as = r.reopened_as.as_deref().map(Logged::field),
        ),
        AuditEvent::ChangeRefused(r) => tracing::warn!(
            target: AUDIT_TARGET,
            event = "change_refused",
            attempt = r.attempt.as_str(),
            tool = r.tool.as_deref().map(Logged::field),
            reason = r.reason.as_deref().map(Logged::field),
            problem_count = r.problem_count,
            problems = %Logged(&r.problems.join("; ")),
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

/// Audits a refused change: to `sink` and `tracing`, whether or not an `info` subscriber
/// listens (a refusal is rare and worth a warning).
pub(crate) fn refused(
    sink: Option<&dyn AuditSink>,
    attempt: ChangeAttempt,
    tool: Option<&str>,
    reason: Option<&str>,
    error: &crate::declare::error::RegistryError,
) {
    let all: Vec<String> = match error {
        crate::declare::error::RegistryError::Build(problems) => {
            problems.iter().map(ToString::to_string).collect()
        }
        other => vec![other.to_string()],
    };
    let event = ChangeRefusedEvent {
        attempt,
        tool: tool.map(|tool| truncate(tool, AUDITED_NAME)),
        reason: reason.map(|reason| truncate(reason, REFUSAL_TEXT)),
        problem_count: all.len(),
        problems: all
            .iter()
            .take(REFUSAL_PROBLEMS)
            .map(|problem| truncate(problem, REFUSAL_TEXT))
            .collect(),
    };
    emit(sink, AuditEvent::ChangeRefused(event));
}

/// Now, for change records.
pub(crate) fn now() -> SystemTime {
    SystemTime::now()
}

/// How many characters of a model-chosen name or call id the audit log keeps.
pub(crate) const AUDITED_NAME: usize = 256;

/// At most `max` characters of `text`, for echoing untrusted names.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}
