//! Steps 1 to 4 of a call: the allowed set, revocation and readiness, the arguments, then the
//! gate (the policies, a person's approval, the budget and the rate limit).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::answer::{
    Decided, Resolved, Ticket, approval_required_text, approval_share_full_text,
    approval_too_large_text, approval_unavailable, code_cannot_wait_text, denied_text, humane,
    humane_wait, revoked_text, too_many_approvals_text, unavailable_text,
};
use crate::approval::request::ApprovalRequest;
use crate::approval::store::Insertion;
use crate::audit::{self, ApprovalEventKind, truncate};
use crate::discover::run::Run;
use crate::execute::execution;
use crate::execute::observation::ErrorKind;
use crate::gate::async_policy::CatchUnwind;
use crate::gate::{
    AsyncCallPolicy, CallRequest, Decision, PolicyArguments, QuotaDecision, QuotaKey,
};
use crate::host::context::CallOptions;
use crate::project::discovery::Entry;
use crate::resolve::call::{CallHeader, Given, ToolCall};
use crate::resolve::checked::CheckedArguments;
use crate::resolve::fast;
use crate::shared::audit_key::argument_fingerprint;
use crate::shared::caller::Caller;
use crate::shared::deadline::with_deadline;
use crate::shared::rate_limit::RateLimit;
use crate::shared::tool_error::{ArgumentProblem, ToolError};

/// At most this many tool names are listed to a model that called an unknown tool.
const LISTED_NAMES: usize = 50;

impl Run {
    /// Steps 1 to 3: the allowed set, revocation and readiness, the arguments.
    pub(super) fn resolve(
        &self,
        call: ToolCall,
        options: &CallOptions,
    ) -> Result<Resolved, Box<Decided>> {
        let limits = self.registry.limits();
        let (header, given) = call.into_given();
        let CallHeader {
            id: call_id,
            name,
            generated_id,
            caller,
        } = header;
        // The arguments' shape is checked first (cheaply, without recursion) so that the
        // audit log can record their size and hash for every call, refused ones included.
        // Without an audit log, argument text waits for the tool: its schema may let the
        // typed fast path check it without making a value of it.
        let audit = audit::wanted(self.registry.audit_sink());
        let parse = |given: Given| {
            given.parse(limits).and_then(|arguments| {
                limits.check(&arguments)?;
                Ok(arguments)
            })
        };
        let pending = match given {
            Given::Text(text) if !audit => Pending::Text(text),
            given => Pending::Parsed(parse(given)),
        };
        let fingerprint = match &pending {
            Pending::Parsed(Ok(arguments)) if audit => {
                Some(argument_fingerprint(self.registry.audit_key(), arguments))
            }
            _ => None,
        };
        let refuse = |kind, text, detail, version| {
            let mut decided = Decided::refused(call_id.clone(), name.clone(), kind, text);
            decided.arguments = fingerprint.clone();
            decided.generated_id = generated_id;
            decided.detail = detail;
            decided.tool_version = version;
            Err(Box::new(decided))
        };
        let Some(entry) = self.allowed.find(&name) else {
            let kind = if self.registry.contains(&name) {
                ErrorKind::NotAllowed
            } else {
                ErrorKind::UnknownTool
            };
            return refuse(kind, self.unknown_tool_text(&name), None, None);
        };
        let version = Some(entry.tool.version_fingerprint());
        if let Some(reason) = self.registry.suspension() {
            return refuse(
                ErrorKind::Unavailable,
                unavailable_text(&name),
                Some(reason),
                version,
            );
        }
        if self.registry.is_revoked(entry.slot, entry.version) {
            return refuse(ErrorKind::Revoked, revoked_text(&name), None, version);
        }
        if let Some(reason) = self.registry.not_ready(entry.slot) {
            return refuse(
                ErrorKind::Unavailable,
                unavailable_text(&name),
                Some(reason),
                version,
            );
        }
        let parsed = match pending {
            Pending::Text(text) => match entry.tool.shape() {
                Some(shape) => {
                    fast::check(shape, text, limits).map_err(|text| parse(Given::Text(text)))
                }
                None => Err(parse(Given::Text(text))),
            },
            Pending::Parsed(parsed) => Err(parsed),
        };
        let arguments = match parsed {
            Ok(fast) => CheckedArguments::fast(fast),
            // The slow path: the text parsed (strictly, under the limits) into a value, then
            // validated by jsonschema, every problem listed.
            Err(parsed) => {
                let mut arguments = match parsed {
                    Ok(arguments) => arguments,
                    Err(problem) => {
                        let mut decided = Decided::invalid(call_id, name, vec![problem]);
                        decided.generated_id = generated_id;
                        decided.tool_version = version;
                        return Err(Box::new(decided));
                    }
                };
                if let Err(problems) = validate(&entry.tool, &mut arguments) {
                    let mut decided = Decided::invalid(call_id, name, problems);
                    decided.arguments = fingerprint;
                    decided.generated_id = generated_id;
                    decided.tool_version = version;
                    return Err(Box::new(decided));
                }
                CheckedArguments::Value(arguments)
            }
        };
        let context = self.context(&call_id, entry, options);
        Ok(Resolved {
            entry: entry.clone(),
            context,
            arguments,
            ticket: Ticket {
                call_id,
                name,
                arguments: fingerprint,
                generated_id,
                structured: entry.tool.output_schema().is_some(),
                approval: None,
                tool_version: version,
                caller,
                policies: Vec::new(),
            },
        })
    }

