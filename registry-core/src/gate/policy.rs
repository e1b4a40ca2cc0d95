//! The per-call policy: after a call's arguments are validated, before it runs.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::declare::settings::ToolSettings;
use crate::resolve::checked::CheckedArguments;
use crate::shared::caller::Caller;
use crate::shared::subject::Subject;

/// One validated call, as a [`CallPolicy`] sees it.
///
/// Everything in it was checked: the tool is in the run's allowed set, not revoked, ready,
/// and the arguments validate against the schema the model was shown.
#[derive(Debug, Clone, Copy)]
pub struct CallRequest<'a> {
    pub(crate) subject: &'a Subject,
    pub(crate) run_id: &'a str,
    pub(crate) call_id: &'a str,
    pub(crate) tool_name: &'a str,
    pub(crate) policy: &'a ToolSettings,
    pub(crate) arguments: PolicyArguments<'a>,
    pub(crate) caller: Caller,
}

/// The arguments a policy is shown: a call's (an approved call's too, as approved), made a
/// value only if a policy asks for the whole of them.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PolicyArguments<'a> {
    Checked(&'a CheckedArguments),
}

impl<'a> CallRequest<'a> {
    /// The subject the run acts for: tenant, scopes, access, agent.
    pub fn subject(&self) -> &'a Subject {
        self.subject
    }

    /// The run's id.
    pub fn run_id(&self) -> &'a str {
        self.run_id
    }

    /// The model's id for the call.
    pub fn call_id(&self) -> &'a str {
        self.call_id
    }

    /// The tool called.
    pub fn tool_name(&self) -> &'a str {
        self.tool_name
    }

    /// Who made the call: the model, or code it wrote (programmatic tool calling).
    pub fn caller(&self) -> Caller {
        self.caller
    }

    /// The tool's scopes, tenants, hints, approval flag and rate limit.
    pub fn settings(&self) -> &'a ToolSettings {
        self.policy
    }

    /// The arguments, validated against the tool's schema (`null` for an optional argument
    /// already removed).
    ///
    /// The call's arguments are made a value the first time a policy asks for them; a
    /// policy that reads one or two of them can read them with
    /// [`argument`](Self::argument) instead, which does not make the whole value.
    pub fn arguments(&self) -> &'a Value {
        match self.arguments {
            PolicyArguments::Checked(arguments) => arguments.value(),
        }
    }

    /// The argument `name`, decoded into `T`: `Ok(None)` when the call left it out or gave
    /// `null`, an error when it is not a `T` (decide what that means: refusing is the safe
    /// answer). Cheaper than [`arguments`](Self::arguments) for a policy that reads a few:
    /// only that argument is decoded.
    ///
    /// ```
    /// use registry_core::gate::{CallRequest, Decision};
    /// use registry_core::{DynamicTool, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// let registry = Registry::builder()
    ///     .tool(
    ///         DynamicTool::new("refund", "Refund an order.")
    ///             .parameters(json!({
    ///                 "type": "object",
    ///                 "properties": {"cents": {"type": "integer", "minimum": 0}},
    ///                 "required": ["cents"],
    ///             }))
    ///             .public()
    ///             .handler(|_, args| Ok::<_, String>(args["cents"].clone())),
    ///     )
    ///     .call_policy(|call: &CallRequest<'_>| match call.argument::<u64>("cents") {
    ///         Ok(Some(cents)) if cents <= 10_000 => Decision::Allow,
    ///         Ok(_) => Decision::Deny("refunds over $100 need a person".into()),
    ///         Err(error) => Decision::Deny(format!("unreadable amount: {error}")),
    ///     })
    ///     .build()?;
    /// let run = registry.open_run("run-1", &Subject::new("acme"));
    /// let small = run.call_blocking(ToolCall::new("1", "refund", json!({"cents": 500})));
    /// assert_eq!(small.json(), &json!(500));
    /// let large = run.call_blocking(ToolCall::new("2", "refund", json!({"cents": 50_000})));
    /// assert!(large.is_error());
    /// # Ok::<(), registry_core::RegistryError>(())
    /// ```
    pub fn argument<T: DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Option<T>, serde_json::Error> {
        match self.arguments {
            PolicyArguments::Checked(arguments) => arguments.argument(name),
        }
    }
}

