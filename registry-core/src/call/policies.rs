//! The policies of the gate (step 5.2): the registry's and the run's synchronous
//! [`CallPolicy`](crate::gate::CallPolicy)s, the tool's `needs_approval`, then the
//! asynchronous ones, each within its deadline; and what they decided made the call's answer,
//! with the rule that code cannot wait for a person.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use super::answer::{Decided, Resolved, code_cannot_wait_text, denied_text, humane};
use crate::discover::run::Run;
use crate::execute::execution;
use crate::execute::observation::ErrorKind;
use crate::gate::async_policy::CatchUnwind;
use crate::gate::{AsyncCallPolicy, CallRequest, Decision, PolicyArguments};
use crate::project::discovery::Entry;
use crate::shared::caller::Caller;
use crate::shared::deadline::with_deadline;

impl Run {
    /// What the synchronous policies and the tool's `needs_approval` decide; the ids of the
    /// policies that decided go on the ticket.
    #[inline]
    pub(super) fn ruling(&self, resolved: &mut Resolved) -> Ruling {
        // No policy: the arguments need not be a value.
        if self.registry.call_policies().is_empty() && self.policies.is_empty() {
            return self.needs_approval(&resolved.entry, None);
        }
        let (ruling, policies) = self.ask_policies(
            &resolved.entry,
            &resolved.ticket.call_id,
            PolicyArguments::Checked(&resolved.arguments),
            resolved.ticket.caller,
        );
        resolved.ticket.policies = policies;
        ruling
    }

    /// `ruling` (of the synchronous policies, which did not deny) with the asynchronous
    /// policies' decisions: the stricter wins; one that does not answer within its deadline,
    /// or panics, denies.
    pub(super) async fn ask_async_policies(
        &self,
        resolved: &mut Resolved,
        ruling: Ruling,
    ) -> Ruling {
        let request = CallRequest {
            subject: &self.scope.subject,
            run_id: &self.scope.run_id,
            call_id: &resolved.ticket.call_id,
            tool_name: resolved.entry.tool.name(),
            policy: resolved.entry.tool.settings(),
            arguments: PolicyArguments::Checked(&resolved.arguments),
            caller: resolved.ticket.caller,
        };
        let (ruling, policies) =
            decide_async(self.registry.async_call_policies(), request, ruling).await;
        match policies {
            AsyncIds::Replace(ids) => resolved.ticket.policies = ids,
            AsyncIds::Extend(ids) => resolved.ticket.policies.extend(ids),
        }
        ruling
    }

    /// What the policies decided, made the call's answer: allow (`Ok(None)`), ask a person
    /// (`Ok(Some(reason))`), or refuse.
    #[inline]
    pub(super) fn rule(
        &self,
        resolved: &mut Resolved,
        ruling: Ruling,
    ) -> Result<Option<String>, Box<Decided>> {
        match ruling {
            Ruling::Allow => Ok(None),
            // Code the model wrote cannot pause for a person: unless the tool says code may
            // call it, a call from code that needs an approval is refused.
            Ruling::Approval(reason)
                if resolved.ticket.caller == Caller::Code
                    && !resolved.entry.tool.settings().callable_from_code =>
            {
                let text = code_cannot_wait_text(resolved.entry.tool.name());
                let mut decided =
                    std::mem::take(&mut resolved.ticket).refused(ErrorKind::Denied, text);
                decided.detail = Some(format!(
                    "a call made from code needs a person's approval ({reason}), and the tool is not callable_from_code"
                ));
                Err(Box::new(decided))
            }
            Ruling::Approval(reason) => Ok(Some(reason)),
            Ruling::Deny { reason, detail } => {
                let text = denied_text(resolved.entry.tool.name(), &reason);
                let mut decided =
                    std::mem::take(&mut resolved.ticket).refused(ErrorKind::Denied, text);
                decided.detail = detail.or(Some(reason));
                Err(Box::new(decided))
            }
        }
    }

