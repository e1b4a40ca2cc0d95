//! How a call is answered: what is kept of it while it runs, the observation it ends as, and
//! the texts the model reads.

use std::time::Duration;

use crate::audit::truncate;
use crate::content::Payload;
use crate::discover::allowed::AllowedSet;
use crate::execute::execution::Failure;
use crate::execute::observation::{ErrorKind, Observation};
use crate::host::context::ToolContext;
use crate::project::discovery::Entry;
use crate::resolve::checked::CheckedArguments;
use crate::shared::caller::Caller;
use crate::shared::tool_error::{ArgumentProblem, ToolError};

/// A call that passed the gate, ready to run.
pub(crate) struct Resolved {
    pub(crate) entry: Entry,
    pub(crate) context: ToolContext,
    pub(crate) arguments: CheckedArguments,
    pub(crate) ticket: Ticket,
}

/// What is kept of a call while it runs, to answer it afterwards.
#[derive(Default)]
pub(crate) struct Ticket {
    pub(crate) call_id: String,
    pub(crate) name: String,
    pub(crate) arguments: Option<(usize, String)>,
    pub(crate) generated_id: bool,
    pub(crate) structured: bool,
    pub(crate) approval: Option<String>,
    /// The version of the tool the call resolved to, for the audit log.
    pub(crate) tool_version: Option<crate::Fingerprint>,
    /// Who made the call.
    pub(crate) caller: Caller,
    /// The ids of the policies that decided the call, for the audit log.
    pub(crate) policies: Vec<String>,
    /// Whether the call asked to start as a task: a person's approval, if it needs one,
    /// starts the task.
    pub(crate) task: bool,
}

impl Ticket {
    pub(super) fn copy(&self) -> Ticket {
        Ticket {
            call_id: self.call_id.clone(),
            name: self.name.clone(),
            arguments: self.arguments.clone(),
            generated_id: self.generated_id,
            structured: self.structured,
            approval: self.approval.clone(),
            tool_version: self.tool_version,
            caller: self.caller,
            policies: self.policies.clone(),
            task: self.task,
        }
    }

    /// The call refused with `kind` before it ran.
    pub(crate) fn refused(self, kind: ErrorKind, text: String) -> Decided {
        let mut decided = Decided::refused(self.call_id, self.name, kind, text);
        decided.arguments = self.arguments;
        decided.generated_id = self.generated_id;
        decided.approval_id = self.approval;
        decided.tool_version = self.tool_version;
        decided.caller = self.caller;
        decided.policies = self.policies;
        decided
    }

    /// The answer to a call that ran, when nothing is audited: the observation made
    /// straight from the ticket, without the decision's record around it (which was copied
    /// twice on the way out: issue 22's profile).
    pub(crate) fn observation(self, outcome: Result<Payload, Failure>) -> Observation {
        let generated_id = self.generated_id;
        observe(self.call_id, self.name, self.structured, outcome)
            .0
            .with_generated_id(generated_id)
    }

    /// The decision of a call that ran, for the audit log and the answer.
    pub(crate) fn outcome(self, outcome: Result<Payload, Failure>) -> Decided {
        let (observation, detail) = observe(self.call_id, self.name, self.structured, outcome);
        Decided {
            observation,
            arguments: self.arguments,
            detail,
            generated_id: self.generated_id,
            approval_id: self.approval,
            tool_version: self.tool_version,
            caller: self.caller,
            policies: self.policies,
            result_check: None,
        }
    }
}

/// The observation of a call that ran, and what only the audit log gets of a failure.
fn observe(
    call_id: String,
    name: String,
    structured: bool,
    outcome: Result<Payload, Failure>,
) -> (Observation, Option<String>) {
    match outcome {
        Ok(payload) => (
            Observation::success(call_id, name, payload).with_structured(structured),
            None,
        ),
        Err(failure) => {
            let text = failure_text(&name, &failure);
            let problems = match &failure.error {
                Some(ToolError::InvalidArguments(problems)) => problems.clone(),
                _ => Vec::new(),
            };
            let observation =
                Observation::error(call_id, name, failure.kind, text).with_problems(problems);
            (observation, failure.detail)
        }
    }
}

/// A decided call: its observation and what the audit log records of it.
pub(crate) struct Decided {
    pub(crate) observation: Observation,
    pub(crate) arguments: Option<(usize, String)>,
    pub(crate) detail: Option<String>,
    pub(crate) generated_id: bool,
    pub(crate) approval_id: Option<String>,
    pub(crate) tool_version: Option<crate::Fingerprint>,
    pub(crate) caller: Caller,
    pub(crate) policies: Vec<String>,
    /// What the result checks did to the result, if anything.
    pub(crate) result_check: Option<crate::audit::ResultChecked>,
}

