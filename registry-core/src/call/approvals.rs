//! Deciding approval requests: a person's [`Verdict`] applied to a pending request.

use std::time::{Instant, SystemTime};

use serde_json::Value;

use super::admit::{Ruling, decide_async, validate};
use super::answer::{
    Decided, Resolved, Ticket, denied_text, invalid_arguments_text, revoked_text, unavailable_text,
};
use crate::approval::request::{ApprovalError, ApprovalRequest, ApprovalState};
use crate::approval::request::{Verdict, VerdictKind};
use crate::approval::store::Transition;
use crate::audit::{self, ApprovalEvent, ApprovalEventKind, AuditEvent};
use crate::discover::run::Run;
use crate::execute::observation::{ErrorKind, Observation};
use crate::gate::{CallRequest, PolicyArguments};
use crate::host::context::CallOptions;
use crate::project::discovery::Entry;
use crate::task::record::Task;

/// A settled request: the call's answer, or the call approved and admitted, to run.
enum Settled {
    Answered(Observation),
    Admitted(Box<Admitted>),
}

/// An approved call that passed the gate again, ready to run (as a call or a task).
struct Admitted {
    resolved: Resolved,
    started: Option<Instant>,
    options: CallOptions,
}

/// How an approved call runs: who approved, the edited arguments, the call's host and
/// cancellation.
struct Approved {
    by: Option<String>,
    edited: Option<Value>,
    options: CallOptions,
}

impl Run {
    /// Applies a person's [`Verdict`] to the pending approval request `id` (from
    /// [`Observation::approval`]).
    ///
    /// **`Ok` whenever the call is settled**, with the observation that is the model's
    /// answer to its call:
    ///
    /// - approved: the call ran (once, even when approved concurrently), with exactly the
    ///   arguments requested or the edited ones; the observation is its result, or the gate's
    ///   refusal if the edited arguments are denied by a policy or the tool stopped being
    ///   available while the person decided;
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
    /// let done = run.decide_blocking(request.id(), Verdict::approve().by("ana")).unwrap();
    /// assert_eq!(done.call_id(), "c1");
    /// assert_eq!(done.json(), &json!("web deleted"));
    /// assert!(matches!(
    ///     run.decide_blocking(request.id(), Verdict::approve()),
    ///     Err(ApprovalError::AlreadyDecided { .. })
    /// ));
    /// ```
    pub async fn decide(&self, id: &str, verdict: Verdict) -> Result<Observation, ApprovalError> {
        self.decide_with_options(id, verdict, CallOptions::default())
            .await
    }

    /// [`decide`](Self::decide) on this thread, without an async runtime (an approved async
    /// tool is driven by a small local executor). Inside an async task, `.await`
    /// [`decide`](Self::decide) instead: this blocks the thread until the call ends.
    pub fn decide_blocking(
        &self,
        id: &str,
        verdict: Verdict,
    ) -> Result<Observation, ApprovalError> {
        pollster::block_on(self.decide(id, verdict))
    }

    /// [`decide`](Self::decide), with the call's own host and cancellation for the call that
    /// runs (`registry-mcp` gives the approved call those of the `tools/call` it answers).
    pub(crate) async fn decide_with_options(
        &self,
        id: &str,
        verdict: Verdict,
        options: CallOptions,
    ) -> Result<Observation, ApprovalError> {
        match self.settle_request(id, verdict, options).await? {
            Settled::Answered(observation) => Ok(observation),
            Settled::Admitted(admitted) => {
                let Admitted {
                    resolved,
                    started,
                    options,
                } = *admitted;
                let outcome = self
                    .execute(&resolved.entry, resolved.context, resolved.arguments)
                    .await;
                Ok(self.answer(
                    &resolved.entry,
                    resolved.ticket,
                    outcome,
                    started,
                    options.trace.as_ref(),
                ))
            }
        }
    }

    /// [`decide`](Self::decide) for a call that asked to start as a task
    /// ([`start_task`](Self::start_task) answered [`ErrorKind::ApprovalRequired`]): approved,
    /// the task starts (`Ok(Ok(task))`) with exactly the arguments approved, after the same
    /// checks as [`decide`](Self::decide) (and the task bounds); denied, expired, revoked or
    /// refused, `Ok(Err(observation))` says why and nothing started. `Err` when nothing was
    /// settled, as for [`decide`](Self::decide). Deciding such a request with
    /// [`decide`](Self::decide) instead runs the tool as an ordinary call.
    ///
    /// ```standalone_crate
    /// use registry_core::approval::Verdict;
    /// use registry_core::{tool, ErrorKind, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// /// Migrate a database to a new schema.
    /// #[tool(scopes = "db:admin", needs_approval, task)]
    /// fn migrate(database: String) -> String {
    ///     format!("{database} migrated")
    /// }
    ///
    /// let registry = Registry::from_inventory().unwrap();
    /// let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["db:admin"]));
    /// let pending = run.start_task_blocking(ToolCall::new("c1", "migrate", json!({"database": "orders"}))).unwrap_err();
    /// assert_eq!(pending.error_kind(), Some(ErrorKind::ApprovalRequired));
    ///
    /// let id = pending.approval().unwrap().id();
    /// let task = pollster::block_on(run.decide_task(id, Verdict::approve().by("ana"))).unwrap().unwrap();
    /// let answer = pollster::block_on(run.wait_task(task.id())).unwrap();
    /// assert_eq!(answer.json(), &json!("orders migrated"));
    /// ```
    pub async fn decide_task(
        &self,
        id: &str,
        verdict: Verdict,
    ) -> Result<Result<Task, Observation>, ApprovalError> {
        match self
            .settle_request(id, verdict, CallOptions::default())
            .await?
        {
            Settled::Answered(observation) => Ok(Err(observation)),
            Settled::Admitted(admitted) => {
                let Admitted {
                    resolved,
                    started,
                    options,
                } = *admitted;
                Ok(self.launch(resolved, options, started).await)
            }
        }
    }

