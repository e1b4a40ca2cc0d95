//! Deciding approval requests: a person's [`Verdict`] applied to a pending request.

use std::time::{Instant, SystemTime};

use serde_json::Value;

use super::admit::{Approval, Approved};
use super::answer::{
    Decided, Resolved, Ticket, denied_text, expired_text, invalid_arguments_text, revoked_text,
    unavailable_text,
};
use super::policies::Ruling;
use super::resolve::validate;
use crate::approval::request::{ApprovalError, ApprovalRequest, ApprovalState};
use crate::approval::request::{Verdict, VerdictKind};
use crate::approval::store::Transition;
use crate::audit::{self, ApprovalEvent, ApprovalEventKind, AuditEvent};
use crate::discover::run::Run;
use crate::execute::execution;
use crate::execute::observation::{ErrorKind, Observation};
use crate::gate::settled::Settled;
use crate::host::context::CallOptions;
use crate::project::discovery::Entry;
use crate::task::record::Task;

/// A settled request: the call's answer, or the call approved and admitted, to run.
enum Settling {
    Answered(Observation),
    Admitted(Box<Admitted>),
}

/// An approved call that passed the gate again, ready to run (as a call or a task).
struct Admitted {
    resolved: Resolved,
    started: Option<Instant>,
    options: CallOptions,
}

impl Run {
    /// Applies a person's [`Verdict`] to the pending approval request `id` (from
    /// [`Observation::approval`]).
    ///
    /// The one way to decide a request, sync ([`decide_blocking`](Self::decide_blocking)) or
    /// async, for a call ([`call`](Self::call), [`call_blocking`](Self::call_blocking)) or a
    /// task ([`start_task`](Self::start_task)) alike; `registry-mcp` gives the approved call
    /// the host of its `tools/call` with [`RunExt::decide_with`](crate::server::RunExt::decide_with).
    ///
    /// **`Ok` whenever the call is settled**: [`Settled::Answered`] with the observation that
    /// is the model's answer to its call, or [`Settled::Started`] with the task a call that
    /// asked to start as a task started once approved (after the same checks, and the task
    /// bounds; a task that cannot start is answered):
    ///
    /// - approved: the call ran (once, even when approved concurrently), with exactly the
    ///   arguments requested or the edited ones; the observation is its result, or the gate's
    ///   refusal: an approved call passes the same gate as every call (the policies on the
    ///   arguments approved, a policy's denial denying the request; the budget and the rate
    ///   limit; suspension, revocation and readiness), only its approval is not asked again;
    /// - denied: [`ErrorKind::Denied`], with the person's reason; nothing ran;
    /// - expired before the decision: [`ErrorKind::Denied`], saying no one approved in time;
    ///   nothing ran;
    /// - its tool was revoked or replaced since the request: [`ErrorKind::Revoked`]; nothing
    ///   ran.
    ///
    /// **`Err` when nothing was settled** and the request is as it was: an unknown id, a run
    /// of another subject ([`ApprovalError::OtherRun`]: the request belongs to the run with
    /// the same allowed set and the same tenant, agent and
    /// [principal](crate::Subject::principal), this run or one reopened for the same subject,
    /// say after a restart; checked first, so another person learns nothing of it), already
    /// decided, edited arguments that are invalid (the request stays pending), arguments on a
    /// denial, or a store that failed.
    ///
    /// ```standalone_crate
    /// use registry_core::approval::{ApprovalError, Verdict};
    /// use registry_core::{tool, ErrorKind, Registry, Subject, ToolCall};
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
    /// let settled = run.decide_blocking(request.id(), Verdict::approve().by("ana")).unwrap();
    /// let done = settled.answer().unwrap();
    /// assert_eq!(done.call_id(), "c1");
    /// assert_eq!(done.json(), &json!("web deleted"));
    /// assert!(matches!(
    ///     run.decide_blocking(request.id(), Verdict::approve()),
    ///     Err(ApprovalError::AlreadyDecided { .. })
    /// ));
    /// ```
    pub async fn decide(&self, id: &str, verdict: Verdict) -> Result<Settled, ApprovalError> {
        self.decide_with_options(id, verdict, CallOptions::default())
            .await
    }

