//! Step 5.4 of a call that ran: the result checks, in order, before the model reads the result.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::answer::{Decided, Ticket, withheld_text};
use crate::audit::ResultChecked;
use crate::content::Payload;
use crate::execute::execution::{self, Failure};
use crate::execute::observation::ErrorKind;
use crate::gate::{ResultCheck, ResultDecision, ToolResult};
use crate::host::context::RunScope;
use crate::project::discovery::Entry;

/// The decision of a call to `entry`'s tool that ran in `scope`: its result through `checks`
/// if there are any (see [`checked`]). Every path that ran a tool comes here (a call's
/// through [`Run::conclude`](crate::Run), a task's on its own thread).
pub(crate) fn decided(
    checks: &[Box<dyn ResultCheck>],
    scope: &RunScope,
    entry: &Entry,
    ticket: Ticket,
    outcome: Result<Payload, Failure>,
) -> Decided {
    if checks.is_empty() {
        ticket.outcome(outcome)
    } else {
        checked(checks, scope, entry, ticket, outcome)
    }
}

/// The decision of a call to `entry`'s tool that ran in `scope`, its result through `checks`
/// (in order): passed, redacted, or withheld (by a check's decision, or a check that
/// panicked). A failure is not shown to them.
fn checked(
    checks: &[Box<dyn ResultCheck>],
    scope: &RunScope,
    entry: &Entry,
    ticket: Ticket,
    outcome: Result<Payload, Failure>,
) -> Decided {
    let payload = match outcome {
        Ok(payload) => payload,
        Err(failure) => return ticket.outcome(Err(failure)),
    };
    let (mut value, mut blocks) = payload.into_parts();
    let mut result = ToolResult {
        subject: &scope.subject,
        run_id: &scope.run_id,
        call_id: &ticket.call_id,
        tool_name: entry.tool.name(),
        settings: entry.tool.settings(),
        caller: ticket.caller,
        value: &mut value,
        blocks: &mut blocks,
        redacted: false,
    };
    let mut redacted_by = Vec::new();
    for (index, check) in checks.iter().enumerate() {
        let before = result.redacted;
        result.redacted = false;
        let decision = catch_unwind(AssertUnwindSafe(|| check.check(&mut result)));
        if result.redacted {
            redacted_by.push(index + 1);
        }
        result.redacted |= before;
        let (reason, detail) = match decision {
            Ok(ResultDecision::Pass) => continue,
            Ok(ResultDecision::Withhold(reason)) => {
                let detail = format!("result check {} withheld the result: {reason}", index + 1);
                (reason, detail)
            }
            Err(panic) => (
                "the check of the result failed".to_owned(),
                format!(
                    "result check {} panicked, so the result was withheld: {}",
                    index + 1,
                    execution::panic_message(&*panic)
                ),
            ),
        };
        let text = withheld_text(entry.tool.name(), &reason);
        let mut decided = ticket.refused(ErrorKind::Denied, text);
        decided.result_check = Some(ResultChecked::Withheld);
        decided.detail = Some(detail);
        return decided;
    }
    let mut decided = ticket.outcome(Ok(Payload::from_parts(value, blocks)));
    if !redacted_by.is_empty() {
        let checks: Vec<String> = redacted_by.iter().map(ToString::to_string).collect();
        decided.result_check = Some(ResultChecked::Redacted);
        decided.detail = Some(format!(
            "result redacted by result check {}",
            checks.join(", ")
        ));
    }
    decided
}