impl Decided {
    pub(crate) fn refused(call_id: String, name: String, kind: ErrorKind, text: String) -> Decided {
        Decided {
            observation: Observation::error(call_id, name, kind, text),
            arguments: None,
            detail: None,
            generated_id: false,
            approval_id: None,
            tool_version: None,
            caller: Caller::Model,
            policies: Vec::new(),
            result_check: None,
        }
    }

    pub(super) fn invalid(
        call_id: String,
        name: String,
        problems: Vec<ArgumentProblem>,
    ) -> Decided {
        let text = invalid_arguments_text(&name, &problems);
        let mut decided = Decided::refused(call_id, name, ErrorKind::InvalidArguments, text);
        decided.observation = decided.observation.with_problems(problems);
        decided
    }

    pub(super) fn observation_kind(&self) -> Option<ErrorKind> {
        self.observation.error_kind()
    }
}

pub(crate) fn revoked_text(name: &str) -> String {
    format!(
        "the tool \"{name}\" has been withdrawn and can no longer be called; continue without it"
    )
}

pub(crate) fn unavailable_text(name: &str) -> String {
    format!(
        "the tool \"{name}\" is not available right now; nothing was done. Try again later, or continue without it"
    )
}

pub(crate) fn denied_text(name: &str, reason: &str) -> String {
    format!(
        "the call to \"{name}\" was denied: {reason}. Nothing was done; do not repeat the same call"
    )
}

pub(super) fn too_many_approvals_text(name: &str, max: usize) -> String {
    format!(
        "the call to \"{name}\" needs a person's approval, but too many approvals are waiting already (at most {max} at once); nothing was done. Ask the person to decide the waiting ones, or wait until they expire, then call again"
    )
}

/// The text of a call whose principal's share of the approval store is full.
pub(super) fn approval_share_full_text(name: &str) -> String {
    format!(
        "the call to \"{name}\" needs a person's approval, but this user's approval requests already take all the room they may; nothing was done. Ask the person to decide the waiting ones, or wait until they expire, then call again"
    )
}

/// The text of a call whose arguments are too large to be kept for a person's approval.
pub(super) fn approval_too_large_text(name: &str, max: usize) -> String {
    format!(
        "the call to \"{name}\" needs a person's approval, but its arguments are too large to be shown to a person (at most {max} bytes as JSON); nothing was done. Call it again with smaller arguments"
    )
}

/// The answer to a call whose approval cannot be asked for: the store failed.
pub(super) fn approval_unavailable(
    ticket: Ticket,
    name: &str,
    error: &crate::approval::request::StoreError,
) -> Decided {
    let text = format!(
        "the call to \"{name}\" needs a person's approval, which cannot be asked for right now; nothing was done"
    );
    let mut decided = ticket.refused(ErrorKind::Unavailable, text);
    decided.detail = Some(format!("approval store: {error}"));
    decided
}

pub(super) fn approval_required_text(name: &str, reason: &str) -> String {
    format!(
        "the call to \"{name}\" needs a person's approval ({reason}); nothing was done yet. The result comes once someone approves or denies it"
    )
}

pub(super) fn invalid_arguments_text(name: &str, problems: &[ArgumentProblem]) -> String {
    let listed = problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    format!(
        "invalid arguments for \"{name}\": {listed}; call it again with arguments that match its schema"
    )
}

pub(super) fn failure_text(name: &str, failure: &Failure) -> String {
    match (failure.kind, &failure.error) {
        (ErrorKind::InvalidArguments, Some(ToolError::InvalidArguments(problems))) => {
            invalid_arguments_text(name, problems)
        }
        (ErrorKind::Panicked, _) => format!(
            "the tool \"{name}\" failed with an internal error; the details were logged for the operators"
        ),
        (ErrorKind::Cancelled, _) => format!(
            "the call to \"{name}\" was cancelled before it finished; its result, if any, was discarded"
        ),
        (ErrorKind::Unavailable, Some(ToolError::Unavailable(text))) => {
            format!("the tool \"{name}\" is unavailable: {text}. Try again later")
        }
        (ErrorKind::Unavailable, _) => format!(
            "the tool \"{name}\" could not start because the server is busy; nothing was done. Try again later"
        ),
        (ErrorKind::TimedOut, _) => format!(
            "the tool \"{name}\" did not finish within {} and was abandoned",
            humane(failure.timeout.unwrap_or_default())
        ),
        (_, Some(ToolError::Failed(text))) => format!("the tool \"{name}\" failed: {text}"),
        (_, Some(error)) => format!("the tool \"{name}\" failed: {error}"),
        (_, None) => format!("the tool \"{name}\" failed"),
    }
}