    /// [`decide`](Self::decide) on this thread, without an async runtime (an approved async
    /// tool is driven by a small local executor). Inside an async task, `.await`
    /// [`decide`](Self::decide) instead: this blocks the thread until the call ends.
    pub fn decide_blocking(&self, id: &str, verdict: Verdict) -> Result<Settled, ApprovalError> {
        pollster::block_on(self.decide(id, verdict))
    }

    /// [`decide`](Self::decide), with the call's own host and cancellation for the call that
    /// runs (`registry-mcp` gives the approved call those of the `tools/call` it answers).
    pub(crate) async fn decide_with_options(
        &self,
        id: &str,
        verdict: Verdict,
        options: CallOptions,
    ) -> Result<Settled, ApprovalError> {
        match self.settle_request(id, verdict, options).await? {
            Settling::Answered(observation) => Ok(Settled::Answered(observation)),
            Settling::Admitted(admitted) => {
                let Admitted {
                    resolved,
                    started,
                    options,
                } = *admitted;
                if resolved.ticket.task {
                    return Ok(match self.launch(resolved, options, started).await {
                        Ok(task) => Settled::Started(Box::new(task)),
                        Err(refused) => Settled::Answered(refused),
                    });
                }
                let outcome = execution::start(
                    &resolved.entry.tool,
                    resolved.context,
                    resolved.arguments,
                    self.deadline(&resolved.entry),
                    self.registry.blocking_pool(),
                )
                .await;
                Ok(Settled::Answered(self.conclude(
                    &resolved.entry,
                    resolved.ticket,
                    outcome,
                    started,
                    options.trace.as_ref(),
                )))
            }
        }
    }

