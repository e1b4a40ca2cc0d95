//! Approval requests in `registry_approvals`: decided on any replica, exactly once.

use std::time::SystemTime;

use registry_core::{
    approval::{
        ApprovalRequest, ApprovalState, ApprovalStore, ArgumentDigest, Insertion, Transition,
    },
    gate::StoreError,
};
use serde_json::Value;
use tokio_postgres::Row;

use crate::error::Error;
use crate::plane::ControlPlane;
use crate::records::{ApprovalFilter, ApprovalRecord, VerdictOutcome};
use crate::text;
use registry_core::approval::Verdict;

/// The channel an operator's verdict is announced on; the payload is the request's id.
pub(crate) const VERDICTS: &str = "registry_verdicts";

/// The [`ApprovalStore`] of the control plane: a request made on one replica can be decided
/// on any other, and [`decide`](ApprovalStore::decide) moves it out of `pending` exactly
/// once across all of them (one conditional `UPDATE`): of two replicas approving at the same
/// moment, one runs the call and the other is told it was decided already.
///
/// - **Exactly what was asked.** The request and its arguments are kept as `bytea`, apart
///   (columns `body` and `arguments`): they read back byte for byte (NUL included), so an
///   approved call runs with exactly the arguments the model sent (the registry validates
///   them again before it runs). The audit trail never holds argument values.
/// - **Arguments discarded once they will not run.** A request denied, expired or revoked
///   keeps its arguments' digest only (`arguments_size`, `arguments_hash`: the audit log's
///   `argument_hash`); operators' views say "arguments discarded".
/// - **Bounded per owner, atomically.** [`insert_bounded`](ApprovalStore::insert_bounded)
///   counts the owner's requests (a principal's, or a tenant's and agent's without one) and
///   keeps the new one in one transaction, under an advisory lock on the owner: concurrent
///   calls on any replicas never leave more than the bound pending. Each owner has a share:
///   [`DEFAULT_MAX_REQUESTS_PER_PRINCIPAL`](Self::DEFAULT_MAX_REQUESTS_PER_PRINCIPAL)
///   requests pending or decided within the last minute, whose arguments take at most
///   [`DEFAULT_MAX_BYTES_PER_PRINCIPAL`](Self::DEFAULT_MAX_BYTES_PER_PRINCIPAL)
///   ([`with_shares`](Self::with_shares)); one request's arguments take at most
///   [`DEFAULT_MAX_REQUEST_BYTES`](Self::DEFAULT_MAX_REQUEST_BYTES)
///   ([`with_max_request_bytes`](Self::with_max_request_bytes)). The rows of decided
///   requests go with the plane's retention ([`ControlPlane::prune`]).
///
/// When the database cannot answer, the call that needs approval is refused, and an
/// approval is not applied (the gate fails closed).
///
/// ```no_run
/// # async fn build(plane: registry_postgres::ControlPlane) -> Result<(), registry_core::RegistryError> {
/// let registry = registry_core::Registry::builder()
///     .declared()
///     .approval_store(plane.approval_store().with_shares(100, 1 << 20))
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PgApprovalStore {
    plane: ControlPlane,
    max_requests_per_owner: usize,
    max_bytes_per_owner: usize,
    max_request_bytes: usize,
}

/// The class of the advisory locks taken on an owner's requests while one is inserted
/// ("appr" in ASCII); the second key is the hash of the owner.
const OWNER_LOCK: i32 = 0x6170_7072;

/// How long a decided request counts against its owner's share: one minute, as in memory.
const SHARE_WINDOW_SECS: f64 = 60.0;

/// The columns a request is read from, in this order (see [`request_from`]).
const REQUEST_COLUMNS: &str = "request, body, arguments, arguments_size, arguments_hash";

impl ControlPlane {
    /// The approval store on this plane, with the default shares.
    pub fn approval_store(&self) -> PgApprovalStore {
        PgApprovalStore {
            plane: self.clone(),
            max_requests_per_owner: PgApprovalStore::DEFAULT_MAX_REQUESTS_PER_PRINCIPAL,
            max_bytes_per_owner: PgApprovalStore::DEFAULT_MAX_BYTES_PER_PRINCIPAL,
            max_request_bytes: PgApprovalStore::DEFAULT_MAX_REQUEST_BYTES,
        }
    }