    /// Step 4, the policies: allow (`Ok(None)`), ask a person (`Ok(Some(reason))`), or deny.
    /// The call is borrowed, not moved through: it is a few hundred bytes, and the hot path
    /// used to copy it in and out of this step (issue 22's profile: copies were a sixth of a
    /// call's time).
    pub(super) fn gate(&self, resolved: &mut Resolved) -> Result<Option<String>, Box<Decided>> {
        let ruling = self.ruling(resolved);
        self.rule(resolved, ruling)
    }

    /// [`gate`](Self::gate) with the asynchronous call policies too, asked after the others
    /// unless they denied, each within its deadline.
    pub(super) async fn gate_async(
        &self,
        resolved: &mut Resolved,
    ) -> Result<Option<String>, Box<Decided>> {
        let ruling = self.ruling(resolved);
        let ruling = match ruling {
            Ruling::Deny { .. } => ruling,
            Ruling::Allow | Ruling::Approval(_) => self.ask_async_policies(resolved, ruling).await,
        };
        self.rule(resolved, ruling)
    }

    /// The gate of the async paths (calls and tasks): [`gate`](Self::gate), or
    /// [`gate_async`](Self::gate_async) when the registry has asynchronous policies. Boxed:
    /// only a registry with asynchronous policies pays for their future, and every other
    /// call's future stays small to move.
    pub(super) async fn gate_any(
        &self,
        resolved: &mut Resolved,
    ) -> Result<Option<String>, Box<Decided>> {
        if self.registry.async_call_policies().is_empty() {
            self.gate(resolved)
        } else {
            Box::pin(self.gate_async(resolved)).await
        }
    }

