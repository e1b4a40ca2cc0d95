//! Deciding approval requests: approve (as requested, or edited) and deny.

use std::time::{Instant, SystemTime};

use serde_json::Value;

use super::{Decided, Resolved, Ticket, Verdict, denied_text, revoked_text, validate};
use crate::audit::{self, ApprovalEvent, ApprovalEventKind, AuditEvent};
use crate::discover::discovery::Entry;
use crate::discover::run::Run;
use crate::execute::context::CallOptions;
use crate::execute::observation::{ErrorKind, Observation};
use crate::gate::{ApprovalError, ApprovalRequest, ApprovalState, Transition};

/// How an approved call runs: who approved, the edited arguments, the call's host and
/// cancellation.
struct Approved {
    by: Option<String>,
    edited: Option<Value>,
    options: CallOptions,
}

/// What a person decided.
enum PersonVerdict {
    Approve {
        by: Option<String>,
        arguments: Option<Value>,
    },
    Deny {
        by: Option<String>,
        reason: String,
    },
}

impl Run {
    /// Approves the pending request `id` (from [`Observation::approval`]) and runs its call
    /// with exactly the arguments that were requested; the observation is the call's answer.
    ///
    /// The request must have been made by a run with the same allowed set and subject (this
    /// run, or one reopened for the same subject, say after a restart): the same tenant,
    /// agent and [principal](crate::Subject::principal); a run of another principal gets
    /// [`ApprovalError::OtherRun`], for an approval and a denial alike. It must be pending and not
    /// expired, and its tool must be neither revoked nor replaced since; otherwise an
    /// [`ApprovalError`] says which. It runs at most once, even when approved concurrently.
    ///
    /// ```
    /// use registry_core::{tool, ApprovalError, ErrorKind, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// /// Delete a project.
    /// #[tool(scopes = "project:admin", destructive, needs_approval)]
    /// fn delete_project(project: String) -> String {
    ///     format!("{project} deleted")
    /// }
    ///
    /// let registry = Registry::from_inventory().unwrap();
    /// let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["project:admin"]));
    ///
    /// let pending = run.call_blocking(ToolCall::new("c1", "delete_project", json!({"project": "web"})));
    /// assert_eq!(pending.error_kind(), Some(ErrorKind::ApprovalRequired));
    /// let request = pending.approval().unwrap();
    /// assert_eq!(request.arguments(), &json!({"project": "web"}));
    ///
    /// // A person says yes: the call runs, once.
    /// let done = run.approve_blocking(request.id()).unwrap();
    /// assert_eq!(done.call_id(), "c1");
    /// assert_eq!(done.content(), &json!("web deleted"));
    /// assert!(matches!(
    ///     run.approve_blocking(request.id()),
    ///     Err(ApprovalError::AlreadyDecided { .. })
    /// ));
    /// ```
    pub async fn approve(&self, id: &str) -> Result<Observation, ApprovalError> {
        let verdict = PersonVerdict::Approve {
            by: None,
            arguments: None,
        };
        self.decide_request(id, verdict, CallOptions::default())
            .await
    }

    /// [`approve`](Self::approve), recording who approved.
    pub async fn approve_by(
        &self,
        id: &str,
        approver: impl Into<String>,
    ) -> Result<Observation, ApprovalError> {
        let verdict = PersonVerdict::Approve {
            by: Some(approver.into()),
            arguments: None,
        };
        self.decide_request(id, verdict, CallOptions::default())
            .await
    }

    /// Approves the request `id` with edited arguments, which are validated again (the
    /// request stays pending if they are invalid) and pass the call policies again (a denial
    /// still denies); the audit log records the approval as edited.
    pub async fn approve_with(
        &self,
        id: &str,
        arguments: Value,
    ) -> Result<Observation, ApprovalError> {
        let verdict = PersonVerdict::Approve {
            by: None,
            arguments: Some(arguments),
        };
        self.decide_request(id, verdict, CallOptions::default())
            .await
    }