    /// Approval requests, newest first: every one, or the pending ones.
    pub async fn approvals(&self, filter: &ApprovalFilter) -> Result<Vec<ApprovalRecord>, Error> {
        self.timed("listing approvals", async {
            let client = self.client().await?;
            let limit = filter.limit.unwrap_or(100);
            let rows = client
                .query(
                    "SELECT id, tool, tenant, agent, reason, request, state, decision,
                            requested_at, expires_at, verdict, origin, principal,
                            body, arguments, arguments_size, arguments_hash
                       FROM registry_approvals
                      WHERE NOT $1 OR (state = 'pending' AND expires_at > now())
                      ORDER BY requested_at DESC LIMIT $2",
                    &[&filter.pending, &limit],
                )
                .await
                .map_err(Error::db("listing approvals"))?;
            rows.iter().map(record_of).collect()
        })
        .await
    }

    /// Records an operator's verdict on a pending request, at most once: the first verdict
    /// wins, and a request already decided is left as it is.
    ///
    /// A denial decides the request at once: nothing will run. An approval is applied by the
    /// replica whose client waits on the request (it runs the call once, through its run,
    /// which checks the tool was neither revoked nor replaced since).
    ///
    /// This is not a second way to decide a request: it writes an operator's verdict to the
    /// database, for another process to act on. The one way to decide a request in the
    /// process whose run made it is [`Run::decide`](registry_core::Run::decide), which the
    /// waiting replica calls with this verdict (and which passes the call through the gate
    /// again).
    pub async fn give_verdict(&self, id: &str, verdict: &Verdict) -> Result<VerdictOutcome, Error> {
        // Every text stored as PostgreSQL can store it (the id too, as it was stored).
        let id = text::text(id);
        let id = &*id;
        let Some(by) = verdict.decided_by() else {
            return Err(Error::InvalidVerdict(
                "an operator's verdict names who gives it: `Verdict::approve().by(\"name\")`"
                    .to_owned(),
            ));
        };
        if verdict.arguments().is_some() {
            return Err(Error::InvalidVerdict(
                "an operator approves a request as it was asked; edited arguments are given through its run (`Run::decide`)"
                    .to_owned(),
            ));
        }
        let by = text::owned(by.to_owned());
        let by = &by;
        // `None` approves; a denial has its reason.
        let denial = verdict
            .reason()
            .map(|reason| text::owned(reason.to_owned()));
        self.timed("giving a verdict", async {
            let mut client = self.client().await?;
            let transaction = client
                .transaction()
                .await
                .map_err(Error::db("giving a verdict"))?;
            let row = transaction
                .query_opt(
                    "SELECT state, verdict, verdict_by, expires_at <= now()
                       FROM registry_approvals WHERE id = $1 FOR UPDATE",
                    &[&id],
                )
                .await
                .map_err(Error::db("giving a verdict"))?;
            let Some(row) = row else {
                return Ok(VerdictOutcome::Unknown);
            };
            let state: String = row.get(0);
            let given: Option<String> = row.get(1);
            let given_by: Option<String> = row.get(2);
            let expired: bool = row.get(3);
            if state != "pending" {
                return Ok(VerdictOutcome::AlreadyDecided { state });
            }
            if let Some(given) = given {
                let by = given_by.unwrap_or_default();
                return Ok(VerdictOutcome::AlreadyDecided {
                    state: format!("{given} given by {by}"),
                });
            }
            if expired {
                let decision = serde_json::to_value(ApprovalState::Expired).unwrap_or(Value::Null);
                transaction
                    .execute(
                        "UPDATE registry_approvals SET state = 'expired', decision = $2,
                                decided_at = now(), arguments = NULL WHERE id = $1",
                        &[&id, &decision],
                    )
                    .await
                    .map_err(Error::db("expiring a request"))?;
                transaction
                    .commit()
                    .await
                    .map_err(Error::db("expiring a request"))?;
                return Ok(VerdictOutcome::Expired);
            }
            match &denial {
                None => {
                    transaction
                        .execute(
                            "UPDATE registry_approvals SET verdict = 'approve', verdict_by = $2,
                                    verdict_at = now() WHERE id = $1",
                            &[&id, by],
                        )
                        .await
                        .map_err(Error::db("recording an approval"))?;
                }
                Some(reason) => {
                    let state = ApprovalState::Denied {
                        by: Some(by.clone()),
                        reason: reason.clone(),
                    };
                    let decision = serde_json::to_value(state).unwrap_or(Value::Null);
                    transaction
                        .execute(
                            "UPDATE registry_approvals SET verdict = 'deny', verdict_by = $2,
                                    verdict_reason = $3, verdict_at = now(), state = 'denied',
                                    decision = $4, decided_at = now(), arguments = NULL
                              WHERE id = $1",
                            &[&id, by, reason, &decision],
                        )
                        .await
                        .map_err(Error::db("recording a denial"))?;
                }
            }
            // On the audit trail too, as the replica's own approval events are.
            let (outcome, reason) = match &denial {
                None => ("approve_given", None),
                Some(reason) => ("denied", Some(reason)),
            };
            let event = serde_json::json!({
                "event": "approval", "kind": outcome, "id": id, "by": by, "reason": reason,
            });
            transaction
                .execute(
                    "INSERT INTO audit_events
                         (at, replica, kind, run_id, tenant, tool, call_id, outcome, approval_id, event,
                      principal)
                     SELECT now(), $2, 'approval', run_id, tenant, tool, call_id, $3, id, $4,
                            principal
                       FROM registry_approvals WHERE id = $1",
                    &[&id, &text::text(self.replica()), &outcome, &text::json(event)],
                )
                .await
                .map_err(Error::db("auditing a verdict"))?;
            transaction
                .execute("SELECT pg_notify($1, $2)", &[&VERDICTS, &id])
                .await
                .map_err(Error::db("announcing a verdict"))?;
            transaction
                .commit()
                .await
                .map_err(Error::db("committing a verdict"))?;
            Ok(VerdictOutcome::Given)
        })
        .await
    }