    /// What the synchronous policies and the tool's `needs_approval` decide; the ids of the
    /// policies that decided go on the ticket.
    #[inline]
    fn ruling(&self, resolved: &mut Resolved) -> Ruling {
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
    fn rule(
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

    /// The last step before the tool runs, on every path (calls, blocking calls, approved
    /// calls, tasks): the run's budget and the tool's rate limit, where a store must be
    /// asked; then revocation and suspension once more ([`still_callable`](Self::still_callable)).
    pub(crate) async fn admit(&self, resolved: &Resolved) -> Result<(), Box<Decided>> {
        match self.admission(resolved) {
            Admission::Granted => {}
            Admission::Refused(decided) => return Err(decided),
            Admission::Ask(limit) => {
                let store = self.registry.gate().quotas.store();
                let answer = store.acquire(self.quota_key(&resolved.entry), limit).await;
                self.quota_answer(resolved, answer)?;
            }
        }
        self.still_callable(resolved)
    }

    /// [`admit`](Self::admit) on this thread, without an async runtime.
    pub(super) fn admit_blocking(&self, resolved: &Resolved) -> Result<(), Box<Decided>> {
        match self.admission(resolved) {
            Admission::Granted => {}
            Admission::Refused(decided) => return Err(decided),
            Admission::Ask(limit) => {
                let store = self.registry.gate().quotas.store();
                let answer =
                    pollster::block_on(store.acquire(self.quota_key(&resolved.entry), limit));
                self.quota_answer(resolved, answer)?;
            }
        }
        self.still_callable(resolved)
    }

    /// Revocation and suspension checked again after the gate: the asynchronous policies (up
    /// to their deadlines), a person's approval and the quota store all take time after
    /// [`resolve`](Self::resolve) checked them, and a tool revoked, or a registry suspended,
    /// meanwhile must not run. Refused as `resolve` refuses, the budget given back.
    fn still_callable(&self, resolved: &Resolved) -> Result<(), Box<Decided>> {
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
            let text = format!(
                "this run has made all {} tool calls it may make; no more tools can be called in it",
                budget.limit
            );
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
                let text = format!(
                    "the tool \"{name}\" was called too often; try again in {}",
                    humane_wait(retry_after)
                );
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

    pub(super) fn unknown_tool_text(&self, name: &str) -> String {
        let shown = truncate(name, 80);
        if self.allowed.is_empty() {
            return format!("unknown tool {shown:?}; this run has no tools to call");
        }
        let mut names: Vec<&str> = self.allowed.names().take(LISTED_NAMES).collect();
        if self.allowed.len() > LISTED_NAMES {
            names.push("...");
        }
        format!(
            "unknown tool {shown:?}; the tools you can call are: {}",
            names.join(", ")
        )
    }
}

/// Validates `arguments` against `tool`'s schema, after dropping `null` optionals.
pub(crate) fn validate(
    tool: &crate::Tool,
    arguments: &mut Value,
) -> Result<(), Vec<ArgumentProblem>> {
    tool.normalize(arguments);
    // A schema the fast path reads exactly: a value that fits it is valid, without jsonschema.
    if tool
        .shape()
        .is_some_and(|shape| fast::fits(shape, arguments))
    {
        return Ok(());
    }
    tool.validate(arguments).map_err(|error| match error {
        ToolError::InvalidArguments(problems) => problems,
        other => vec![ArgumentProblem::new("", other.to_string())],
    })
}

/// A call's arguments before its tool is known: parsed already, or text for the fast path.
enum Pending {
    Parsed(Result<Value, ArgumentProblem>),
    Text(String),
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

/// Whether the budget and rate limit admit a call.
pub(super) enum Admission {
    Granted,
    Refused(Box<Decided>),
    Ask(RateLimit),
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use crate::{ErrorKind, Registry, Subject, ToolCall, tool};

    /// Add two small numbers.
    #[tool(public, crate = crate)]
    fn add_small(a: u8, b: Option<u8>) -> u16 {
        u16::from(a) + u16::from(b.unwrap_or(0))
    }

    #[derive(Deserialize, JsonSchema)]
    struct Slug {
        #[schemars(regex(pattern = r"^[a-z]+$"))]
        slug: String,
    }

    /// Echo a slug.
    #[tool(public, crate = crate)]
    fn echo_slug(item: Slug) -> String {
        item.slug
    }

    fn registry() -> Registry {
        Registry::builder()
            .declared_in([module_path!()])
            .build()
            .expect("builds")
    }

    #[test]
    fn only_a_schema_of_exact_keywords_takes_the_fast_path() {
        let registry = registry();
        let shape = |name: &str| registry.get(name).expect("registered").shape().is_some();
        assert!(shape("add_small"));
        // `pattern` is not enforced by typed deserialization: jsonschema checks it.
        assert!(!shape("echo_slug"));
    }

    #[test]
    fn both_paths_give_the_same_answers() {
        let registry = registry();
        let run = registry.open_run("run", &Subject::new("acme"));
        let cases = [
            ("add_small", r#"{"a": 200, "b": 55}"#),
            ("add_small", r#"{"a": 200, "b": null}"#),
            ("add_small", r#"{"a": 256}"#),
            ("add_small", r#"{"a": 1.0}"#),
            ("add_small", r#"{"a": 1, "a": 2}"#),
            ("add_small", r#"{"a": 1, "c": 2}"#),
            ("add_small", r#"{"b": 1}"#),
            ("add_small", r#"{"a": 1} x"#),
            ("echo_slug", r#"{"item": {"slug": "abc"}}"#),
            ("echo_slug", r#"{"item": {"slug": "ABC"}}"#),
        ];
        for (name, text) in cases {
            let fast = run.call_blocking(ToolCall::from_json_text("c", name, text));
            // A `Value` always takes the slow path.
            let slow = match serde_json::from_str(text) {
                Ok(value) => run.call_blocking(ToolCall::new("c", name, value)),
                Err(_) => continue,
            };
            if text.contains(r#""a": 1, "a""#) {
                // serde_json's `Value` keeps the last of repeated keys; the text is refused.
                assert_eq!(fast.error_kind(), Some(ErrorKind::InvalidArguments));
                continue;
            }
            assert_eq!(fast, slow, "{name}({text})");
        }
        let answer = run.call_blocking(ToolCall::from_json_text(
            "c",
            "add_small",
            r#"{"a": 200, "b": 55}"#,
        ));
        assert_eq!(answer.json(), &json!(255));
        let answer = run.call_blocking(ToolCall::from_json_text("c", "add_small", r#"{"a": 256}"#));
        assert_eq!(
            answer.error_text(),
            Some(
                "invalid arguments for \"add_small\": /a: must be at most 255, got 256; call it again with arguments that match its schema"
            )
        );
    }
}
