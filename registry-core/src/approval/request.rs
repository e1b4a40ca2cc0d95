//! Human approval, bound to exactly what was shown and approved.
//!
//! Tests: `tests/tests/gate.rs`; the caller kept through an approval,
//! `tests/tests/integration/approval_callers.rs`.

use std::fmt;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::shared::caller::Caller;
use crate::shared::fingerprint::Fingerprint;
use crate::shared::tool_error::ArgumentProblem;

/// A call that waits for a person: exactly what would run, for whom, and why it needs
/// approval.
///
/// It is bound to what the model was shown and what would run: the fingerprint of the run's
/// allowed set and the version fingerprint of the tool (its definition, hints, scopes,
/// tenants and gate flags); and to whom it was shown: the subject's tenant, agent and
/// principal. [`Run::decide`](crate::Run::decide) with [`Verdict::approve`] runs it with exactly these arguments, from
/// a run with the same allowed set and the same tenant, agent and principal, at most once,
/// before it expires, and only if the tool was neither revoked nor replaced since. It
/// serializes (to keep it in a
/// database, or show it in a console) and deserializes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    pub(crate) id: String,
    pub(crate) run_id: String,
    pub(crate) tenant: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agent: Option<String>,
    /// Absent in requests stored before principals existed: those are decided only by a run
    /// whose subject has no principal either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) principal: Option<String>,
    pub(crate) call_id: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) generated_id: bool,
    pub(crate) tool_name: String,
    /// `null` once discarded ([`discarded`](Self::discarded) then says what they were).
    #[serde(default)]
    pub(crate) arguments: Value,
    /// What is left of arguments discarded when the request was denied, expired or was
    /// revoked: their digest, not their values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) discarded: Option<ArgumentDigest>,
    /// The digest of the arguments, made with the registry's audit key when the request was
    /// (absent in requests stored before it was kept: their digest has a size only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) digest: Option<ArgumentDigest>,
    pub(crate) reason: String,
    pub(crate) allowed_set: Fingerprint,
    pub(crate) definition: Fingerprint,
    #[serde(rename = "requested_at_unix_ms", with = "unix_ms")]
    pub(crate) requested_at: SystemTime,
    #[serde(rename = "expires_at_unix_ms", with = "unix_ms")]
    pub(crate) expires_at: SystemTime,
    /// Who made the call (absent: the model, as in requests stored before callers existed),
    /// so that the call resumed after the approval keeps it.
    #[serde(default, skip_serializing_if = "is_model")]
    pub(crate) caller: Caller,
    /// Whether the call asked to start as a task (absent: an ordinary call, as in requests
    /// stored before tasks were asked for).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) task: bool,
}

fn is_model(caller: &Caller) -> bool {
    *caller == Caller::Model
}

impl ApprovalRequest {
    /// The request's id: unguessable, unique, what [`Run::decide`](crate::Run::decide)
    /// takes.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool that would run.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// Who made the call: the model, or code it wrote (a tool declared `callable_from_code`;
    /// code cannot ask for a person's approval otherwise).
    pub fn caller(&self) -> Caller {
        self.caller
    }

    /// Whether the call asked to start as a task ([`Run::start_task`](crate::Run::start_task)):
    /// approved, [`Run::decide`](crate::Run::decide) starts the task
    /// ([`Settled::Started`](crate::approval::Settled::Started)).
    pub fn is_task(&self) -> bool {
        self.task
    }

    /// The arguments it would run with, validated against the tool's schema; `null` once
    /// they were discarded ([`discarded`](Self::discarded)).
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// The digest of the arguments (their size and hash as compact JSON, the same as the
    /// audit log's `argument_hash`): of the arguments held, or of those discarded.
    pub fn argument_digest(&self) -> ArgumentDigest {
        match (&self.discarded, &self.digest) {
            (Some(digest), _) | (None, Some(digest)) => digest.clone(),
            (None, None) => ArgumentDigest::unhashed(&self.arguments),
        }
    }

    /// `Some` once the arguments were discarded: what is left of them, their digest. A store
    /// discards them when the request is denied, expires or is revoked
    /// ([`discard_arguments`](Self::discard_arguments)): nothing will run with them, and a
    /// store keeps no argument values longer than a call may need them.
    pub fn discarded(&self) -> Option<&ArgumentDigest> {
        self.discarded.as_ref()
    }

    /// Replaces the arguments by their digest: for a store, when the request leaves pending
    /// other than approved (denied, expired, revoked). Done twice, it changes nothing.
    ///
    /// ```
    /// # use registry_core::approval::ApprovalRequest;
    /// # fn example(mut request: ApprovalRequest) {
    /// let digest = request.argument_digest();
    /// request.discard_arguments();
    /// assert!(request.arguments().is_null());
    /// assert_eq!(request.discarded(), Some(&digest));
    /// assert!(request.question().contains("arguments discarded"));
    /// # }
    /// ```
    pub fn discard_arguments(&mut self) {
        if self.discarded.is_none() {
            self.discarded = Some(self.argument_digest());
            self.arguments = Value::Null;
        }
    }