    /// [`approve_with`](Self::approve_with), recording who approved.
    pub async fn approve_with_by(
        &self,
        id: &str,
        arguments: Value,
        approver: impl Into<String>,
    ) -> Result<Observation, ApprovalError> {
        let verdict = PersonVerdict::Approve {
            by: Some(approver.into()),
            arguments: Some(arguments),
        };
        self.decide_request(id, verdict, CallOptions::default())
            .await
    }

    /// Denies the request `id`; the observation ([`ErrorKind::Denied`], with `reason`) is the
    /// call's answer for the model. Nothing runs.
    pub async fn deny(
        &self,
        id: &str,
        reason: impl Into<String>,
    ) -> Result<Observation, ApprovalError> {
        let verdict = PersonVerdict::Deny {
            by: None,
            reason: reason.into(),
        };
        self.decide_request(id, verdict, CallOptions::default())
            .await
    }

    /// [`deny`](Self::deny), recording who denied.
    pub async fn deny_by(
        &self,
        id: &str,
        reason: impl Into<String>,
        by: impl Into<String>,
    ) -> Result<Observation, ApprovalError> {
        let verdict = PersonVerdict::Deny {
            by: Some(by.into()),
            reason: reason.into(),
        };
        self.decide_request(id, verdict, CallOptions::default())
            .await
    }

    /// [`approve_by`](Self::approve_by), with the call's own host and cancellation for the
    /// call that runs (see [`Run::call_with`]): `registry-mcp` gives the approved call the
    /// host and cancellation of the `tools/call` it answers.
    pub async fn approve_by_with(
        &self,
        id: &str,
        approver: impl Into<String>,
        options: CallOptions,
    ) -> Result<Observation, ApprovalError> {
        let verdict = PersonVerdict::Approve {
            by: Some(approver.into()),
            arguments: None,
        };
        self.decide_request(id, verdict, options).await
    }

    /// [`approve`](Self::approve) on this thread, without an async runtime.
    pub fn approve_blocking(&self, id: &str) -> Result<Observation, ApprovalError> {
        pollster::block_on(self.approve(id))
    }

    /// [`approve_by`](Self::approve_by) on this thread, without an async runtime.
    pub fn approve_by_blocking(
        &self,
        id: &str,
        approver: impl Into<String>,
    ) -> Result<Observation, ApprovalError> {
        pollster::block_on(self.approve_by(id, approver))
    }

    /// [`approve_with`](Self::approve_with) on this thread, without an async runtime.
    pub fn approve_with_blocking(
        &self,
        id: &str,
        arguments: Value,
    ) -> Result<Observation, ApprovalError> {
        pollster::block_on(self.approve_with(id, arguments))
    }

    /// [`deny`](Self::deny) on this thread, without an async runtime.
    pub fn deny_blocking(
        &self,
        id: &str,
        reason: impl Into<String>,
    ) -> Result<Observation, ApprovalError> {
        pollster::block_on(self.deny(id, reason))
    }