pub(super) fn humane(duration: Duration) -> String {
    if duration.subsec_millis() == 0 && duration.as_secs() > 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// A wait, rounded up to what a model can act on: whole seconds past one second.
pub(super) fn humane_wait(wait: Duration) -> String {
    if wait >= Duration::from_secs(1) {
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        format!("{seconds} s")
    } else {
        format!("{} ms", wait.as_millis().max(1))
    }
}

/// What the model reads when code it wrote called a tool whose call waits for a person.
pub(crate) fn code_cannot_wait_text(name: &str) -> String {
    format!(
        "the tool \"{name}\" needs a person's approval, and a call made from code cannot wait for one; call it directly instead"
    )
}

/// What the model reads when a result check withheld a call's result.
pub(crate) fn withheld_text(name: &str, reason: &str) -> String {
    format!(
        "the tool \"{name}\" ran, but its result was withheld by a check: {reason}. Do not repeat the same call"
    )
}

/// At most this many tool names are listed to a model that called an unknown tool.
const LISTED_NAMES: usize = 50;

/// What the model reads when it called a tool its run does not have: the tools it has.
pub(super) fn unknown_tool_text(name: &str, allowed: &AllowedSet) -> String {
    let shown = truncate(name, 80);
    if allowed.is_empty() {
        return format!("unknown tool {shown:?}; this run has no tools to call");
    }
    let mut names: Vec<&str> = allowed.names().take(LISTED_NAMES).collect();
    if allowed.len() > LISTED_NAMES {
        names.push("...");
    }
    format!(
        "unknown tool {shown:?}; the tools you can call are: {}",
        names.join(", ")
    )
}

/// What the model reads when its run has made all the calls its budget allows.
pub(super) fn budget_spent_text(limit: u64) -> String {
    format!(
        "this run has made all {limit} tool calls it may make; no more tools can be called in it"
    )
}

/// What the model reads when a tool's rate limit refused its call.
pub(super) fn rate_limited_text(name: &str, retry_after: Duration) -> String {
    format!(
        "the tool \"{name}\" was called too often; try again in {}",
        humane_wait(retry_after)
    )
}

/// What the model reads when no one approved its call in time.
pub(super) fn expired_text(name: &str) -> String {
    format!("no one approved the call to \"{name}\" in time; nothing was done")
}

/// What the model reads when it started a task of a tool that is not long-running.
pub(super) fn not_a_task_text(name: &str) -> String {
    format!(
        "the tool \"{name}\" is not declared long-running, so it cannot be started as a task; nothing was done. Call it as an ordinary call"
    )
}

/// What the model reads when its principal runs as many tasks as one may.
pub(super) fn principal_tasks_full_text(name: &str, running: usize, per: usize) -> String {
    format!(
        "the task of \"{name}\" was not started: you run {running} tasks already, the most one may run at once ({per}); nothing was done. Wait until one ends, or cancel one, then start it again"
    )
}

/// What the model reads when `server` (the server, or this server) runs as many tasks as it
/// may.
pub(super) fn tasks_full_text(name: &str, server: &str, total: usize) -> String {
    format!(
        "the task of \"{name}\" was not started: {server} runs as many tasks as it may ({total}); nothing was done. Try again once one has ended"
    )
}

/// What the model reads when no thread could run its task.
pub(super) fn task_not_started_text(name: &str) -> String {
    format!(
        "the task of \"{name}\" could not start because the server is busy; nothing was done. Try again later"
    )
}

/// What the model reads of a task that was cancelled.
pub(super) fn task_cancelled_text(name: &str) -> String {
    format!(
        "the task of \"{name}\" was cancelled before it finished; its result, if any, was discarded"
    )
}

/// What the model reads of a task whose result was too large to keep.
pub(super) fn task_result_too_large_text(name: &str, bytes: usize, max: usize) -> String {
    format!(
        "the result of the task of \"{name}\" was not kept: it is {bytes} bytes, more than a task's result may be ({max} bytes). Have the tool return less (a link to the content, or a part of it), or raise the bound with TaskLimits::with_result_bytes"
    )
}