    /// Why it needs approval: the tool is marked `needs_approval`, or a call policy's reason.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The run that made the call.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The model's id for the call; the observation that answers it carries the same.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The subject's tenant.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The subject's agent, if it names one.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// The subject's principal ([`Subject::principal`](crate::Subject::principal)), if it
    /// names one: only a run of the same principal decides the request. A request stored
    /// before principals were recorded has none, and only a run whose subject has none
    /// decides it.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// Whether `other` counts against the same bound of pending requests
    /// ([`RegistryBuilder::max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals)):
    /// the same principal, or, for requests without one, the same tenant and agent.
    pub fn same_owner(&self, other: &ApprovalRequest) -> bool {
        match (&self.principal, &other.principal) {
            (Some(mine), Some(theirs)) => mine == theirs,
            (None, None) => self.tenant == other.tenant && self.agent == other.agent,
            _ => false,
        }
    }

    /// Whether a run of `subject` may decide the request: same tenant, agent and principal
    /// (the allowed set is checked apart).
    pub(crate) fn belongs_to(&self, subject: &crate::Subject) -> bool {
        self.tenant == subject.tenant()
            && self.agent.as_deref() == subject.agent()
            && self.principal.as_deref() == subject.principal()
    }

    /// The fingerprint of the run's allowed set: only a run with the same set (and subject)
    /// can decide the request.
    pub fn allowed_set(&self) -> Fingerprint {
        self.allowed_set
    }

    /// The version of the tool the request is bound to
    /// ([`Tool::version_fingerprint`](crate::Tool::version_fingerprint)): its definition as the
    /// model was shown it, and its hints, scopes, tenants and gate flags. A run whose tool is
    /// another version cannot decide the request (it is revoked). A request stored by an
    /// earlier release, bound to the definition and hints only, is revoked when decided.
    pub fn tool_version(&self) -> Fingerprint {
        self.definition
    }

    /// The version of the tool the request is bound to.
    #[deprecated(note = "use `ApprovalRequest::tool_version`")]
    pub fn definition_fingerprint(&self) -> Fingerprint {
        self.tool_version()
    }

    /// When the call was made.
    pub fn requested_at(&self) -> SystemTime {
        self.requested_at
    }

    /// When the request expires, undecided.
    pub fn expires_at(&self) -> SystemTime {
        self.expires_at
    }

    /// A one-line question for a person: `Allow "deploy" with {"env":"production"}? (reason)`.
    /// Once the arguments were discarded it says so, with their size and hash, in their
    /// place.
    pub fn question(&self) -> String {
        match &self.discarded {
            None => format!(
                "Allow \"{}\" with {}? ({})",
                self.tool_name, self.arguments, self.reason
            ),
            Some(digest) => format!(
                "Allow \"{}\" with {}? ({})",
                self.tool_name, digest, self.reason
            ),
        }
    }
}

/// The digest of a request's arguments: their size and keyed hash as compact JSON (the
/// audit log's `argument_size` and `argument_hash`, under the registry's
/// [`audit_hash_key`](crate::RegistryBuilder::audit_hash_key)), made when the request is,
/// and what a store keeps of the arguments of a request that was denied, expired or was
/// revoked.
///
/// ```
/// use registry_core::approval::ArgumentDigest;
///
/// let digest = ArgumentDigest::from_parts(20, Some("00c0ffee00c0ffee".into()));
/// assert_eq!(digest.size(), 20);
/// assert_eq!(digest.hash().map(str::len), Some(16));
/// assert!(digest.to_string().starts_with("(arguments discarded: 20 bytes, hash "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgumentDigest {
    size: u64,
    /// Absent for arguments discarded by a database migration, which could not hash them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hash: Option<String>,
}

impl ArgumentDigest {
    /// The digest of `arguments` under the registry's audit key.
    pub(crate) fn keyed(
        key: &crate::shared::audit_key::AuditKey,
        arguments: &Value,
    ) -> ArgumentDigest {
        let (size, hash) = crate::shared::audit_key::argument_fingerprint(key, arguments);
        ArgumentDigest {
            size: u64::try_from(size).unwrap_or(u64::MAX),
            hash: Some(hash),
        }
    }

    /// The size of `arguments`, without a hash: for a request stored before its digest was.
    fn unhashed(arguments: &Value) -> ArgumentDigest {
        let size = serde_json::to_vec(arguments).map_or(0, |json| json.len());
        ArgumentDigest {
            size: u64::try_from(size).unwrap_or(u64::MAX),
            hash: None,
        }
    }