    /// An operator's approval waiting on request `id`: who gave it. `None` when there is
    /// none, or the request is no longer pending.
    pub async fn pending_approval_by(&self, id: &str) -> Result<Option<String>, Error> {
        self.timed("reading a verdict", async {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT verdict_by FROM registry_approvals
                      WHERE id = $1 AND state = 'pending' AND verdict = 'approve'",
                    &[&text::text(id)],
                )
                .await
                .map_err(Error::db("reading a verdict"))?;
            Ok(row.and_then(|row| row.get(0)))
        })
        .await
    }
}

impl PgApprovalStore {
    /// How many requests (pending, or decided within the last minute) one principal holds at
    /// most by default: 500, as [`MemoryApprovalStore`](registry_core::approval::MemoryApprovalStore).
    pub const DEFAULT_MAX_REQUESTS_PER_PRINCIPAL: usize = 500;
    /// How many bytes of arguments (as JSON) one principal's requests hold at most by
    /// default: 4 MiB.
    pub const DEFAULT_MAX_BYTES_PER_PRINCIPAL: usize = 4 << 20;
    /// How many bytes of arguments (as JSON) one request holds at most by default: 256 KiB.
    pub const DEFAULT_MAX_REQUEST_BYTES: usize = 256 << 10;

    /// Holds at most `max_requests` requests of one principal (or of one tenant and agent
    /// without a principal), pending or decided within the last minute, whose arguments take
    /// at most `max_bytes` as JSON: one principal cannot fill the database for the others.
    #[must_use]
    pub fn with_shares(mut self, max_requests: usize, max_bytes: usize) -> Self {
        self.max_requests_per_owner = max_requests;
        self.max_bytes_per_owner = max_bytes;
        self
    }

    /// Holds no request whose arguments take more than `max_bytes` as JSON.
    #[must_use]
    pub fn with_max_request_bytes(mut self, max_bytes: usize) -> Self {
        self.max_request_bytes = max_bytes;
        self
    }