    async fn decide_request(
        &self,
        id: &str,
        verdict: PersonVerdict,
        options: CallOptions,
    ) -> Result<Observation, ApprovalError> {
        crate::audit::ready(self.registry().audit_sink()).await;
        let started = self.clock();
        let store = &self.registry().gate().approvals;
        let unknown = || ApprovalError::UnknownId { id: id.to_owned() };
        if let Some(reason) = self.registry().suspended() {
            // Whether the tool was revoked elsewhere cannot be known: decide nothing.
            return Err(ApprovalError::Store(crate::StoreError::new(format!(
                "calls are held: {reason}"
            ))));
        }
        let (request, state) = store.get(id).await?.ok_or_else(unknown)?;
        // Whose it is comes first: another principal learns nothing of the request, not even
        // whether it was decided.
        let other_run = || ApprovalError::OtherRun { id: id.to_owned() };
        if request.allowed_set != self.allowed().fingerprint()
            || !request.belongs_to(self.subject())
        {
            return Err(other_run());
        }
        if !state.is_pending() {
            return Err(ApprovalError::AlreadyDecided {
                id: id.to_owned(),
                state,
            });
        }
        let entry = self
            .allowed()
            .find(&request.tool_name)
            .ok_or_else(other_run)?;
        if SystemTime::now() > request.expires_at {
            let request = self.transition(id, ApprovalState::Expired).await?;
            self.audit_approval(&request, ApprovalEventKind::Expired, None);
            let text = format!(
                "no one approved the call to \"{}\" in time; nothing was done",
                request.tool_name
            );
            let observation = self.settle(&request, ErrorKind::Denied, text, started);
            return Err(ApprovalError::Expired {
                id: id.to_owned(),
                observation: Box::new(observation),
            });
        }
        if self.registry().is_revoked(entry.slot, entry.version)
            || self.registry().current_version(entry.slot) != entry.version
            || entry.tool.version_fingerprint() != request.definition
        {
            let request = self.transition(id, ApprovalState::Revoked).await?;
            self.audit_approval(&request, ApprovalEventKind::Revoked, None);
            let text = revoked_text(&request.tool_name);
            let observation = self.settle(&request, ErrorKind::Revoked, text, started);
            return Err(ApprovalError::Revoked {
                id: id.to_owned(),
                tool: request.tool_name,
                observation: Box::new(observation),
            });
        }
        match verdict {
            PersonVerdict::Deny { by, reason } => {
                let state = ApprovalState::Denied {
                    by: by.clone(),
                    reason: reason.clone(),
                };
                let request = self.transition(id, state).await?;
                self.audit_approval(&request, ApprovalEventKind::Denied, by.as_deref());
                let text = denied_text(
                    &request.tool_name,
                    &format!("a person denied it ({reason})"),
                );
                Ok(self.settle(&request, ErrorKind::Denied, text, started))
            }
            PersonVerdict::Approve { by, arguments } => {
                let approved = Approved {
                    by,
                    edited: arguments,
                    options,
                };
                self.run_approved(id, entry, request, approved, started)
                    .await
            }
        }
    }

    async fn run_approved(
        &self,
        id: &str,
        entry: &Entry,
        request: ApprovalRequest,
        approved: Approved,
        started: Option<Instant>,
    ) -> Result<Observation, ApprovalError> {
        let Approved {
            by,
            edited,
            options,
        } = approved;
        let was_edited = edited.is_some();
        let arguments = match edited {
            None => request.arguments.clone(),
            Some(mut arguments) => {
                let checked = self
                    .registry()
                    .limits()
                    .check(&arguments)
                    .map_err(|problem| vec![problem])
                    .and_then(|_| validate(&entry.tool, &mut arguments));
                if let Err(problems) = checked {
                    return Err(ApprovalError::InvalidArguments {
                        id: id.to_owned(),
                        problems,
                    });
                }
                if let Verdict::Deny { reason, detail } =
                    self.decide(entry, &request.call_id, &arguments)
                {
                    let state = ApprovalState::Denied {
                        by: None,
                        reason: reason.clone(),
                    };
                    let request = self.transition(id, state).await?;
                    self.audit_approval(&request, ApprovalEventKind::Denied, None);
                    let text = denied_text(&request.tool_name, &reason);
                    let mut decided = self.ticket(&request).refused(ErrorKind::Denied, text);
                    decided.detail = detail.or(Some(reason));
                    return Ok(self.finish(decided, started));
                }
                arguments
            }
        };
        let state = ApprovalState::Approved {
            by: by.clone(),
            edited: was_edited,
        };
        let request = self.transition(id, state).await?;
        let kind = if was_edited {
            ApprovalEventKind::Edited
        } else {
            ApprovalEventKind::Approved
        };
        self.audit_approval(&request, kind, by.as_deref());
        let mut ticket = self.ticket(&request);
        if was_edited && crate::audit::wanted(self.registry().audit_sink()) {
            ticket.arguments = Some(crate::audit::argument_fingerprint(&arguments));
        }
        let resolved = Resolved {
            entry: entry.clone(),
            context: self.context(&request.call_id, entry, &options),
            arguments,
            ticket,
        };
        if let Some(reason) = self.registry().suspended() {
            let text = super::unavailable_text(entry.tool.name());
            let mut decided = resolved.ticket.refused(ErrorKind::Unavailable, text);
            decided.detail = Some(reason);
            return Ok(self.finish(decided, started));
        }
        // Revoked while the person decided: the approval is spent, and nothing runs.
        if self.registry().is_revoked(entry.slot, entry.version) {
            let text = revoked_text(entry.tool.name());
            let decided = resolved.ticket.refused(ErrorKind::Revoked, text);
            return Ok(self.finish(decided, started));
        }
        if let Some(reason) = self.registry().not_ready(entry.slot) {
            let text = super::unavailable_text(entry.tool.name());
            let mut decided = resolved.ticket.refused(ErrorKind::Unavailable, text);
            decided.detail = Some(reason);
            return Ok(self.finish(decided, started));
        }
        if let Err(refused) = self.admit(&resolved).await {
            return Ok(self.finish(*refused, started));
        }
        let outcome = self
            .execute(&resolved.entry, resolved.context, resolved.arguments)
            .await;
        Ok(self.finish(resolved.ticket.outcome(outcome), started))
    }

