//! Steps 5.1 and 5.2 of a call, written once for every path (calls, blocking calls, tasks, and
//! calls a person approved): [`Run::resolve`] (the allowed set, suspension, revocation and
//! readiness, the arguments), then [`Run::admit`], the gate (the policies, the rule that code
//! cannot wait for a person, a person's approval, the budget and the rate limit, then
//! revocation and suspension once more). An approved call enters at the gate.

use std::time::SystemTime;

use serde_json::Value;

use super::answer::{
    Decided, Resolved, approval_required_text, approval_share_full_text, approval_too_large_text,
    approval_unavailable, too_many_approvals_text,
};
use super::policies::Ruling;
use super::quota::Admission;
use crate::approval::request::{ApprovalError, ApprovalRequest};
use crate::approval::store::Insertion;
use crate::audit::ApprovalEventKind;
use crate::discover::run::Run;
use crate::execute::observation::ErrorKind;
use crate::host::context::ToolContext;
use crate::resolve::checked::CheckedArguments;

/// `future`'s output, driven on this thread: polled once, and, if it is not ready (an
/// asynchronous policy, the approval store or a quota store waits), waited for with a parker
/// of this thread. Without anything to wait for, nothing is allocated and nothing parks.
#[inline]
fn drive_here<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => pollster::block_on(future),
    }
}

/// The sequence of step 5.2, written once and expanded twice: as the async
/// [`Run::admit`] (`$wait` awaits) and as the blocking [`Run::admit_here`] (`$wait` drives the
/// future on this thread). In order: the synchronous policies, then, unless they denied, the
/// asynchronous ones; the rule that code cannot wait for a person and a person's approval
/// (asked for, or recorded for an approved call); the run's budget and the tool's rate limit;
/// then revocation and suspension once more.
macro_rules! admission {
    ($run:ident, $resolved:ident, $approval:ident, |$future:ident| $wait:expr) => {{
        // Boxed: only a registry with asynchronous policies pays for their future, and every
        // other call's future stays small to move.
        let mut ruling = $run.ruling($resolved);
        if !$run.registry.async_call_policies().is_empty() && !matches!(ruling, Ruling::Deny { .. })
        {
            let $future = Box::pin($run.ask_async_policies($resolved, ruling));
            ruling = $wait;
        }
        match $approval {
            Approval::Ask => {
                if let Some(reason) = $run.rule($resolved, ruling)? {
                    // Boxed: the request's future is most of a call's, and a person's
                    // approval is rare; every other call's future stays small to move.
                    let waiting = $run.take_resolved($resolved);
                    let $future = Box::pin($run.request_approval(waiting, reason));
                    let decided = $wait;
                    return Err(Box::new(decided));
                }
            }
            Approval::Given(given) => {
                let $future = Box::pin($run.record_approval($resolved, ruling, given));
                $wait?;
            }
        }
        // The budget and the rate limit (here, not in a future of its own: each layer of
        // future keeps its own copy of the call's borrows, and a call's future is moved
        // whole).
        match $run.admission($resolved) {
            Admission::Granted => {}
            Admission::Refused(decided) => return Err(decided),
            Admission::Ask(limit) => {
                let store = $run.registry.gate().quotas.store();
                let $future = store.acquire($run.quota_key(&$resolved.entry), limit);
                let answer = $wait;
                $run.quota_answer($resolved, answer)?;
            }
        }
        $run.still_callable($resolved)
    }};
}

impl Run {
    /// The admission of a resolved call, the one sequence every path takes after
    /// [`resolve`](Self::resolve) (calls, blocking calls, tasks, and calls a person
    /// approved, which enter here with the arguments approved): step 5.2, the gate. In order:
    /// the policies (synchronous, then asynchronous, each within its deadline) and the rule
    /// that code cannot wait for a person; a person's approval (asked for, or, for an
    /// approved call, recorded); the run's budget and the tool's rate limit; then revocation
    /// and suspension once more. `Ok` when the tool may run; else the call's answer.
    ///
    /// The call is borrowed, not moved through: it is a few hundred bytes, and the hot path
    /// used to copy it in and out of each step (issue 22's profile: copies were a sixth of a
    /// call's time). A blocking call takes the same sequence through
    /// [`admit_here`](Self::admit_here).
    pub(super) async fn admit(
        &self,
        resolved: &mut Resolved,
        approval: Approval<'_>,
    ) -> Result<(), Box<Decided>> {
        admission!(self, resolved, approval, |future| future.await)
    }