    /// Keeps `request` within its owner's share and, given `max_pending`, its bound of
    /// pending requests: counted and kept in one transaction, under the owner's lock.
    async fn insert_request(
        &self,
        request: &ApprovalRequest,
        max_pending: Option<usize>,
    ) -> Result<Insertion, Error> {
        let corrupt = |error: serde_json::Error| Error::Corrupt {
            table: "registry_approvals",
            detail: error.to_string(),
        };
        let mut value = serde_json::to_value(request).map_err(corrupt)?;
        if let Some(map) = value.as_object_mut() {
            map.remove("arguments");
        }
        let body = serde_json::to_vec(&value).map_err(corrupt)?;
        let arguments = serde_json::to_vec(request.arguments()).map_err(corrupt)?;
        if arguments.len() > self.max_request_bytes {
            return Ok(Insertion::TooLarge {
                bytes: arguments.len(),
                max: self.max_request_bytes,
            });
        }
        let digest = request.argument_digest();
        let size = i64::try_from(digest.size()).unwrap_or(i64::MAX);
        let operators = text::json(value);
        let (owner, tenant, agent, principal) = owner_of(request);
        let mut client = self.plane.client().await?;
        let transaction = client
            .transaction()
            .await
            .map_err(Error::db("keeping an approval request"))?;
        transaction
            .execute(
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[&OWNER_LOCK, &owner],
            )
            .await
            .map_err(Error::db(
                "taking the lock on the owner's approval requests",
            ))?;
        let mine = "((principal = $1) OR ($1 IS NULL AND principal IS NULL AND tenant = $2
                      AND agent IS NOT DISTINCT FROM $3))";
        // The owner's requests that expired undecided will not run: their arguments go.
        transaction
            .execute(
                &format!(
                    "UPDATE registry_approvals SET arguments = NULL
                      WHERE {mine} AND state = 'pending' AND expires_at <= now()
                        AND arguments IS NOT NULL"
                ),
                &[&principal, &tenant, &agent],
            )
            .await
            .map_err(Error::db(
                "discarding the arguments of expired approval requests",
            ))?;
        let row = transaction
            .query_one(
                &format!(
                    "SELECT count(*) FILTER (WHERE state = 'pending' AND expires_at > now()),
                            count(*),
                            COALESCE(sum(octet_length(arguments)), 0)::bigint
                       FROM registry_approvals
                      WHERE {mine}
                        AND (state = 'pending'
                             OR decided_at > now() - make_interval(secs => {SHARE_WINDOW_SECS}))"
                ),
                &[&principal, &tenant, &agent],
            )
            .await
            .map_err(Error::db("counting the owner's approval requests"))?;
        let count = |index: usize| usize::try_from(row.get::<_, i64>(index)).unwrap_or(usize::MAX);
        let (pending, kept, kept_bytes) = (count(0), count(1), count(2));
        if let Some(max_pending) = max_pending
            && pending >= max_pending
        {
            return Ok(Insertion::TooManyPending { pending });
        }
        if kept >= self.max_requests_per_owner {
            return Ok(Insertion::ShareFull {
                detail: format!(
                    "this principal holds {kept} approval requests pending or decided within a minute, its share (PgApprovalStore::with_shares); decide or let expire the waiting ones"
                ),
            });
        }
        if kept_bytes + arguments.len() > self.max_bytes_per_owner {
            return Ok(Insertion::ShareFull {
                detail: format!(
                    "this principal's approval requests hold {kept_bytes} bytes of arguments, {} more asked, its share is {} (PgApprovalStore::with_shares); decide or let expire the waiting ones",
                    arguments.len(),
                    self.max_bytes_per_owner
                ),
            });
        }
        transaction
            .execute(
                "INSERT INTO registry_approvals
                     (id, tool, tenant, agent, run_id, call_id, reason, request,
                      requested_at, expires_at, origin, principal,
                      body, arguments, arguments_size, arguments_hash)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
                         $13, $14, $15, $16)",
                &[
                    &text::text(request.id()),
                    &text::text(request.tool_name()),
                    &tenant,
                    &agent,
                    &text::text(request.run_id()),
                    &text::text(request.call_id()),
                    &text::text(request.reason()),
                    &operators,
                    &request.requested_at(),
                    &request.expires_at(),
                    &text::text(self.plane.replica()),
                    &principal,
                    &body,
                    &arguments,
                    &size,
                    &digest.hash(),
                ],
            )
            .await
            .map_err(Error::db("keeping an approval request"))?;
        transaction
            .commit()
            .await
            .map_err(Error::db("keeping an approval request"))?;
        Ok(Insertion::Inserted)
    }

    async fn get_request(
        &self,
        id: &str,
    ) -> Result<Option<(ApprovalRequest, ApprovalState)>, Error> {
        let client = self.plane.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT {REQUEST_COLUMNS}, decision FROM registry_approvals WHERE id = $1"
                ),
                &[&text::text(id)],
            )
            .await
            .map_err(Error::db("reading an approval request"))?;
        let Some(row) = row else { return Ok(None) };
        let request = request_from(&row, 0, 1)?;
        let decision: Option<Value> = row.get(5);
        let state = match decision {
            None => ApprovalState::Pending,
            Some(decision) => state_of(decision)?,
        };
        Ok(Some((request, state)))
    }

    /// The pending, unexpired requests of `request`'s owner: its principal, or (without one)
    /// its tenant and agent; one scan of a partial index.
    async fn count_pending(&self, request: &ApprovalRequest) -> Result<usize, Error> {
        let client = self.plane.client().await?;
        let row = match request.principal() {
            Some(principal) => {
                client
                    .query_one(
                        "SELECT count(*) FROM registry_approvals
                      WHERE state = 'pending' AND principal = $1 AND expires_at > now()",
                        &[&text::text(principal)],
                    )
                    .await
            }
            None => {
                client
                    .query_one(
                        "SELECT count(*) FROM registry_approvals
                      WHERE state = 'pending' AND principal IS NULL AND tenant = $1
                        AND agent IS NOT DISTINCT FROM $2 AND expires_at > now()",
                        &[&text::text(request.tenant()), &text::opt(request.agent())],
                    )
                    .await
            }
        }
        .map_err(Error::db("counting pending approval requests"))?;
        let count: i64 = row.get(0);
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    async fn decide_request(&self, id: &str, state: ApprovalState) -> Result<Transition, Error> {
        let word = state_word(&state);
        let discard = state.discards_arguments();
        let decision = serde_json::to_value(&state).map_err(|error| Error::Corrupt {
            table: "registry_approvals",
            detail: error.to_string(),
        })?;
        let decision = text::json(decision);
        let id = text::text(id);
        let id = &*id;
        let client = self.plane.client().await?;
        // A request that will not run keeps its arguments' digest only.
        let won = client
            .query_opt(
                &format!(
                    "UPDATE registry_approvals SET state = $2, decision = $3, decided_at = now(),
                            arguments = CASE WHEN $4 THEN NULL ELSE arguments END
                      WHERE id = $1 AND state = 'pending' RETURNING {REQUEST_COLUMNS}"
                ),
                &[&id, &word, &decision, &discard],
            )
            .await
            .map_err(Error::db("deciding an approval request"))?;
        if let Some(row) = won {
            return Ok(Transition::Decided(Box::new(request_from(&row, 0, 1)?)));
        }
        let row = client
            .query_opt(
                "SELECT decision FROM registry_approvals WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(Error::db("reading an approval request"))?;
        match row.map(|row| row.get::<_, Option<Value>>(0)) {
            None => Ok(Transition::Unknown),
            Some(Some(decision)) => Ok(Transition::AlreadyDecided(state_of(decision)?)),
            // Pending without a decision, yet the update matched nothing: it was decided and
            // the decision is being written by another transaction; it is no longer ours.
            Some(None) => Ok(Transition::AlreadyDecided(ApprovalState::Pending)),
        }
    }
}

/// The owner of `request` as the table writes it: the lock's key, the tenant, agent and
/// principal columns.
fn owner_of(request: &ApprovalRequest) -> (String, String, Option<String>, Option<String>) {
    let tenant = text::owned(request.tenant().to_owned());
    let agent = request.agent().map(|agent| text::owned(agent.to_owned()));
    let principal = request
        .principal()
        .map(|principal| text::owned(principal.to_owned()));
    let owner = match &principal {
        Some(principal) => format!("p{principal}"),
        None => format!(
            "t{}:{tenant}{}",
            tenant.len(),
            agent.as_deref().unwrap_or("")
        ),
    };
    (owner, tenant, agent, principal)
}

impl ApprovalStore for PgApprovalStore {
    /// Woken by the database (`LISTEN`/`NOTIFY`, one listener connection per plane); see
    /// `approval_wake.rs`.
    fn watch(&self, id: &str) -> Option<registry_core::definition::BoxFuture<'static, ()>> {
        self.plane.watch_approval(id)
    }

    fn insert<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> registry_core::definition::BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let insertion = self
                .plane
                .timed(
                    "keeping an approval request",
                    self.insert_request(request, None),
                )
                .await
                .map_err(StoreError::from)?;
            match insertion {
                Insertion::Inserted => Ok(()),
                Insertion::ShareFull { detail } => Err(StoreError::new(detail)),
                Insertion::TooLarge { bytes, max } => Err(StoreError::new(format!(
                    "the approval request's arguments take {bytes} bytes, more than the {max} one request may hold (PgApprovalStore::with_max_request_bytes)"
                ))),
                Insertion::TooManyPending { pending } => Err(StoreError::new(format!(
                    "{pending} approval requests of this principal are pending"
                ))),
                _ => Err(StoreError::new("the approval request was not kept")),
            }
        })
    }

    fn insert_bounded<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        max_pending: usize,
    ) -> registry_core::definition::BoxFuture<'a, Result<Insertion, StoreError>> {
        Box::pin(async move {
            self.plane
                .timed(
                    "keeping an approval request",
                    self.insert_request(request, Some(max_pending)),
                )
                .await
                .map_err(StoreError::from)
        })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> registry_core::definition::BoxFuture<
        'a,
        Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>,
    > {
        Box::pin(async move {
            self.plane
                .timed("reading an approval request", self.get_request(id))
                .await
                .map_err(StoreError::from)
        })
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        state: ApprovalState,
    ) -> registry_core::definition::BoxFuture<'a, Result<Transition, StoreError>> {
        Box::pin(async move {
            self.plane
                .timed(
                    "deciding an approval request",
                    self.decide_request(id, state),
                )
                .await
                .map_err(StoreError::from)
        })
    }

    fn approved_outside<'a>(
        &'a self,
        id: &'a str,
    ) -> registry_core::definition::BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move {
            self.plane
                .pending_approval_by(id)
                .await
                .map_err(StoreError::from)
        })
    }

    fn pending_count<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> registry_core::definition::BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(async move {
            self.plane
                .timed(
                    "counting pending approval requests",
                    self.count_pending(request),
                )
                .await
                .map_err(StoreError::from)
        })
    }
}

