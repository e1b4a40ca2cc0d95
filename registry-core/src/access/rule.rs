//! The application's own say on which tools a subject may see.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::execute::tool::Tool;
use crate::shared::subject::Subject;

/// What an [`AccessRule`] decides for one tool and one subject.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Visibility {
    /// The rule has no objection (the registry's own rules still apply).
    Visible,
    /// The tool is hidden from the subject, for this reason (for operators, never the model).
    Hidden(String),
}

/// An application rule applied when a run is opened, after scopes, tenant and access level.
///
/// It can only narrow what a subject sees, never widen it: it is asked only about tools the
/// registry's rules already admit. Any `Fn(&Subject, &Tool) -> Visibility` is one. Several
/// compose ([`RegistryBuilder::access_rule`](crate::RegistryBuilder::access_rule) adds one each time):
/// a tool any of them hides is hidden, and a rule that panics hides it too.
///
/// ```standalone_crate
/// use registry_core::{access::AccessRule, Registry, Subject, Tool, access::Visibility};
///
/// // Agents other than the release bot never see destructive tools.
/// let rule = |subject: &Subject, tool: &Tool| {
///     if tool.settings().hints.destructive && subject.agent() != Some("release-bot") {
///         Visibility::Hidden("destructive tools are for the release bot".into())
///     } else {
///         Visibility::Visible
///     }
/// };
/// let registry = Registry::builder()
///     .declared()
///     .allow_empty()
///     .access_rule(rule)
///     .build()
///     .unwrap();
/// ```
pub trait AccessRule: Send + Sync + 'static {
    /// Decides whether `subject` may see `tool`.
    fn check(&self, subject: &Subject, tool: &Tool) -> Visibility;

    /// Whether this rule is a [`PolicySet`](crate::policy::PolicySet) that decides nothing
    /// until it is validated against the registry (a Cedar set hides every tool until then):
    /// [`RegistryBuilder::access_rule`](crate::RegistryBuilder::access_rule) refuses such a
    /// rule at build, saying to give it with
    /// [`RegistryBuilder::policies`](crate::RegistryBuilder::policies). `false` by default.
    fn is_policy_set(&self) -> bool {
        false
    }
}

impl<F> AccessRule for F
where
    F: Fn(&Subject, &Tool) -> Visibility + Send + Sync + 'static,
{
    fn check(&self, subject: &Subject, tool: &Tool) -> Visibility {
        self(subject, tool)
    }
}

/// Why the first of `rules` that hides `tool` from `subject` does so; `None` when all of
/// them allow it. A rule that panics hides the tool (fail closed).
pub(crate) fn hidden_by(
    rules: &[Box<dyn AccessRule>],
    subject: &Subject,
    tool: &Tool,
) -> Option<String> {
    rules.iter().find_map(|rule| {
        match catch_unwind(AssertUnwindSafe(|| rule.check(subject, tool))) {
            Ok(Visibility::Visible) => None,
            Ok(Visibility::Hidden(reason)) => Some(reason),
            Err(payload) => Some(format!(
                "the access rule could not decide, so the tool is hidden (it panicked: {})",
                crate::execute::execution::panic_message(&*payload)
            )),
        }
    })
}
