//! The application's own say on which tools a subject may see.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::discover::subject::Subject;
use crate::register::tool::Tool;

/// What an [`AccessPolicy`] decides for one tool and one subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The policy has no objection (the registry's own rules still apply).
    Allow,
    /// The tool is hidden from the subject, for this reason (for operators, never the model).
    Deny(String),
}

/// An application rule applied when a run is opened, after scopes, tenant and access level.
///
/// It can only narrow what a subject sees, never widen it: it is asked only about tools the
/// registry's rules already admit. Any `Fn(&Subject, &Tool) -> Verdict` is one. Several
/// compose ([`RegistryBuilder::policy`](crate::RegistryBuilder::policy) adds one each time):
/// a tool any of them hides is hidden, and a policy that panics hides it too.
///
/// ```
/// use registry_core::{AccessPolicy, Registry, Subject, Tool, Verdict};
///
/// // Agents other than the release bot never see destructive tools.
/// let policy = |subject: &Subject, tool: &Tool| {
///     if tool.policy().hints.destructive && subject.agent() != Some("release-bot") {
///         Verdict::Deny("destructive tools are for the release bot".into())
///     } else {
///         Verdict::Allow
///     }
/// };
/// let registry = Registry::builder().declared().policy(policy).build().unwrap();
/// ```
pub trait AccessPolicy: Send + Sync + 'static {
    /// Decides whether `subject` may see `tool`.
    fn check(&self, subject: &Subject, tool: &Tool) -> Verdict;
}

impl<F> AccessPolicy for F
where
    F: Fn(&Subject, &Tool) -> Verdict + Send + Sync + 'static,
{
    fn check(&self, subject: &Subject, tool: &Tool) -> Verdict {
        self(subject, tool)
    }
}

/// Why the first of `policies` that hides `tool` from `subject` does so; `None` when all of
/// them allow it. A policy that panics hides the tool (fail closed).
pub(crate) fn hidden_by(
    policies: &[Box<dyn AccessPolicy>],
    subject: &Subject,
    tool: &Tool,
) -> Option<String> {
    policies.iter().find_map(|policy| {
        match catch_unwind(AssertUnwindSafe(|| policy.check(subject, tool))) {
            Ok(Verdict::Allow) => None,
            Ok(Verdict::Deny(reason)) => Some(reason),
            Err(payload) => Some(format!(
                "the access policy could not decide, so the tool is hidden (it panicked: {})",
                crate::execute::execution::panic_message(&*payload)
            )),
        }
    })
}