    /// [`decide`](Self::decide), its answer as it was before [`Settled`]: `Ok(Ok(task))` for a
    /// task that started, `Ok(Err(observation))` for a call answered.
    #[deprecated(
        note = "use Run::decide: approved, a request made by start_task starts its task (Settled::Started)"
    )]
    pub async fn decide_task(
        &self,
        id: &str,
        verdict: Verdict,
    ) -> Result<Result<Task, Observation>, ApprovalError> {
        Ok(match self.decide(id, verdict).await? {
            Settled::Started(task) => Ok(*task),
            Settled::Answered(observation) => Err(observation),
        })
    }

    /// Settles request `id`: the call's answer, or the call admitted to run.
    async fn settle_request(
        &self,
        id: &str,
        verdict: Verdict,
        options: CallOptions,
    ) -> Result<Settling, ApprovalError> {
        if !verdict.is_approval() && verdict.arguments.is_some() {
            return Err(ApprovalError::ArgumentsOnDenial { id: id.to_owned() });
        }
        self.decide_request(id, verdict, options).await
    }

    async fn decide_request(
        &self,
        id: &str,
        verdict: Verdict,
        options: CallOptions,
    ) -> Result<Settling, ApprovalError> {
        crate::audit::ready(self.origin().audit_sink()).await;
        let started = self.clock();
        let store = &self.origin().gate().approvals;
        let unknown = || ApprovalError::UnknownId { id: id.to_owned() };
        if let Some(reason) = self.origin().suspension() {
            // Whether the tool was revoked elsewhere cannot be known: decide nothing.
            return Err(ApprovalError::Store(
                crate::approval::request::StoreError::new(format!("calls are held: {reason}")),
            ));
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
            let text = expired_text(&request.tool_name);
            return Ok(Settling::Answered(self.settle(
                &request,
                ErrorKind::Denied,
                text,
                started,
            )));
        }
        if self.origin().is_revoked(entry.slot, entry.version)
            || self.origin().current_version(entry.slot) != entry.version
            || entry.tool.version_fingerprint() != request.definition
        {
            let request = self.transition(id, ApprovalState::Revoked).await?;
            self.audit_approval(&request, ApprovalEventKind::Revoked, None);
            let text = revoked_text(&request.tool_name);
            return Ok(Settling::Answered(self.settle(
                &request,
                ErrorKind::Revoked,
                text,
                started,
            )));
        }
        let Verdict {
            kind,
            by,
            arguments,
        } = verdict;
        match kind {
            VerdictKind::Deny { reason } => {
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
                Ok(Settling::Answered(self.settle(
                    &request,
                    ErrorKind::Denied,
                    text,
                    started,
                )))
            }
            VerdictKind::Approve => {
                self.run_approved(entry, request, by, arguments, options, started)
                    .await
            }
        }
    }

    /// An approved call: its arguments (as requested, or edited) checked against the limits
    /// and the schema, then through the gate again ([`admit`](Self::admit)), which records
    /// the verdict.
    async fn run_approved(
        &self,
        entry: &Entry,
        request: ApprovalRequest,
        by: Option<String>,
        edited: Option<Value>,
        options: CallOptions,
        started: Option<Instant>,
    ) -> Result<Settling, ApprovalError> {
        let id = request.id.as_str();
        let was_edited = edited.is_some();
        let arguments = match edited {
            None => {
                // The arguments as the store gave them back: checked again, as the call's
                // were, so that a store that changed them (a database's sanitizer, a custom
                // store) cannot run what was never validated.
                let mut arguments = request.arguments.clone();
                let checked = if request.discarded.is_some() {
                    Err(vec![crate::shared::tool_error::ArgumentProblem::new(
                        "",
                        "the approval store kept no arguments for this request",
                    )])
                } else {
                    self.origin()
                        .limits()
                        .check(&arguments)
                        .map_err(|problem| vec![problem])
                        .and_then(|_| validate(&entry.tool, &mut arguments))
                };
                if let Err(problems) = checked {
                    return self
                        .refuse_stored(id, &request, problems, started, &options)
                        .await;
                }
                arguments
            }
            Some(mut arguments) => {
                let checked = self
                    .origin()
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
                arguments
            }
        };
        let mut ticket = self.ticket(&request);
        if was_edited && crate::audit::wanted(self.origin().audit_sink()) {
            ticket.arguments = Some(crate::shared::audit_key::argument_fingerprint(
                self.origin().audit_key(),
                &arguments,
            ));
        }
        let mut resolved = Resolved {
            entry: entry.clone(),
            context: self.context(&request.call_id, entry, &options),
            arguments: arguments.into(),
            ticket,
        };
        let mut approved = Approved {
            id: request.id,
            by,
            edited: was_edited,
            unsettled: None,
        };
        match self
            .admit(&mut resolved, Approval::Given(&mut approved))
            .await
        {
            Ok(()) => Ok(Settling::Admitted(Box::new(Admitted {
                resolved,
                started,
                options,
            }))),
            Err(refused) => match approved.unsettled {
                Some(error) => Err(error),
                None => Ok(Settling::Answered(self.finish_traced(
                    *refused,
                    started,
                    options.trace.as_ref(),
                ))),
            },
        }
    }

    /// The approval step (5.2) of an approved call ([`admit`](Self::admit)): the person's verdict recorded,
    /// after the policies ruled on the arguments approved. Denied by them (or by the rule
    /// that code cannot wait for a person), the request is denied and the call refused;
    /// else it is approved (the policies' asking for an approval is the person's, answered)
    /// and the call goes on, unless the registry was suspended, or the tool revoked or not
    /// ready, while the person decided (the approval is spent, and nothing runs).
    pub(super) async fn record_approval(
        &self,
        resolved: &mut Resolved,
        ruling: Ruling,
        approved: &mut Approved,
    ) -> Result<(), Box<Decided>> {
        let denial = match &ruling {
            Ruling::Deny { reason, .. } => Some(reason.clone()),
            Ruling::Allow | Ruling::Approval(_) => None,
        };
        let ruled = self.rule(resolved, ruling).map(|_| ());
        let (state, kind) = match (&ruled, denial) {
            (Ok(()), _) => {
                let state = ApprovalState::Approved {
                    by: approved.by.clone(),
                    edited: approved.edited,
                };
                let kind = if approved.edited {
                    ApprovalEventKind::Edited
                } else {
                    ApprovalEventKind::Approved
                };
                (state, kind)
            }
            (Err(refused), denial) => {
                let reason = denial
                    .or_else(|| refused.detail.clone())
                    .unwrap_or_default();
                let state = ApprovalState::Denied { by: None, reason };
                (state, ApprovalEventKind::Denied)
            }
        };
        let request = match self.transition(&approved.id, state).await {
            Ok(request) => request,
            Err(error) => {
                approved.unsettled = Some(error);
                let name = resolved.entry.tool.name();
                let unsettled = resolved
                    .ticket
                    .copy()
                    .refused(ErrorKind::Unavailable, unavailable_text(name));
                return Err(ruled.err().unwrap_or_else(|| Box::new(unsettled)));
            }
        };
        let by = ruled.is_ok().then_some(approved.by.as_deref()).flatten();
        self.audit_approval(&request, kind, by);
        ruled?;
        if let Err((kind, text, detail)) = self.available(&resolved.entry) {
            let mut decided = std::mem::take(&mut resolved.ticket).refused(kind, text);
            decided.detail = detail;
            return Err(Box::new(decided));
        }
        Ok(())
    }

    /// Refuses an approved request whose stored arguments do not validate: it is denied (so
    /// it runs at no later approval either), and the call is answered as invalid.
    async fn refuse_stored(
        &self,
        id: &str,
        request: &ApprovalRequest,
        problems: Vec<crate::shared::tool_error::ArgumentProblem>,
        started: Option<Instant>,
        options: &CallOptions,
    ) -> Result<Settling, ApprovalError> {
        let reason = "the arguments read back from the approval store do not validate against the tool's schema";
        let state = ApprovalState::Denied {
            by: None,
            reason: reason.to_owned(),
        };
        let decided_request = self.transition(id, state).await?;
        self.audit_approval(&decided_request, ApprovalEventKind::Denied, None);
        let text = invalid_arguments_text(&request.tool_name, &problems);
        let mut decided = self
            .ticket(request)
            .refused(ErrorKind::InvalidArguments, text);
        decided.observation = decided.observation.with_problems(problems.clone());
        decided.detail = Some(format!(
            "{reason}: {}",
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ));
        Ok(Settling::Answered(self.finish_traced(
            decided,
            started,
            options.trace.as_ref(),
        )))
    }

    /// Moves request `id` out of pending; losing the race is `AlreadyDecided`.
    async fn transition(
        &self,
        id: &str,
        state: ApprovalState,
    ) -> Result<ApprovalRequest, ApprovalError> {
        match self.origin().gate().approvals.decide(id, state).await? {
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
        let arguments = crate::audit::wanted(self.origin().audit_sink()).then(|| {
            let digest = request.argument_digest();
            let size = usize::try_from(digest.size()).unwrap_or(usize::MAX);
            (size, digest.hash().unwrap_or_default().to_owned())
        });
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
            // The call resumed after the approval keeps who made it.
            caller: request.caller,
            policies: Vec::new(),
            task: request.task,
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
    pub(crate) fn audit_approval(
        &self,
        request: &ApprovalRequest,
        kind: ApprovalEventKind,
        by: Option<&str>,
    ) {
        let sink = self.origin().audit_sink();
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
                argument_hash: request
                    .argument_digest()
                    .hash()
                    .unwrap_or_default()
                    .to_owned(),
                tool_version: request.definition,
            }),
        );
    }
}