    /// Settles request `id`: the call's answer, or the call admitted to run.
    async fn settle_request(
        &self,
        id: &str,
        verdict: Verdict,
        options: CallOptions,
    ) -> Result<Settled, ApprovalError> {
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
    ) -> Result<Settled, ApprovalError> {
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
            let text = format!(
                "no one approved the call to \"{}\" in time; nothing was done",
                request.tool_name
            );
            return Ok(Settled::Answered(self.settle(
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
            return Ok(Settled::Answered(self.settle(
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
                Ok(Settled::Answered(self.settle(
                    &request,
                    ErrorKind::Denied,
                    text,
                    started,
                )))
            }
            VerdictKind::Approve => {
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
    ) -> Result<Settled, ApprovalError> {
        let Approved {
            by,
            edited,
            options,
        } = approved;
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
                let mut ruling = self
                    .ask_policies(
                        entry,
                        &request.call_id,
                        PolicyArguments::Value(&arguments),
                        request.caller,
                    )
                    .0;
                // The asynchronous policies see the edited arguments too.
                let asynchronous = self.origin().async_call_policies();
                if !asynchronous.is_empty() && !matches!(ruling, Ruling::Deny { .. }) {
                    let call = CallRequest {
                        subject: &self.scope.subject,
                        run_id: &self.scope.run_id,
                        call_id: &request.call_id,
                        tool_name: entry.tool.name(),
                        policy: entry.tool.settings(),
                        arguments: PolicyArguments::Value(&arguments),
                        caller: request.caller,
                    };
                    ruling = Box::pin(decide_async(asynchronous, call, Ruling::Allow))
                        .await
                        .0;
                }
                if let Ruling::Deny { reason, detail } = ruling {
                    let state = ApprovalState::Denied {
                        by: None,
                        reason: reason.clone(),
                    };
                    let request = self.transition(id, state).await?;
                    self.audit_approval(&request, ApprovalEventKind::Denied, None);
                    let text = denied_text(&request.tool_name, &reason);
                    let mut decided = self.ticket(&request).refused(ErrorKind::Denied, text);
                    decided.detail = detail.or(Some(reason));
                    return Ok(Settled::Answered(self.finish_traced(
                        decided,
                        started,
                        options.trace.as_ref(),
                    )));
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
        if was_edited && crate::audit::wanted(self.origin().audit_sink()) {
            ticket.arguments = Some(crate::shared::audit_key::argument_fingerprint(
                self.origin().audit_key(),
                &arguments,
            ));
        }
        let resolved = Resolved {
            entry: entry.clone(),
            context: self.context(&request.call_id, entry, &options),
            arguments: arguments.into(),
            ticket,
        };
        let trace = options.trace.clone();
        let answered = |decided| {
            Ok(Settled::Answered(self.finish_traced(
                decided,
                started,
                trace.as_ref(),
            )))
        };
        if let Some(reason) = self.origin().suspension() {
            let text = unavailable_text(entry.tool.name());
            let mut decided = resolved.ticket.refused(ErrorKind::Unavailable, text);
            decided.detail = Some(reason);
            return answered(decided);
        }
        // Revoked while the person decided: the approval is spent, and nothing runs.
        if self.origin().is_revoked(entry.slot, entry.version) {
            let text = revoked_text(entry.tool.name());
            return answered(resolved.ticket.refused(ErrorKind::Revoked, text));
        }
        if let Some(reason) = self.origin().not_ready(entry.slot) {
            let text = unavailable_text(entry.tool.name());
            let mut decided = resolved.ticket.refused(ErrorKind::Unavailable, text);
            decided.detail = Some(reason);
            return answered(decided);
        }
        if let Err(refused) = self.admit(&resolved).await {
            return answered(*refused);
        }
        Ok(Settled::Admitted(Box::new(Admitted {
            resolved,
            started,
            options,
        })))
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
    ) -> Result<Settled, ApprovalError> {
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
        Ok(Settled::Answered(self.finish_traced(
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
