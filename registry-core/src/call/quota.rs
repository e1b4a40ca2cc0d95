//! The last of the gate (step 5.2), on every path: the run's budget and the tool's rate limit,
//! then revocation and suspension once more, just before the tool runs.

use super::answer::{
    Decided, Resolved, budget_spent_text, rate_limited_text, revoked_text, unavailable_text,
};
use crate::discover::run::Run;
use crate::execute::observation::ErrorKind;
use crate::gate::{QuotaDecision, QuotaKey};
use crate::project::discovery::Entry;
use crate::shared::rate_limit::RateLimit;

impl Run {
    /// Revocation and suspension checked again after the gate: the asynchronous policies (up
    /// to their deadlines), a person's approval and the quota store all take time after
    /// [`resolve`](Self::resolve) checked them, and a tool revoked, or a registry suspended,
    /// meanwhile must not run. Refused as `resolve` refuses, the budget given back.
    pub(super) fn still_callable(&self, resolved: &Resolved) -> Result<(), Box<Decided>> {
        let entry = &resolved.entry;
        let suspension = self.registry.suspension();
        let revoked = suspension.is_none() && self.registry.is_revoked(entry.slot, entry.version);
        if suspension.is_none() && !revoked {
            return Ok(());
        }
        if let Some(budget) = &self.budget {
            budget.refund();
        }
        let name = entry.tool.name();
        let decided = match suspension {
            Some(reason) => {
                let text = unavailable_text(name);
                let mut decided = resolved.ticket.copy().refused(ErrorKind::Unavailable, text);
                decided.detail = Some(reason);
                decided
            }
            None => {
                let text = revoked_text(name);
                let mut decided = resolved.ticket.copy().refused(ErrorKind::Revoked, text);
                decided.detail = Some("revoked after the call passed the gate".into());
                decided
            }
        };
        Err(Box::new(decided))
    }

    /// Takes from the budget, and from an in-memory rate limit; says when a store must be
    /// asked.
    pub(super) fn admission(&self, resolved: &Resolved) -> Admission {
        let limit = resolved
            .entry
            .tool
            .settings()
            .rate_limit
            .or(self.registry.gate().rate_limit);
        if let Some(budget) = &self.budget
            && !budget.take()
        {
            let text = budget_spent_text(budget.limit);
            let decided = resolved.ticket.copy().refused(ErrorKind::RateLimited, text);
            return Admission::Refused(Box::new(decided));
        }
        let Some(limit) = limit else {
            return Admission::Granted;
        };
        match self.registry.gate().quotas.memory() {
            Some(memory) => {
                let answer = memory.acquire_now(self.quota_key(&resolved.entry), limit);
                match self.quota_answer(resolved, Ok(answer)) {
                    Ok(()) => Admission::Granted,
                    Err(decided) => Admission::Refused(decided),
                }
            }
            None => Admission::Ask(limit),
        }
    }

    pub(super) fn quota_key<'a>(&'a self, entry: &'a Entry) -> QuotaKey<'a> {
        QuotaKey {
            tenant: self.subject().tenant(),
            agent: self.subject().agent(),
            principal: self.subject().principal(),
            tool: entry.tool.name(),
        }
    }

    pub(super) fn quota_answer(
        &self,
        resolved: &Resolved,
        answer: Result<QuotaDecision, crate::approval::request::StoreError>,
    ) -> Result<(), Box<Decided>> {
        let name = resolved.entry.tool.name();
        let refused = match answer {
            Ok(QuotaDecision::Granted) => return Ok(()),
            Ok(QuotaDecision::Exhausted { retry_after }) => {
                let text = rate_limited_text(name, retry_after);
                let mut decided = resolved.ticket.copy().refused(ErrorKind::RateLimited, text);
                decided.observation = decided.observation.with_retry_after(Some(retry_after));
                decided
            }
            Err(error) => {
                let mut decided = resolved
                    .ticket
                    .copy()
                    .refused(ErrorKind::Unavailable, unavailable_text(name));
                decided.detail = Some(format!("quota store: {error}"));
                decided
            }
        };
        if let Some(budget) = &self.budget {
            budget.refund();
        }
        Err(Box::new(refused))
    }
}

/// Whether the budget and rate limit admit a call.
pub(super) enum Admission {
    Granted,
    Refused(Box<Decided>),
    Ask(RateLimit),
}
