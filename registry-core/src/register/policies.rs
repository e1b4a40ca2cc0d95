//! Rules kept outside the program: one set that is both an access rule and a call policy, and
//! that is checked against the registry it is given to when the registry is built.

use crate::access::rule::AccessRule;
use crate::gate::CallPolicy;
use crate::register::registry::Registry;

/// A set of rules kept apart from the program (a policy engine's: Cedar's, with
/// `registry-cedar`), which decides both which tools a subject is shown ([`AccessRule`]) and
/// whether each call may run ([`CallPolicy`]), and which can check itself against a
/// registry: a rule that names a tool, an attribute or an argument the registry does not
/// have is a mistake, and the build fails with it rather than the rule matching nothing.
///
/// Given with [`RegistryBuilder::policies`](crate::RegistryBuilder::policies), which adds it
/// as an access rule and as a call policy (after those given before it) and calls
/// [`validate`](Self::validate) once the registry's tools are known; each problem becomes a
/// [`BuildProblem::Policy`](crate::BuildProblem::Policy), and nothing is built. It is called
/// again before every [`Registry::replace`], with the registry as the replacement would
/// leave it: a problem then refuses the replacement, and the old version stays. A set given
/// to [`access_rule`](crate::RegistryBuilder::access_rule) or
/// [`call_policy`](crate::RegistryBuilder::call_policy) instead is never validated; a set that
/// decides nothing until validated says so with
/// [`AccessRule::is_policy_set`] and [`CallPolicy::is_policy_set`], and the build then fails.
///
/// ```standalone_crate
/// use registry_core::access::{AccessRule, Visibility};
/// use registry_core::gate::{CallPolicy, CallRequest, Decision};
/// use registry_core::policy::PolicySet;
/// use registry_core::{Registry, RegistryError, Subject, Tool, tool};
///
/// /// Read the build status.
/// #[tool(scopes = "build:read", read_only)]
/// fn build_status() -> String {
///     "green".into()
/// }
///
/// /// Rules naming tools by name, checked against the registry.
/// #[derive(Clone)]
/// struct OnlyThese(Vec<&'static str>);
///
/// impl AccessRule for OnlyThese {
///     fn check(&self, _: &Subject, tool: &Tool) -> Visibility {
///         if self.0.contains(&tool.name()) {
///             Visibility::Visible
///         } else {
///             Visibility::Hidden("not listed".into())
///         }
///     }
/// }
/// impl CallPolicy for OnlyThese {
///     fn decide(&self, _: &CallRequest<'_>) -> Decision {
///         Decision::Allow
///     }
/// }
/// impl PolicySet for OnlyThese {
///     fn validate(&self, registry: &Registry) -> Result<(), Vec<String>> {
///         let unknown: Vec<String> = self.0.iter()
///             .filter(|name| registry.get(name).is_none())
///             .map(|name| format!("names the unknown tool {name:?}"))
///             .collect();
///         if unknown.is_empty() { Ok(()) } else { Err(unknown) }
///     }
/// }
///
/// assert!(Registry::builder().declared().policies(OnlyThese(vec!["build_status"])).build().is_ok());
/// let typo = Registry::builder().declared().policies(OnlyThese(vec!["build_stauts"])).build();
/// assert!(matches!(typo, Err(RegistryError::Build(problems)) if problems[0].to_string().contains("build_stauts")));
/// ```
pub trait PolicySet: AccessRule + CallPolicy {
    /// Checks the set against `registry`, whose tools are all built: `Err` with every
    /// problem, each naming the rule (its id, or its file and line) and what it named.
    ///
    /// `registry` is the registry being built, or, before a [`Registry::replace`], a registry
    /// of the tools as the replacement would leave them (and nothing else of the real one).
    /// What a set keeps of a check that held (the types it reads arguments with) is what it
    /// decides with from then on; when another set refuses the replacement, this one is
    /// checked again against the registry as it stays. Keep what is derived from the
    /// tools, never the registry itself.
    fn validate(&self, registry: &Registry) -> Result<(), Vec<String>>;
}