/// What a [`CallPolicy`] decides for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// The call may run (subject to quotas).
    Allow,
    /// The call is refused: the model gets [`ErrorKind::Denied`](crate::ErrorKind::Denied)
    /// with this reason, which it can act on.
    Deny(String),
    /// The call waits for a person: the model gets
    /// [`ErrorKind::ApprovalRequired`](crate::ErrorKind::ApprovalRequired), and nothing runs
    /// until [`Run::decide`](crate::Run::decide).
    RequireApproval(String),
}

/// Decides, per call, whether a validated call may run: the second gate, after the run's
/// allowed set. Any `Fn(&CallRequest<'_>) -> Decision + Send + Sync + 'static` is one.
///
/// Set one for the registry with
/// [`RegistryBuilder::call_policy`](crate::RegistryBuilder::call_policy) and one per run with
/// [`Run::with_call_policy`](crate::Run::with_call_policy); a run's policy can only narrow:
/// the stricter decision wins (deny over approval over allow). A policy that panics denies
/// the call.
///
/// ```standalone_crate
/// use registry_core::{tool, gate::CallRequest, gate::Decision, ErrorKind, Registry, Subject, ToolCall};
/// use serde_json::json;
///
/// /// Deploy a project to an environment.
/// #[tool(scopes = "deploy:write", destructive)]
/// fn deploy(project: String, env: String) -> String {
///     format!("{project} deployed to {env}")
/// }
///
/// let registry = Registry::builder()
///     .declared()
///     .call_policy(|call: &CallRequest<'_>| match call.arguments()["env"].as_str() {
///         Some("production") if call.subject().agent() != Some("release-bot") => {
///             Decision::Deny("only the release bot deploys to production".into())
///         }
///         Some("production") => Decision::RequireApproval("a production deploy".into()),
///         _ => Decision::Allow,
///     })
///     .build()
///     .unwrap();
/// let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["deploy:write"]));
///
/// let staging = run.call_blocking(ToolCall::new("c1", "deploy", json!({"project": "web", "env": "staging"})));
/// assert_eq!(staging.json(), &json!("web deployed to staging"));
///
/// let production = run.call_blocking(ToolCall::new("c2", "deploy", json!({"project": "web", "env": "production"})));
/// assert_eq!(production.error_kind(), Some(ErrorKind::Denied));
/// assert!(production.error_text().unwrap().contains("only the release bot"));
/// ```
pub trait CallPolicy: Send + Sync + 'static {
    /// Decides one call.
    fn decide(&self, call: &CallRequest<'_>) -> Decision;

    /// Decides one call and names the policies that decided it, for the audit log (the call
    /// event's `policies`) and operators: a policy engine's rule ids. The default asks
    /// [`decide`](Self::decide) and names none; the registry asks this one.
    fn determine(&self, call: &CallRequest<'_>) -> Determined {
        Determined::new(self.decide(call), Vec::new())
    }

    /// Whether this policy is a [`PolicySet`](crate::policy::PolicySet) that decides nothing
    /// until it is validated against the registry (a Cedar set denies every call until then):
    /// [`RegistryBuilder::call_policy`](crate::RegistryBuilder::call_policy) refuses such a
    /// policy at build, saying to give it with
    /// [`RegistryBuilder::policies`](crate::RegistryBuilder::policies). `false` by default.
    fn is_policy_set(&self) -> bool {
        false
    }
}

/// A [`Decision`] and the ids of the policies that made it
/// ([`CallPolicy::determine`]).
///
/// ```
/// use registry_core::gate::{Decision, Determined};
///
/// let determined = Determined::new(Decision::Deny("not in production".into()), vec!["prod-freeze".into()]);
/// assert_eq!(determined.policies, ["prod-freeze"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Determined {
    /// The decision.
    pub decision: Decision,
    /// The ids of the policies that made it (for a denial, those that denied; for an
    /// approval, those that asked for one; for an allow, those that permitted), in the
    /// order the engine gave them. Empty for a policy that names none.
    pub policies: Vec<String>,
}

impl Determined {
    /// `decision`, made by the policies `policies`.
    pub fn new(decision: Decision, policies: Vec<String>) -> Self {
        Determined { decision, policies }
    }
}

impl<F> CallPolicy for F
where
    F: Fn(&CallRequest<'_>) -> Decision + Send + Sync + 'static,
{
    fn decide(&self, call: &CallRequest<'_>) -> Decision {
        self(call)
    }
}
