//! `Run::call` and `Run::call_blocking`: a call from the model to its answer, through
//! resolution and the gate ([`admit`](super::admit), the one sequence of every path),
//! execution and [`conclude`](Run::conclude), audited once it is decided.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::admit::Approval;
use super::answer::{Decided, Ticket};
use crate::audit::{self, AUDITED_NAME, AuditEvent, CallEvent, truncate};
use crate::content::Payload;
use crate::discover::run::Run;
use crate::execute::execution::{self, Failure};
use crate::execute::observation::{ErrorKind, Observation};
use crate::host::context::{CallOptions, HostWaits, ToolContext};
use crate::project::discovery::Entry;
use crate::resolve::call::ToolCall;
use crate::shared::cancel::Cancellation;

impl Run {
    /// Resolves `call`, passes it through the gate and executes it.
    ///
    /// (Not an `async fn`: each one nested keeps its own copy of the call in its future, and
    /// a larger future is more to move.)
    pub fn call(&self, call: ToolCall) -> impl Future<Output = Observation> + Send + '_ {
        self.call_with_options(call, CallOptions::default())
    }

    /// [`call`](Self::call) with the call's own host and cancellation: see
    /// [`RunExt::call_with`](crate::server::RunExt::call_with).
    pub(crate) fn call_with_options(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> impl Future<Output = Observation> + Send + '_ {
        use tracing::Instrument as _;
        // The caller's trace, if it sent one, is the parent of the call's span. One future
        // either way (with no span, entering it does nothing).
        let span = (options.trace.as_ref())
            .map_or_else(tracing::Span::none, |trace| trace.span(call.name()));
        self.call_in_trace(call, options).instrument(span)
    }

    /// The call's future. Not an `async fn`, whose arguments its future keeps twice (as
    /// given, and moved into its body): an `async` block uses them where they are. And the
    /// tool is awaited through [`execution::start`], whose future keeps only what the wait
    /// needs: the call's future was 1,392 bytes, and every call moves it; 800 since
    /// (2026-12-04).
    #[expect(
        clippy::manual_async_fn,
        reason = "an `async fn` here made the future 256 bytes larger (1,056 against 800)"
    )]
    fn call_in_trace(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> impl Future<Output = Observation> + Send + '_ {
        async move {
            audit::ready(self.registry.audit_sink()).await;
            let started = self.clock();
            let mut resolved = match self.resolve(call, &options) {
                Ok(resolved) => resolved,
                Err(refused) => {
                    return self.finish_traced(*refused, started, options.trace.as_ref());
                }
            };
            if let Err(refused) = self.admit(&mut resolved, Approval::Ask).await {
                return self.finish_traced(*refused, started, options.trace.as_ref());
            }
            // `execution::start` here, not a function of its own around it: its future in
            // this one would keep the arguments twice, and returned as a future of its own (a
            // map of `execution::start`'s) it cost 67 instructions a call more (4,130 against
            // 4,063, 2026-12-04).
            let outcome = execution::start(
                &resolved.entry.tool,
                resolved.context,
                resolved.arguments,
                self.deadline(&resolved.entry),
                self.registry.blocking_pool(),
            )
            .await;
            self.conclude(
                &resolved.entry,
                resolved.ticket,
                outcome,
                started,
                options.trace.as_ref(),
            )
        }
    }

    /// Resolves, gates and executes `call` on this thread, without an async runtime (async
    /// tools, deadlines and asynchronous stores are driven by a small local executor).
    pub fn call_blocking(&self, call: ToolCall) -> Observation {
        self.call_blocking_with_options(call, CallOptions::default())
    }

    /// [`call_blocking`](Self::call_blocking), with the call's own host and cancellation (see
    /// [`RunExt::call_blocking_with`](crate::server::RunExt::call_blocking_with)).
    pub(crate) fn call_blocking_with_options(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> Observation {
        let span = options.trace.as_ref().map(|trace| trace.span(call.name()));
        let _entered = span.as_ref().map(tracing::Span::enter);
        let started = self.clock();
        let mut resolved = match self.resolve(call, &options) {
            Ok(resolved) => resolved,
            Err(refused) => return self.finish_traced(*refused, started, options.trace.as_ref()),
        };
        // The asynchronous steps of the gate (asynchronous policies, the approval store, a
        // quota store) are waited for here, on this thread, within their deadlines.
        if let Err(refused) = self.admit_here(&mut resolved, Approval::Ask) {
            return self.finish_traced(*refused, started, options.trace.as_ref());
        }
        let timeout = self.deadline(&resolved.entry);
        let outcome = execution::execute_blocking(
            &resolved.entry.tool,
            resolved.context,
            resolved.arguments,
            timeout,
            self.registry.blocking_pool(),
        );
        self.conclude(
            &resolved.entry,
            resolved.ticket,
            outcome,
            started,
            options.trace.as_ref(),
        )
    }

    /// The end of every call that ran, on every path (a task's is
    /// [`check::decided`](super::check::decided), on its own thread): the run's budget given
    /// back if the tool never started, the result through the result checks, the answer.
    #[inline]
    pub(super) fn conclude(
        &self,
        entry: &Entry,
        ticket: Ticket,
        outcome: Result<Payload, Failure>,
        started: Option<Instant>,
        trace: Option<&crate::shared::trace::TraceContext>,
    ) -> Observation {
        let outcome = self.refund_unrun(outcome);
        self.answer(entry, ticket, outcome, started, trace)
    }

    /// `outcome`, with the run's budget refunded if the tool never started.
    pub(super) fn refund_unrun(
        &self,
        outcome: Result<Payload, Failure>,
    ) -> Result<Payload, Failure> {
        outcome.map_err(|failure| self.refund_failure(failure))
    }

    /// A call that found no thread to run on did not run: it does not count against the
    /// run's budget.
    pub(super) fn refund_failure(&self, failure: Failure) -> Failure {
        if failure.kind == ErrorKind::Unavailable
            && let Some(budget) = &self.budget
        {
            budget.refund();
        }
        failure
    }

    pub(super) fn deadline(&self, entry: &Entry) -> Option<Duration> {
        match (entry.tool.settings().timeout, self.timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The context of call `call_id` to `entry`'s tool, with `options`' host and cancellation.
    pub(crate) fn context(
        &self,
        call_id: &str,
        entry: &Entry,
        options: &CallOptions,
    ) -> ToolContext {
        // A tool that takes no context, called without a host, a cancellation or a deadline
        // of its own: nothing of the call is read through its context.
        let unread = !entry.tool.uses_context()
            && options.host.is_none()
            && options.cancellation.is_none()
            && self.deadline(entry).is_none();
        if unread {
            return ToolContext::unread(self.scope.clone());
        }
        let host = options
            .host
            .clone()
            .unwrap_or_else(|| self.effective_host());
        let cancellation = match &options.cancellation {
            Some(caller) => caller.child(),
            // A deadline trips the call's own cancellation, for a tool to see.
            None if self.deadline(entry).is_some() => Cancellation::new(),
            None => Cancellation::never(),
        };
        let registry = self.registry.host_waits();
        let waits = HostWaits {
            elicit: options.elicit_timeout.unwrap_or(registry.elicit),
            sample: options.sample_timeout.unwrap_or(registry.sample),
        };
        ToolContext::in_run(
            self.scope.clone(),
            Arc::from(call_id),
            entry.tool.name_cow(),
            host,
            cancellation,
            waits,
        )
    }

    /// When a call started, if the audit log will want its duration.
    pub(crate) fn clock(&self) -> Option<Instant> {
        audit::wanted(self.registry.audit_sink()).then(Instant::now)
    }

    /// The answer to a call that ran: its result through the result checks, if there are
    /// any; audited, if a sink wants it, else made straight from the ticket.
    pub(super) fn answer(
        &self,
        entry: &Entry,
        ticket: Ticket,
        outcome: Result<Payload, Failure>,
        started: Option<Instant>,
        trace: Option<&crate::shared::trace::TraceContext>,
    ) -> Observation {
        if !self.registry.result_checks().is_empty() {
            return self.answer_checked(entry, ticket, outcome, started, trace);
        }
        if audit::wanted(self.registry.audit_sink()) {
            self.finish_traced(ticket.outcome(outcome), started, trace)
        } else {
            ticket.observation(outcome)
        }
    }

    /// [`answer`](Self::answer) through the result checks (out of line: the path without
    /// them stays as it was).
    #[cold]
    #[inline(never)]
    fn answer_checked(
        &self,
        entry: &Entry,
        ticket: Ticket,
        outcome: Result<Payload, Failure>,
        started: Option<Instant>,
        trace: Option<&crate::shared::trace::TraceContext>,
    ) -> Observation {
        let checks = self.registry.result_checks();
        let decided = super::check::decided(checks, &self.scope, entry, ticket, outcome);
        self.finish_traced(decided, started, trace)
    }

    /// Audits the decision and makes the observation.
    pub(crate) fn finish(&self, decided: Decided, started: Option<Instant>) -> Observation {
        self.finish_traced(decided, started, None)
    }

    /// [`finish`](Self::finish) for a call of the distributed trace `trace`.
    pub(crate) fn finish_traced(
        &self,
        decided: Decided,
        started: Option<Instant>,
        trace: Option<&crate::shared::trace::TraceContext>,
    ) -> Observation {
        let sink = self.registry.audit_sink();
        if audit::wanted(sink) {
            let (argument_bytes, argument_hash) = decided.arguments.clone().unwrap_or_default();
            audit::emit(
                sink,
                AuditEvent::Call(CallEvent {
                    run_id: self.id().to_owned(),
                    tenant: self.subject().tenant().to_owned(),
                    principal: self.subject().principal().map(str::to_owned),
                    fingerprint: self.allowed.fingerprint(),
                    call_id: truncate(decided.observation.call_id(), AUDITED_NAME),
                    tool: truncate(decided.observation.tool_name(), AUDITED_NAME),
                    outcome: decided.observation_kind(),
                    duration: started.map_or(Duration::ZERO, |started| started.elapsed()),
                    argument_bytes,
                    argument_hash,
                    detail: decided.detail.clone(),
                    approval_id: decided.approval_id.clone(),
                    tool_version: decided.tool_version,
                    trace_id: trace.map(|trace| trace.trace_id().to_owned()),
                    caller: decided.caller,
                    policies: decided
                        .policies
                        .iter()
                        .map(|id| truncate(id, AUDITED_NAME))
                        .collect(),
                    result_check: decided.result_check,
                }),
            );
        }
        decided.observation.with_generated_id(decided.generated_id)
    }
}

#[cfg(test)]
mod tests {
    use super::CallOptions;
    use crate::{DynamicTool, Registry, Subject, ToolCall};

    /// Whoever awaits a call moves its future, so its size is part of every call's cost
    /// (issue 22's profile of `Run::call`: a third of the time was `memmove`). The layers
    /// above `call_in_trace` keep no copy of the call, and the future of an approval request
    /// (a person's approval is rare; its future is the largest) is boxed, not inside.
    #[test]
    fn a_calls_future_is_one_layer_and_holds_no_approval_request() {
        let tool = DynamicTool::new("x", "Does x.")
            .parameters(serde_json::json!({"type": "object", "properties": {}}))
            .handler(|_, _| Ok::<_, String>(serde_json::Value::Null))
            .public();
        let registry = Registry::builder().tool(tool).build().expect("builds");
        let run = registry.open_run("r", &Subject::new("t"));
        let call = || ToolCall::from_json_text("1", "x", "{}");
        let outer = size_of_val(&run.call(call()));
        let inner = size_of_val(&run.call_in_trace(call(), CallOptions::default()));
        let resolved = run
            .resolve(call(), &CallOptions::default())
            .unwrap_or_else(|_| panic!("resolves"));
        let approval = size_of_val(&run.request_approval(resolved, String::new()));
        eprintln!("Run::call {outer} bytes, call_in_trace {inner}, request_approval {approval}");
        assert!(
            outer <= inner + size_of::<tracing::Span>() + 16,
            "{outer} > {inner}"
        );
        assert!(inner < approval, "{inner} >= {approval}");
    }
}