    /// A digest as a store read it back: the size, and the hash if it was recorded.
    pub fn from_parts(size: u64, hash: Option<String>) -> ArgumentDigest {
        ArgumentDigest { size, hash }
    }

    /// The arguments' size in bytes, as compact JSON.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Their keyed hash as compact JSON, in hex (the audit log's `argument_hash`); `None`
    /// when the store could not record it.
    pub fn hash(&self) -> Option<&str> {
        self.hash.as_deref()
    }
}

impl fmt::Display for ArgumentDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.hash {
            Some(hash) => write!(f, "(arguments discarded: {} bytes, hash {hash})", self.size),
            None => write!(f, "(arguments discarded: {} bytes)", self.size),
        }
    }
}

/// Where an approval request stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalState {
    /// Waiting for a person.
    Pending,
    /// Approved, and run (with the arguments as requested, or as edited).
    Approved {
        /// Who approved, if the application said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        /// Whether it ran with edited arguments.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        edited: bool,
    },
    /// Denied by a person.
    Denied {
        /// Who denied, if the application said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        /// Why.
        reason: String,
    },
    /// Not decided in time.
    Expired,
    /// The tool was revoked or replaced before a decision.
    Revoked,
}

impl ApprovalState {
    /// Whether it is still waiting.
    pub fn is_pending(&self) -> bool {
        matches!(self, ApprovalState::Pending)
    }

    /// The state's name alone, without who decided or why: `pending`, `approved`, `denied`,
    /// `expired` or `revoked`. What a client or a model may be told; the
    /// [`Display`](fmt::Display) form, which names who decided, is for operators and logs.
    ///
    /// ```
    /// use registry_core::approval::ApprovalState;
    ///
    /// let state = ApprovalState::Denied { by: Some("ana".into()), reason: "no".into() };
    /// assert_eq!(state.kind(), "denied");
    /// assert_eq!(state.to_string(), "denied by ana");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved { .. } => "approved",
            ApprovalState::Denied { .. } => "denied",
            ApprovalState::Expired => "expired",
            ApprovalState::Revoked => "revoked",
        }
    }

    /// Whether the request left pending without running: denied, expired or revoked. Its
    /// arguments are discarded then ([`ApprovalRequest::discard_arguments`]).
    pub fn discards_arguments(&self) -> bool {
        matches!(
            self,
            ApprovalState::Denied { .. } | ApprovalState::Expired | ApprovalState::Revoked
        )
    }
}

impl fmt::Display for ApprovalState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApprovalState::Pending => f.write_str("pending"),
            ApprovalState::Approved { by: Some(by), .. } => write!(f, "approved by {by}"),
            ApprovalState::Approved { by: None, .. } => f.write_str("approved"),
            ApprovalState::Denied { by: Some(by), .. } => write!(f, "denied by {by}"),
            ApprovalState::Denied { by: None, .. } => f.write_str("denied"),
            ApprovalState::Expired => f.write_str("expired"),
            ApprovalState::Revoked => f.write_str("revoked"),
        }
    }
}

/// What a person decides about a pending [`ApprovalRequest`]: approve it (as requested, or
/// with edited arguments) or deny it, and who decided. Given to
/// [`Run::decide`](crate::Run::decide) or
/// [`Run::decide_blocking`](crate::Run::decide_blocking).
///
/// ```
/// use registry_core::approval::Verdict;
/// use serde_json::json;
///
/// let yes = Verdict::approve().by("ana@example.com");
/// assert!(yes.is_approval());
/// assert_eq!(yes.decided_by(), Some("ana@example.com"));
///
/// let edited = Verdict::approve().with_arguments(json!({"project": "web", "force": false}));
/// assert_eq!(edited.arguments(), Some(&json!({"project": "web", "force": false})));
///
/// let no = Verdict::deny("not during the freeze").by("bo");
/// assert_eq!(no.reason(), Some("not during the freeze"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a verdict does nothing until it is given to `Run::decide`"]
pub struct Verdict {
    pub(crate) kind: VerdictKind,
    pub(crate) by: Option<String>,
    pub(crate) arguments: Option<Value>,
}

/// Approve or deny.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum VerdictKind {
    Approve,
    Deny { reason: String },
}

impl Verdict {
    /// Approve: the call runs, with exactly the arguments requested unless
    /// [`with_arguments`](Self::with_arguments) edits them.
    pub fn approve() -> Verdict {
        Verdict {
            kind: VerdictKind::Approve,
            by: None,
            arguments: None,
        }
    }

    /// Deny, for `reason`: the model is told a person denied the call, and why. Nothing runs.
    pub fn deny(reason: impl Into<String>) -> Verdict {
        Verdict {
            kind: VerdictKind::Deny {
                reason: reason.into(),
            },
            by: None,
            arguments: None,
        }
    }