    /// [`admit`](Self::admit) on this thread, for a blocking call: the same sequence (one
    /// macro body, [`admission!`]), each wait driven here ([`drive_here`]). Without
    /// asynchronous policies or stores nothing waits, and no future of the whole sequence is
    /// built and polled.
    pub(super) fn admit_here(
        &self,
        resolved: &mut Resolved,
        approval: Approval<'_>,
    ) -> Result<(), Box<Decided>> {
        admission!(self, resolved, approval, |future| drive_here(future))
    }

    /// The call out of `resolved`, for an approval request (which keeps it), leaving what
    /// no one reads again.
    #[cold]
    fn take_resolved(&self, resolved: &mut Resolved) -> Resolved {
        Resolved {
            entry: resolved.entry.clone(),
            context: std::mem::replace(
                &mut resolved.context,
                ToolContext::unread(self.scope.clone()),
            ),
            arguments: std::mem::replace(
                &mut resolved.arguments,
                CheckedArguments::Value(Value::Null),
            ),
            ticket: std::mem::take(&mut resolved.ticket),
        }
    }

    /// Makes, stores and audits an approval request for a call that waits for a person.
    pub(super) async fn request_approval(&self, resolved: Resolved, reason: String) -> Decided {
        let Resolved {
            entry,
            arguments,
            ticket,
            ..
        } = resolved;
        let gate = self.registry.gate();
        let now = SystemTime::now();
        let arguments = arguments.into_value();
        let digest =
            crate::approval::request::ArgumentDigest::keyed(self.registry.audit_key(), &arguments);
        let request = crate::approval::request::new_id().map(|id| ApprovalRequest {
            id,
            run_id: self.id().to_owned(),
            tenant: self.subject().tenant().to_owned(),
            agent: self.subject().agent().map(str::to_owned),
            principal: self.subject().principal().map(str::to_owned),
            call_id: ticket.call_id.clone(),
            generated_id: ticket.generated_id,
            tool_name: entry.tool.name().to_owned(),
            arguments,
            discarded: None,
            digest: Some(digest),
            reason,
            allowed_set: self.allowed.fingerprint(),
            definition: entry.tool.version_fingerprint(),
            requested_at: now,
            expires_at: now + gate.approval_ttl,
            caller: ticket.caller,
            task: ticket.task,
        });
        let name = entry.tool.name().to_owned();
        let request = match request {
            Ok(request) => request,
            Err(error) => return approval_unavailable(ticket, &name, &error),
        };
        // At most `max_pending` waiting per principal, counted and kept in one step of the
        // store; a store that cannot count refuses.
        let inserted = gate
            .approvals
            .insert_bounded(&request, gate.max_pending)
            .await;
        match inserted {
            Ok(Insertion::Inserted) => {
                self.audit_approval(&request, ApprovalEventKind::Requested, None);
                let text = approval_required_text(&name, &request.reason);
                let mut decided = ticket.refused(ErrorKind::ApprovalRequired, text);
                decided.approval_id = Some(request.id.clone());
                decided.observation = decided.observation.with_approval(request);
                decided
            }
            Ok(Insertion::TooManyPending { pending }) => {
                let text = too_many_approvals_text(&name, gate.max_pending);
                let mut decided = ticket.refused(ErrorKind::RateLimited, text);
                decided.detail = Some(format!(
                    "{pending} approval requests of this subject are pending (at most {})",
                    gate.max_pending
                ));
                decided
            }
            Ok(Insertion::ShareFull { detail }) => {
                let text = approval_share_full_text(&name);
                let mut decided = ticket.refused(ErrorKind::RateLimited, text);
                decided.detail = Some(format!("approval store: {detail}"));
                decided
            }
            Ok(Insertion::TooLarge { bytes, max }) => {
                let text = approval_too_large_text(&name, max);
                let mut decided = ticket.refused(ErrorKind::Denied, text);
                decided.detail = Some(format!(
                    "approval store: the arguments take {bytes} bytes, at most {max} per request"
                ));
                decided
            }
            Err(error) => approval_unavailable(ticket, &name, &error),
        }
    }
}

/// Whether a call may ask for a person's approval, or comes with one.
pub(super) enum Approval<'a> {
    /// A call from the model or its code: if the gate wants a person's approval, it is
    /// asked for, and the call ends there.
    Ask,
    /// A call a person approved, entering the gate again with the arguments approved (as
    /// requested, or edited): every rule applies, but the approval is not asked for again;
    /// the person's verdict is recorded instead.
    Given(&'a mut Approved),
}

/// A person's approval of a call, as the gate sees it again
/// ([`Approval::Given`]): the request, who approved, whether
/// the arguments were edited; and, if the verdict could not be recorded (the request was
/// decided meanwhile, the store failed), why, for [`Run::decide`] to return.
pub(super) struct Approved {
    pub(super) id: String,
    pub(super) by: Option<String>,
    pub(super) edited: bool,
    pub(super) unsettled: Option<ApprovalError>,
}