    /// Moves request `id` out of pending; losing the race is `AlreadyDecided`.
    async fn transition(
        &self,
        id: &str,
        state: ApprovalState,
    ) -> Result<ApprovalRequest, ApprovalError> {
        match self.registry().gate().approvals.decide(id, state).await? {
            Transition::Decided(request) => Ok(*request),
            Transition::AlreadyDecided(state) => Err(ApprovalError::AlreadyDecided {
                id: id.to_owned(),
                state,
            }),
            Transition::Unknown => Err(ApprovalError::UnknownId { id: id.to_owned() }),
        }
    }

    /// The ticket of a request's call, to answer it.
    fn ticket(&self, request: &ApprovalRequest) -> Ticket {
        let arguments = crate::audit::wanted(self.registry().audit_sink())
            .then(|| crate::audit::argument_fingerprint(&request.arguments));
        let structured = self
            .allowed()
            .find(&request.tool_name)
            .is_some_and(|entry| entry.tool.output_schema().is_some());
        Ticket {
            call_id: request.call_id.clone(),
            name: request.tool_name.clone(),
            arguments,
            generated_id: request.generated_id,
            structured,
            approval: Some(request.id.clone()),
            tool_version: Some(request.definition),
        }
    }

    /// Answers a request's call with an error, audited.
    fn settle(
        &self,
        request: &ApprovalRequest,
        kind: ErrorKind,
        text: String,
        started: Option<Instant>,
    ) -> Observation {
        let decided: Decided = self.ticket(request).refused(kind, text);
        self.finish(decided, started)
    }
}

impl Run {
    /// Audits one step of an approval request.
    pub(super) fn audit_approval(
        &self,
        request: &ApprovalRequest,
        kind: ApprovalEventKind,
        by: Option<&str>,
    ) {
        let sink = self.registry().audit_sink();
        if !audit::wanted(sink) {
            return;
        }
        let reason = match kind {
            ApprovalEventKind::Denied => String::new(),
            _ => request.reason.clone(),
        };
        audit::emit(
            sink,
            AuditEvent::Approval(ApprovalEvent {
                kind,
                id: request.id.clone(),
                run_id: self.id().to_owned(),
                tenant: request.tenant.clone(),
                principal: request.principal.clone(),
                call_id: crate::audit::truncate(&request.call_id, crate::audit::AUDITED_NAME),
                tool: request.tool_name.clone(),
                by: by.map(str::to_owned),
                reason,
                argument_hash: crate::audit::argument_fingerprint(&request.arguments).1,
                tool_version: request.definition,
            }),
        );
    }
}