    /// What the registry's and this run's policies, and the tool's `needs_approval`, decide
    /// for a validated call: the stricter wins; a policy that panics denies.
    pub(super) fn ask_policies(
        &self,
        entry: &Entry,
        call_id: &str,
        arguments: PolicyArguments<'_>,
        caller: Caller,
    ) -> (Ruling, Vec<String>) {
        let request = CallRequest {
            subject: &self.scope.subject,
            run_id: &self.scope.run_id,
            call_id,
            tool_name: entry.tool.name(),
            policy: entry.tool.settings(),
            arguments,
            caller,
        };
        let policies = (self.registry.call_policies().iter().map(|policy| &**policy))
            .chain(self.policies.iter().map(|policy| &**policy));
        let mut approval = None;
        // The ids of the policies that decided: those that denied, else those that asked for
        // an approval, else those that allowed.
        let mut allowed_by = Vec::new();
        let mut approval_by = Vec::new();
        for policy in policies {
            match catch_unwind(AssertUnwindSafe(|| policy.determine(&request))) {
                Ok(determined) => match determined.decision {
                    Decision::Allow => allowed_by.extend(determined.policies),
                    Decision::Deny(reason) => {
                        let ruling = Ruling::Deny {
                            reason,
                            detail: None,
                        };
                        return (ruling, determined.policies);
                    }
                    Decision::RequireApproval(reason) => {
                        approval.get_or_insert(reason);
                        approval_by.extend(determined.policies);
                    }
                },
                Err(payload) => {
                    let ruling = Ruling::Deny {
                        reason: "the call policy could not decide, so the call was refused".into(),
                        detail: Some(format!(
                            "call policy panicked: {}",
                            execution::panic_message(&*payload)
                        )),
                    };
                    return (ruling, Vec::new());
                }
            }
        }
        let ids = if approval.is_some() {
            approval_by
        } else {
            allowed_by
        };
        (self.needs_approval(entry, approval), ids)
    }

    /// The policies' `approval`, or else the tool's own `needs_approval`.
    fn needs_approval(&self, entry: &Entry, approval: Option<String>) -> Ruling {
        let approval = approval.or_else(|| {
            entry.tool.settings().needs_approval.then(|| {
                format!(
                    "the tool \"{}\" is marked as needing approval",
                    entry.tool.name()
                )
            })
        });
        match approval {
            Some(reason) => Ruling::Approval(reason),
            None => Ruling::Allow,
        }
    }
}

/// How the asynchronous policies' ids join those of the synchronous ones on the ticket.
pub(crate) enum AsyncIds {
    /// They decided alone (they denied, or asked for an approval where the others allowed).
    Replace(Vec<String>),
    /// They decided alike.
    Extend(Vec<String>),
}

/// `ruling` (not a denial) with the decisions of `policies`, asked in order about `request`,
/// each within its deadline: the stricter wins; no answer in time, or a panic, denies.
pub(crate) async fn decide_async(
    policies: &[(Box<dyn AsyncCallPolicy>, Duration)],
    request: CallRequest<'_>,
    ruling: Ruling,
) -> (Ruling, AsyncIds) {
    let mut approval = match ruling {
        Ruling::Approval(reason) => Some(reason),
        Ruling::Allow | Ruling::Deny { .. } => None,
    };
    let asked_before = approval.is_some();
    let mut allowed_by = Vec::new();
    let mut approval_by = Vec::new();
    for (index, (policy, deadline)) in policies.iter().enumerate() {
        let number = index + 1;
        let refused = |detail: String| Ruling::Deny {
            reason: "the call policy could not decide, so the call was refused".into(),
            detail: Some(detail),
        };
        // Making the future may panic too.
        let future = match catch_unwind(AssertUnwindSafe(|| policy.determine(request))) {
            Ok(future) => future,
            Err(payload) => {
                let detail = format!(
                    "asynchronous call policy {number} panicked: {}",
                    execution::panic_message(&*payload)
                );
                return (refused(detail), AsyncIds::Replace(Vec::new()));
            }
        };
        let answer = with_deadline(CatchUnwind(future), *deadline).await;
        let determined = match answer {
            Some(Ok(determined)) => determined,
            Some(Err(message)) => {
                let detail = format!("asynchronous call policy {number} panicked: {message}");
                return (refused(detail), AsyncIds::Replace(Vec::new()));
            }
            None => {
                let detail = format!(
                    "asynchronous call policy {number} timed out: no answer within {}",
                    humane(*deadline)
                );
                return (refused(detail), AsyncIds::Replace(Vec::new()));
            }
        };
        match determined.decision {
            Decision::Allow => allowed_by.extend(determined.policies),
            Decision::Deny(reason) => {
                let ruling = Ruling::Deny {
                    reason,
                    detail: None,
                };
                return (ruling, AsyncIds::Replace(determined.policies));
            }
            Decision::RequireApproval(reason) => {
                approval.get_or_insert(reason);
                approval_by.extend(determined.policies);
            }
        }
    }
    match approval {
        Some(reason) if asked_before => (Ruling::Approval(reason), AsyncIds::Extend(approval_by)),
        Some(reason) => (Ruling::Approval(reason), AsyncIds::Replace(approval_by)),
        None => (Ruling::Allow, AsyncIds::Extend(allowed_by)),
    }
}

/// What the policies decided.
pub(crate) enum Ruling {
    Allow,
    Deny {
        reason: String,
        detail: Option<String>,
    },
    Approval(String),
}