/// The word of `state` in the `state` column: [`ApprovalState::kind`], one of the five the
/// table knows.
fn state_word(state: &ApprovalState) -> &'static str {
    match state.kind() {
        word @ ("pending" | "approved" | "denied" | "expired" | "revoked") => word,
        // A state a newer core adds: recorded as decided all the same.
        _ => "denied",
    }
}

/// The request read from `row`: its exact bytes (`body`, `arguments`, `arguments_size` and
/// `arguments_hash`, from column `exact` on), or, for a row written before version 16 of the
/// schema, its `request` (jsonb, column `legacy`). Arguments discarded read as `null`, with
/// their digest.
fn request_from(row: &Row, legacy: usize, exact: usize) -> Result<ApprovalRequest, Error> {
    let corrupt = |what: &str, error: serde_json::Error| Error::Corrupt {
        table: "registry_approvals",
        detail: format!("{what}: {error}"),
    };
    let legacy: Value = row.get(legacy);
    let body: Option<Vec<u8>> = row.get(exact);
    let arguments: Option<Vec<u8>> = row.get(exact + 1);
    let size: Option<i64> = row.get(exact + 2);
    let hash: Option<String> = row.get(exact + 3);
    let exact = body.is_some();
    let mut value = match body {
        Some(body) => serde_json::from_slice(&body).map_err(|error| corrupt("body", error))?,
        None => legacy,
    };
    let Some(map) = value.as_object_mut() else {
        return Err(Error::Corrupt {
            table: "registry_approvals",
            detail: "request: not a JSON object".to_owned(),
        });
    };
    match arguments {
        Some(arguments) => {
            let arguments =
                serde_json::from_slice(&arguments).map_err(|error| corrupt("arguments", error))?;
            map.insert("arguments".to_owned(), arguments);
        }
        None if exact || !map.contains_key("arguments") => {
            let size = u64::try_from(size.unwrap_or(0)).unwrap_or(0);
            let digest = ArgumentDigest::from_parts(size, hash);
            let digest = serde_json::to_value(digest).map_err(|error| corrupt("digest", error))?;
            map.insert("arguments".to_owned(), Value::Null);
            map.insert("discarded".to_owned(), digest);
        }
        None => {}
    }
    serde_json::from_value(value).map_err(|error| corrupt("request", error))
}

fn state_of(value: Value) -> Result<ApprovalState, Error> {
    serde_json::from_value(value).map_err(|error| Error::Corrupt {
        table: "registry_approvals",
        detail: format!("decision: {error}"),
    })
}

fn record_of(row: &Row) -> Result<ApprovalRecord, Error> {
    let request = request_from(row, 5, 13)?;
    let decision: Option<Value> = row.get(7);
    let decided_by = decision.and_then(|decision| {
        decision
            .get("by")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let expires_at: SystemTime = row.get(9);
    let mut state: String = row.get(6);
    if state == "pending" && expires_at <= SystemTime::now() {
        state = "expired".to_owned();
    }
    Ok(ApprovalRecord {
        id: row.get(0),
        tool: row.get(1),
        tenant: row.get(2),
        agent: row.get(3),
        reason: row.get(4),
        question: request.question(),
        state,
        decided_by,
        requested_at: row.get(8),
        expires_at,
        verdict: row.get(10),
        origin: row.get(11),
        principal: row.get(12),
    })
}
