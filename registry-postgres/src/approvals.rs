//! Approval requests in `registry_approvals`: decided on any replica, exactly once.

use std::time::SystemTime;

use registry_core::{
    approval::{ApprovalRequest, ApprovalState, ApprovalStore, Transition},
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
/// The request is kept whole, arguments included, since an approved call runs with exactly
/// them; the audit trail never holds argument values. When the database cannot answer, the
/// call that needs approval is refused, and an approval is not applied (the gate fails closed).
///
/// ```no_run
/// # async fn build(plane: registry_postgres::ControlPlane) -> Result<(), registry_core::RegistryError> {
/// let registry = registry_core::Registry::builder()
///     .declared()
///     .approval_store(plane.approval_store())
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PgApprovalStore {
    plane: ControlPlane,
}

impl ControlPlane {
    /// The approval store on this plane.
    pub fn approval_store(&self) -> PgApprovalStore {
        PgApprovalStore {
            plane: self.clone(),
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
                            requested_at, expires_at, verdict, origin, principal
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
                                decided_at = now() WHERE id = $1",
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
                                    decision = $4, decided_at = now() WHERE id = $1",
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
    async fn insert_request(&self, request: &ApprovalRequest) -> Result<(), Error> {
        let body = serde_json::to_value(request).map_err(|error| Error::Corrupt {
            table: "registry_approvals",
            detail: error.to_string(),
        })?;
        let body = text::json(body);
        let client = self.plane.client().await?;
        client
            .execute(
                "INSERT INTO registry_approvals
                     (id, tool, tenant, agent, run_id, call_id, reason, request,
                      requested_at, expires_at, origin, principal)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                &[
                    &text::text(request.id()),
                    &text::text(request.tool_name()),
                    &text::text(request.tenant()),
                    &text::opt(request.agent()),
                    &text::text(request.run_id()),
                    &text::text(request.call_id()),
                    &text::text(request.reason()),
                    &body,
                    &request.requested_at(),
                    &request.expires_at(),
                    &text::text(self.plane.replica()),
                    &text::opt(request.principal()),
                ],
            )
            .await
            .map_err(Error::db("keeping an approval request"))?;
        Ok(())
    }

    async fn get_request(
        &self,
        id: &str,
    ) -> Result<Option<(ApprovalRequest, ApprovalState)>, Error> {
        let client = self.plane.client().await?;
        let row = client
            .query_opt(
                "SELECT request, decision FROM registry_approvals WHERE id = $1",
                &[&text::text(id)],
            )
            .await
            .map_err(Error::db("reading an approval request"))?;
        let Some(row) = row else { return Ok(None) };
        let request = request_of(row.get(0))?;
        let decision: Option<Value> = row.get(1);
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
        let decision = serde_json::to_value(&state).map_err(|error| Error::Corrupt {
            table: "registry_approvals",
            detail: error.to_string(),
        })?;
        let decision = text::json(decision);
        let id = text::text(id);
        let id = &*id;
        let client = self.plane.client().await?;
        let won = client
            .query_opt(
                "UPDATE registry_approvals SET state = $2, decision = $3, decided_at = now()
                  WHERE id = $1 AND state = 'pending' RETURNING request",
                &[&id, &word, &decision],
            )
            .await
            .map_err(Error::db("deciding an approval request"))?;
        if let Some(row) = won {
            return Ok(Transition::Decided(Box::new(request_of(row.get(0))?)));
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
            self.plane
                .timed("keeping an approval request", self.insert_request(request))
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

fn state_word(state: &ApprovalState) -> &'static str {
    match state {
        ApprovalState::Pending => "pending",
        ApprovalState::Approved { .. } => "approved",
        ApprovalState::Denied { .. } => "denied",
        ApprovalState::Expired => "expired",
        ApprovalState::Revoked => "revoked",
        // A state a newer core adds: recorded as decided all the same.
        _ => "denied",
    }
}

fn request_of(value: Value) -> Result<ApprovalRequest, Error> {
    serde_json::from_value(value).map_err(|error| Error::Corrupt {
        table: "registry_approvals",
        detail: format!("request: {error}"),
    })
}

fn state_of(value: Value) -> Result<ApprovalState, Error> {
    serde_json::from_value(value).map_err(|error| Error::Corrupt {
        table: "registry_approvals",
        detail: format!("decision: {error}"),
    })
}

fn record_of(row: &Row) -> Result<ApprovalRecord, Error> {
    let request = request_of(row.get(5))?;
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