    /// Records who decided (for the audit log and the request's state).
    pub fn by(mut self, person: impl Into<String>) -> Verdict {
        self.by = Some(person.into());
        self
    }

    /// Approves with these arguments instead of the requested ones. They are validated
    /// again against the tool's schema (the request stays pending if they are invalid) and
    /// pass the call policies again (a denial still denies); the audit log records the
    /// approval as edited. For an approval only: a denial with arguments is refused with
    /// [`ApprovalError::ArgumentsOnDenial`].
    pub fn with_arguments(mut self, arguments: Value) -> Verdict {
        self.arguments = Some(arguments);
        self
    }

    /// Whether this approves.
    pub fn is_approval(&self) -> bool {
        matches!(self.kind, VerdictKind::Approve)
    }

    /// Who decided, if given.
    pub fn decided_by(&self) -> Option<&str> {
        self.by.as_deref()
    }

    /// Why it denies; `None` for an approval.
    pub fn reason(&self) -> Option<&str> {
        match &self.kind {
            VerdictKind::Approve => None,
            VerdictKind::Deny { reason } => Some(reason),
        }
    }

    /// The edited arguments, if any.
    pub fn arguments(&self) -> Option<&Value> {
        self.arguments.as_ref()
    }
}

/// Why a [`Verdict`] could not be applied: nothing was settled, and the request (if there is
/// one) is as it was. Each says what happened and what to do.
///
/// A decision that settles the call, whatever it settles it as (it ran, it was denied, it
/// had expired, its tool was revoked or replaced), is never an error:
/// [`Run::decide`](crate::Run::decide) answers `Ok` with the observation for the model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No request has this id (in this registry's approval store).
    #[error("no approval request has the id {id:?}; it may belong to another registry's store")]
    UnknownId {
        /// The id given.
        id: String,
    },
    /// The request was decided already: an approval runs its call at most once. The text
    /// names how (approved, denied, expired, revoked) but never who decided: it may reach a
    /// client or a model; [`state`](Self::AlreadyDecided::state) holds who, for the log.
    #[error("the approval request {id:?} was already decided ({}); a call runs at most once", .state.kind())]
    AlreadyDecided {
        /// The id.
        id: String,
        /// How it was decided.
        state: ApprovalState,
    },
    /// The run deciding is not the run that asked: its allowed set (what the model was
    /// shown) or its subject (tenant, agent or principal) differs. Said before anything else
    /// is looked at, so that another principal learns nothing of the request, not even
    /// whether it was decided.
    #[error(
        "the approval request {id:?} was made in a run with another allowed set or subject; decide it from a run opened for the same subject (tenant, agent and principal) with the same tools"
    )]
    OtherRun {
        /// The id.
        id: String,
    },
    /// The edited arguments do not validate against the tool's schema; the request is still
    /// pending, to approve with arguments that do.
    #[error("the edited arguments for approval request {id:?} are invalid: {}", list(.problems))]
    InvalidArguments {
        /// The id.
        id: String,
        /// Every problem found.
        problems: Vec<ArgumentProblem>,
    },
    /// A denial came with edited arguments ([`Verdict::with_arguments`] is for approvals
    /// only); nothing was decided.
    #[error(
        "the verdict on approval request {id:?} denies it but carries edited arguments; arguments go with an approval only, so nothing was decided"
    )]
    ArgumentsOnDenial {
        /// The id.
        id: String,
    },
    /// The approval store failed; nothing was decided and nothing ran.
    #[error("the approval store failed: {0}; nothing was decided")]
    Store(#[from] StoreError),
}

fn list(problems: &[ArgumentProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A store (of approvals or quotas) that could not answer. The gate fails closed on it:
/// nothing runs that it cannot know is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(String);

impl StoreError {
    /// An error with this message, for store implementations.
    pub fn new(message: impl Into<String>) -> StoreError {
        StoreError(message.into())
    }
}

/// How long a request waits by default before it expires: 15 minutes.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(15 * 60);

/// How many requests may wait at once per principal by default: 64.
pub(crate) const DEFAULT_MAX_PENDING: usize = 64;

/// A new request id: `apr_` and 128 random bits in hex.
pub(crate) fn new_id() -> Result<String, StoreError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| StoreError::new(format!("no randomness for an approval id: {error}")))?;
    Ok(format!("apr_{:032x}", u128::from_le_bytes(bytes)))
}

pub(crate) mod unix_ms {
    use std::time::{Duration, SystemTime};

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(at: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        let ms = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| {
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            });
        s.serialize_u64(ms)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let ms = u64::deserialize(d)?;
        Ok(SystemTime::UNIX_EPOCH + Duration::from_millis(ms))
    }
}
