//! Assembling a registry from chosen declarations and tools built at run time.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use crate::access::rule::AccessRule;
use crate::approval::store::ApprovalStore;
use crate::audit::AuditSink;
use crate::change::Replacement;
use crate::declare::declaration::{Declaration, Execute, declarations};
use crate::declare::error::{BuildProblem, RegistryError};
use crate::declare::settings::{Scope, ToolSettings, check_namespace, default_namespace};
use crate::declare::source::Source;
use crate::execute::pool::{self, BlockingPool};
use crate::execute::tool::Tool;
use crate::gate::{CallPolicy, Check, GateConfig, QuotaStore, Quotas, ReadinessCheck};
use crate::host::call_host::CallHost;
use crate::host::context::HostWaits;
use crate::host::state::AppState;
use crate::register::dynamic::DynamicTool;
use crate::register::lint::Lint;
use crate::register::policies::PolicySet;
use crate::register::registry::{PolicyCheck, Registry, RegistryParts};
use crate::register::schemas::SchemaChecks;
use crate::resolve::guard::ArgumentLimits;
use crate::search::embed::Embedder;
use crate::shared::profile::Profile;
use crate::shared::rate_limit::RateLimit;
use crate::task::TaskConfig;
use crate::task::record::TaskLimits;
use crate::task::store::TaskStore;

/// The shortest key [`RegistryBuilder::audit_hash_key`] takes, in bytes.
const MIN_AUDIT_KEY: usize = 16;

/// Assembles a [`Registry`]: declared tools (all, or those under given modules), tools built
/// at run time, explicit replacements, and tools that must be present.
///
/// Nothing is checked until [`build`](Self::build), which reports every problem at once and
/// registers nothing unless there is none.
///
/// ```standalone_crate
/// use registry_core::{tool, DynamicTool, Registry};
/// use serde_json::json;
///
/// /// Search the documentation.
/// #[tool(public, read_only)]
/// fn search_docs(query: String) -> Vec<String> {
///     vec![query]
/// }
///
/// let registry = Registry::builder()
///     .declared_in(["rust_out"]) // the doctest's crate: every tool declared in it
///     .tool(DynamicTool::new("ping", "Answer pong.").public().handler(|_, _| Ok::<_, String>(json!("pong"))))
///     .require(["search_docs", "ping"])
///     .build()?;
/// assert_eq!(registry.names().collect::<Vec<_>>(), ["ping", "search_docs"]);
///
/// let duplicate = Registry::builder()
///     .tool(DynamicTool::new("ping", "One.").public().handler(|_, _| Ok::<_, String>(json!("1"))))
///     .tool(DynamicTool::new("ping", "Two.").public().handler(|_, _| Ok::<_, String>(json!("2"))))
///     .build();
/// assert!(duplicate.unwrap_err().to_string().contains("two tools are named \"ping\""));
/// # Ok::<(), registry_core::RegistryError>(())
/// ```
#[derive(Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct RegistryBuilder {
    declared: Selection,
    tools: Vec<DynamicTool>,
    replacements: Vec<(DynamicTool, String)>,
    required: Vec<String>,
    state: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    access_rules: Vec<Box<dyn AccessRule>>,
    policy_sets: Vec<Box<dyn PolicySet>>,
    /// The methods a policy set was given to instead of `policies`, in order.
    misplaced_policy_sets: Vec<&'static str>,
    audit: Option<Box<dyn AuditSink>>,
    audit_key: Option<crate::shared::audit_key::AuditKey>,
    /// The length of an audit hash key too short to take.
    short_audit_key: Option<usize>,
    host: Option<Arc<dyn CallHost>>,
    embedder: Option<Arc<dyn Embedder>>,
    limits: ArgumentLimits,
    compatible: Vec<Profile>,
    gate: GateConfig,
    tasks: TaskConfig,
    rate_limit: Option<(Result<RateLimit, String>, Source)>,
    readiness: Vec<(String, Check, Source)>,
    readiness_timeout: Option<Duration>,
    blocking_threads: Option<usize>,
    blocking_wait: Option<Duration>,
    waits: HostWaits,
    allow_empty: bool,
    /// Every parameter and field must have a description
    /// ([`require_documented_parameters`](Self::require_documented_parameters)).
    require_documented: bool,
}

impl std::fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Handlers, rules, sinks, hosts and state are code or the application's own: named by
        // what they are for, never printed.
        f.debug_struct("RegistryBuilder")
            .field("declared", &self.declared)
            .field("tools", &self.tools)
            .field(
                "replacements",
                &self
                    .replacements
                    .iter()
                    .map(|(tool, reason)| (tool.name(), reason.as_str()))
                    .collect::<Vec<_>>(),
            )
            .field("required", &self.required)
            .field("state_types", &self.state.len())
            .field("access_rules", &self.access_rules.len())
            .field("policy_sets", &self.policy_sets.len())
            .field("misplaced_policy_sets", &self.misplaced_policy_sets)
            .field("call_policies", &self.gate.call_policies.len())
            .field("async_call_policies", &self.gate.async_call_policies.len())
            .field("result_checks", &self.gate.result_checks.len())
            .field("audit_sink", &self.audit.is_some())
            .field("host", &self.host.is_some())
            .field("embedder", &self.embedder.is_some())
            .field("limits", &self.limits)
            .field("compatible", &self.compatible)
            .field(
                "rate_limit",
                &self.rate_limit.as_ref().map(|(limit, _)| limit),
            )
            .field(
                "readiness",
                &self
                    .readiness
                    .iter()
                    .map(|(name, _, _)| name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("readiness_timeout", &self.readiness_timeout)
            .field("blocking_threads", &self.blocking_threads)
            .field("blocking_wait", &self.blocking_wait)
            .field("waits", &self.waits)
            .field("tasks", &self.tasks)
            .field("require_documented_parameters", &self.require_documented)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// Every `#[tool]` linked into this program.
    ///
    /// Fails, listing every problem, if two tools share a name (each with both declaration
    /// sites). See the crate docs on linking: a crate of tools that the program never names
    /// is not linked, and its tools are not here.
    pub fn from_inventory() -> Result<Registry, RegistryError> {
        Registry::builder().declared().build()
    }

    /// Starts a registry assembled explicitly.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }
}

/// Which `#[tool]` declarations to take.
#[derive(Debug, Default)]
enum Selection {
    #[default]
    None,
    All,
    Under(Vec<String>),
}

impl RegistryBuilder {
    /// Takes every `#[tool]` linked into the program.
    pub fn declared(mut self) -> Self {
        self.declared = Selection::All;
        self
    }

    /// Lets [`build`](Self::build) make a registry with no tools at all. Without it, a
    /// registry with no tools is an error ([`BuildProblem::NoTools`]), since it is most often a
    /// mistake: [`declared`](Self::declared) forgotten, or the crate of tools not linked.
    ///
    /// ```standalone_crate
    /// use registry_core::{BuildProblem, Registry, RegistryError};
    ///
    /// let error = Registry::builder().build().unwrap_err();
    /// let RegistryError::Build(problems) = &error else { unreachable!() };
    /// assert!(matches!(problems[..], [BuildProblem::NoTools { declared: false }]));
    /// assert!(error.to_string().contains("`.declared()`"));
    ///
    /// let empty = Registry::builder().allow_empty().build().unwrap();
    /// assert!(empty.is_empty());
    /// ```
    pub fn allow_empty(mut self) -> Self {
        self.allow_empty = true;
        self
    }

    /// Makes [`build`](Self::build) fail when a tool has a parameter, or its parameters
    /// schema a field (of a nested object, of array items, behind a `$ref`), with no
    /// description: one [`BuildProblem::UndocumentedParameters`] per such tool, naming each
    /// path. A model reads a parameter's description to know what to pass; without one it
    /// guesses from the name. Every [`Registry::replace`] of the registry is held to it too.
    ///
    /// Off by default. The `#[tool]` macro can say the same at compile time, as a warning:
    /// `#[tool(require_docs)]`.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, BuildProblem, Registry};
    ///
    /// /// Read the current build status of a project.
    /// #[tool(public, read_only)]
    /// fn get_status(project: String, branch: Option<String>) -> String {
    ///     format!("{project}@{branch:?}: green")
    /// }
    ///
    /// // Built without it, the registry takes the tool as it is.
    /// assert!(Registry::builder().declared().build().is_ok());
    ///
    /// let error = Registry::builder().declared().require_documented_parameters().build().unwrap_err();
    /// let [BuildProblem::UndocumentedParameters { tool, paths, .. }] = error.problems() else {
    ///     panic!("{error}");
    /// };
    /// assert_eq!(tool, "get_status");
    /// assert_eq!(paths, &["branch", "project"]);
    /// ```
    pub fn require_documented_parameters(mut self) -> Self {
        self.require_documented = true;
        self
    }

    /// Takes the `#[tool]` functions declared in the given modules or crates, and in modules
    /// below them: `"my_app::tools"` takes `my_app::tools::build::get_status`, not
    /// `my_app::toolset::x`. May be called more than once.
    pub fn declared_in<I, S>(mut self, module_paths: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let paths = module_paths.into_iter().map(Into::into);
        match &mut self.declared {
            Selection::All => {}
            Selection::Under(list) => list.extend(paths),
            Selection::None => self.declared = Selection::Under(paths.collect()),
        }
        self
    }

    /// Adds a tool built at run time. A name already taken is an error at build.
    pub fn tool(mut self, tool: DynamicTool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Whether a tool of this name is in the builder now: a declared `#[tool]` it takes, or
    /// one [`tool`](Self::tool) added. A part that adds tools named by others (an upstream MCP
    /// server's, say) asks first, and refuses a name already taken rather than failing the
    /// build with [`BuildProblem::DuplicateName`].
    ///
    /// ```standalone_crate
    /// use registry_core::{DynamicTool, Registry};
    ///
    /// let builder = Registry::builder().tool(DynamicTool::new("deploy", "Deploy.").public());
    /// assert!(builder.has_tool("deploy"));
    /// assert!(!builder.has_tool("search"));
    /// ```
    pub fn has_tool(&self, name: &str) -> bool {
        let declared = match &self.declared {
            Selection::None => false,
            Selection::All => declarations().any(|declaration| declaration.name == name),
            Selection::Under(paths) => declarations().any(|declaration| {
                let module = declaration.location.module_path().unwrap_or_default();
                declaration.name == name && paths.iter().any(|path| is_under(module, path))
            }),
        };
        declared || self.tools.iter().any(|tool| tool.name() == name)
    }

    /// Replaces the tool of the same name with `tool`, and records it with `reason`
    /// ([`Registry::replacements`]). Replacing a name that is not registered is an error.
    pub fn replace(mut self, tool: DynamicTool, reason: impl Into<String>) -> Self {
        self.replacements.push((tool, reason.into()));
        self
    }

    /// Fails the build, naming them, if any of these tools is not registered (say, because
    /// the crate that declares it was not linked; see [`link!`](crate::link!)).
    pub fn require<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required.extend(names.into_iter().map(Into::into));
        self
    }

    /// Registers `value` as application state that tools reach with
    /// [`ToolContext::state::<T>()`](crate::ToolContext::state): a database pool, an HTTP
    /// client. One value per type; a second of the same type replaces the first.
    pub fn state<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.state.insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// Adds a [`PolicySet`](crate::policy::PolicySet), rules kept apart from the program
    /// (Cedar's, with `registry-cedar`): as an access rule (it may hide tools, after the
    /// rules given before it) and as a call policy (it decides every call with the others: the
    /// stricter decision wins), checked against the registry by [`build`](Self::build), which
    /// fails with each problem it finds ([`BuildProblem::Policy`]).
    pub fn policies<P: PolicySet + Clone>(mut self, policies: P) -> Self {
        self.access_rules.push(Box::new(policies.clone()));
        self.gate.call_policies.push(Box::new(policies.clone()));
        self.policy_sets.push(Box::new(policies));
        self
    }

    /// Adds an [`AccessRule`] of the application's, consulted when runs are opened; it can
    /// only hide tools, never show more.
    ///
    /// Rules compose: every one given applies, and a tool any of them hides is hidden
    /// (hidden wins over shown, whatever the order). A second call adds a rule; it never
    /// replaces the first. A rule that panics hides the tool.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, Registry, Subject, Tool, access::Visibility};
    ///
    /// /// Read the build status.
    /// #[tool(scopes = "build:read", read_only)]
    /// fn build_status() -> String {
    ///     "green".into()
    /// }
    ///
    /// let registry = Registry::builder()
    ///     .declared()
    ///     .access_rule(|_: &Subject, _: &Tool| Visibility::Visible)
    ///     .access_rule(|subject: &Subject, _: &Tool| {
    ///         if subject.tenant() == "trial" {
    ///             Visibility::Hidden("trial tenants see no build tools".into())
    ///         } else {
    ///             Visibility::Visible
    ///         }
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let trial = registry.open_run("r1", &Subject::new("trial").with_scopes(["build:read"]));
    /// assert!(!trial.allowed().permits("build_status"));
    /// ```
    ///
    /// A [`PolicySet`](crate::policy::PolicySet) (a `registry_cedar::CedarPolicies`) given here
    /// fails the build: give it with [`policies`](Self::policies), which validates it.
    pub fn access_rule(mut self, rule: impl AccessRule) -> Self {
        if rule.is_policy_set() {
            self.misplaced_policy_sets.push("access_rule");
        }
        self.access_rules.push(Box::new(rule));
        self
    }

    /// Sends every audit event (projections, call decisions, changes) to `sink`, besides
    /// `tracing`.
    pub fn audit_sink(mut self, sink: impl AuditSink) -> Self {
        self.audit = Some(Box::new(sink));
        self
    }

    /// The key of the audit log's hashes of call arguments and search queries
    /// (`argument_hash`, `query_hash`: HMAC-SHA-256 under `key`, its first 8 bytes in hex).
    /// Keyed, so that a reader of the log cannot find low-entropy arguments (a yes or no, a
    /// small number, a name from a short list) by hashing guesses; equal arguments still have
    /// equal hashes under one key, which is what correlating calls needs.
    ///
    /// Without it, the key is drawn at random once per process: hashes then compare within
    /// one process (every registry of it) and not across processes or restarts. Replicas whose
    /// audit events are compared (a shared `PgAuditSink`, say) must be given the same key,
    /// kept secret like any credential: at least 32 random bytes, from the deployment's
    /// secrets. A key shorter than 16 bytes is refused at build.
    ///
    /// ```
    /// use registry_core::Registry;
    ///
    /// let key = [7u8; 32]; // in a deployment: read from its secrets, never written in code
    /// let registry = Registry::builder().allow_empty().audit_hash_key(key).build().unwrap();
    /// # let _ = registry;
    /// ```
    pub fn audit_hash_key(mut self, key: impl AsRef<[u8]>) -> Self {
        let key = key.as_ref();
        if key.len() < MIN_AUDIT_KEY {
            self.short_audit_key = Some(key.len());
        }
        self.audit_key = Some(crate::shared::audit_key::AuditKey::new(key));
        self
    }

    /// Sends the progress, logs, questions ([`ToolContext::elicit`](crate::ToolContext::elicit))
    /// and sampling requests of every run's calls to `host` (see [`CallHost`]): how an
    /// application answers them from its own UI. A run's host
    /// ([`RunExt::with_host`](crate::server::RunExt::with_host)) and a call's own
    /// ([`CallOptions`](crate::call::CallOptions)) come before it; over MCP, each call's host is the
    /// client, which passes on to this one what the client cannot do. Without one, progress
    /// and logs are `tracing` events and questions and sampling are "not supported".
    ///
    /// ```standalone_crate
    /// use registry_core::{
    ///     tool, definition::BoxFuture, host::CallHost, host::CallInfo, host::ElicitError, host::ElicitRequest, host::Elicitation,
    ///     Registry, Subject, ToolCall, ToolContext,
    /// };
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use serde_json::{json, Value};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Name {
    ///     name: String,
    /// }
    ///
    /// /// Greet the user by name.
    /// #[tool(public)]
    /// async fn greet(ctx: &ToolContext) -> Result<String, registry_core::call::ToolError> {
    ///     Ok(match ctx.elicit::<Name>("What is your name?").await? {
    ///         Elicitation::Accepted(Name { name }) => format!("Hello, {name}!"),
    ///         _ => "Hello!".to_owned(),
    ///     })
    /// }
    ///
    /// /// The application's own UI: here, always "Ada".
    /// struct Ui;
    ///
    /// impl CallHost for Ui {
    ///     fn elicit<'a>(
    ///         &'a self,
    ///         _call: &CallInfo<'_>,
    ///         _request: ElicitRequest,
    ///     ) -> BoxFuture<'a, Result<Elicitation<Value>, ElicitError>> {
    ///         Box::pin(async { Ok(Elicitation::Accepted(json!({"name": "Ada"}))) })
    ///     }
    /// }
    ///
    /// let registry = Registry::builder().declared().host(Ui).build().unwrap();
    /// let run = registry.open_run("run-1", &Subject::new("acme"));
    /// let answer = run.call_blocking(ToolCall::new("c1", "greet", json!({})));
    /// assert_eq!(answer.json(), &json!("Hello, Ada!"));
    /// ```
    pub fn host(mut self, host: impl CallHost) -> Self {
        self.host = Some(Arc::new(host));
        self
    }

    /// Ranks searches by meaning as well as by words: `embedder` turns each tool's name,
    /// title, description and parameter texts into a vector, once per registry snapshot (the
    /// first time a run of it searches), and each query into one; [`Run::search`] then fuses
    /// the lexical ranking with the nearest tools by reciprocal rank fusion, still only over
    /// the run's allowed set. Without an embedder, search is lexical. An embedder that fails
    /// leaves search lexical (and is logged); it never fails a search.
    ///
    /// ```
    /// use registry_core::search::{EmbedError, Embedder};
    /// use registry_core::{DynamicTool, Registry, Subject};
    ///
    /// /// Puts "wipe" beside "delete": what a model would know, hard-coded for the example.
    /// struct Toy;
    ///
    /// impl Embedder for Toy {
    ///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
    ///         Ok(texts
    ///             .iter()
    ///             .map(|t| {
    ///                 let erase = t.contains("wipe") || t.contains("delete");
    ///                 vec![f32::from(u8::from(erase)), 1.0]
    ///             })
    ///             .collect())
    ///     }
    /// }
    ///
    /// let tool = |name: &str, description: &str| {
    ///     DynamicTool::new(name, description)
    ///         .public()
    ///         .handler(|_ctx, _args| Ok::<_, String>(serde_json::Value::Null))
    /// };
    /// let registry = Registry::builder()
    ///     .tool(tool("delete_record", "Delete a record."))
    ///     .tool(tool("read_record", "Read a record."))
    ///     .embedder(Toy)
    ///     .build()?;
    /// let run = registry.open_run("run-1", &Subject::new("acme"));
    /// // No tool has the word "wipe": the embedder finds the one that means it.
    /// assert_eq!(run.search("wipe it", 5)[0].name(), "delete_record");
    /// # Ok::<(), registry_core::RegistryError>(())
    /// ```
    ///
    /// [`Run::search`]: crate::Run::search
    pub fn embedder(mut self, embedder: impl Embedder) -> Self {
        self.embedder = Some(Arc::new(embedder));
        self
    }

    /// Sets the bounds on call arguments (default: 64 levels, 4 MiB).
    pub fn argument_limits(mut self, limits: ArgumentLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Refuses to build unless every tool can be exported to each of `profiles`
    /// (see [`Registry::check`]); each incompatibility is a build problem. `profiles` may be
    /// [`Profile::ALL`] or any list of profiles.
    pub fn require_compatible(
        mut self,
        profiles: impl IntoIterator<Item = impl std::borrow::Borrow<Profile>>,
    ) -> Self {
        self.compatible
            .extend(profiles.into_iter().map(|profile| *profile.borrow()));
        self
    }

    /// Adds a per-call policy of the registry's, asked for every validated call before it
    /// runs: allow, deny with a reason the model reads, or require a person's approval. See
    /// [`CallPolicy`]; a run can narrow it with [`Run::with_call_policy`](crate::Run::with_call_policy).
    ///
    /// Policies compose: every one given (the registry's, then the run's) is asked, and the
    /// stricter decision wins, whatever the order: deny over approval over allow. A second
    /// call adds a policy; it never replaces the first. A policy that panics denies.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, gate::CallRequest, gate::Decision, ErrorKind, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// /// Restart a service.
    /// #[tool(scopes = "ops:write")]
    /// fn restart(service: String) -> String {
    ///     format!("{service} restarted")
    /// }
    ///
    /// let registry = Registry::builder()
    ///     .declared()
    ///     .call_policy(|_: &CallRequest<'_>| Decision::RequireApproval("a restart".into()))
    ///     .call_policy(|_: &CallRequest<'_>| Decision::Allow)
    ///     .build()
    ///     .unwrap();
    /// let run = registry.open_run("r1", &Subject::new("acme").with_scopes(["ops:write"]));
    /// let answer = run.call_blocking(ToolCall::new("c1", "restart", json!({"service": "web"})));
    /// assert_eq!(answer.error_kind(), Some(ErrorKind::ApprovalRequired));
    /// ```
    ///
    /// A [`PolicySet`](crate::policy::PolicySet) (a `registry_cedar::CedarPolicies`) given here
    /// fails the build: give it with [`policies`](Self::policies), which validates it.
    pub fn call_policy(mut self, policy: impl CallPolicy) -> Self {
        if policy.is_policy_set() {
            self.misplaced_policy_sets.push("call_policy");
        }
        self.gate.call_policies.push(Box::new(policy));
        self
    }

    /// Adds an asynchronous call policy, a remote policy engine's: asked for every validated
    /// call after the synchronous policies ([`call_policy`](Self::call_policy)) if none of
    /// them denied, in the order given, each within `deadline`. Its decision composes with
    /// theirs (deny over approval over allow). **No answer within `deadline` denies the call**
    /// (fail closed), as does a panic; the call's audit event says which policy and why. See
    /// [`AsyncCallPolicy`](crate::gate::AsyncCallPolicy), and what
    /// [`Run::call_blocking`](crate::Run::call_blocking) does with one (it waits on the
    /// calling thread, with the same deadline).
    ///
    /// ```
    /// use registry_core::definition::BoxFuture;
    /// use registry_core::gate::{AsyncCallPolicy, CallRequest, Decision, Determined};
    /// use registry_core::{DynamicTool, ErrorKind, Registry, Subject, ToolCall};
    /// use serde_json::json;
    /// use std::time::Duration;
    ///
    /// /// An engine that never answers.
    /// struct Unreachable;
    ///
    /// impl AsyncCallPolicy for Unreachable {
    ///     fn determine<'a>(&'a self, _: CallRequest<'a>) -> BoxFuture<'a, Determined> {
    ///         Box::pin(std::future::pending())
    ///     }
    /// }
    ///
    /// let registry = Registry::builder()
    ///     .tool(DynamicTool::new("restart", "Restart the service.").public()
    ///         .handler(|_, _| Ok::<_, String>(json!("restarted"))))
    ///     .async_call_policy(Unreachable, Duration::from_millis(20))
    ///     .build()?;
    /// let run = registry.open_run("r1", &Subject::new("acme"));
    /// let answer = run.call_blocking(ToolCall::new("c1", "restart", json!({})));
    /// assert_eq!(answer.error_kind(), Some(ErrorKind::Denied));
    /// # Ok::<(), registry_core::RegistryError>(())
    /// ```
    pub fn async_call_policy(
        mut self,
        policy: impl crate::gate::AsyncCallPolicy,
        deadline: std::time::Duration,
    ) -> Self {
        self.gate
            .async_call_policies
            .push((Box::new(policy), deadline));
        self
    }

    /// Adds a check of every tool's result, run after the tool and before the model reads
    /// the result: it passes the result, redacts parts of it, or withholds it (see
    /// [`ResultCheck`](crate::gate::ResultCheck)). Checks run in the order given, each on what
    /// the one before left; a second call adds a check, it never replaces the first. A check
    /// that panics withholds the result.
    ///
    /// ```
    /// use registry_core::gate::{ResultDecision, ToolResult};
    /// use registry_core::{DynamicTool, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// let registry = Registry::builder()
    ///     .tool(DynamicTool::new("whoami", "Say who runs the agent.").public()
    ///         .handler(|_, _| Ok::<_, String>(json!("ada@example.com"))))
    ///     .result_check(|result: &mut ToolResult<'_>| {
    ///         result.redact_strings(|text| text.contains('@').then(|| "[email]".to_owned()));
    ///         ResultDecision::Pass
    ///     })
    ///     .build()?;
    /// let run = registry.open_run("r1", &Subject::new("acme"));
    /// let answer = run.call_blocking(ToolCall::new("c1", "whoami", json!({})));
    /// assert_eq!(answer.json(), &json!("[email]"));
    /// # Ok::<(), registry_core::RegistryError>(())
    /// ```
    pub fn result_check(mut self, check: impl crate::gate::ResultCheck) -> Self {
        self.gate.result_checks.push(Box::new(check));
        self
    }

    /// Cuts secrets out of every result before the model reads it: adds
    /// [`RedactSecrets`](crate::gate::RedactSecrets) as a result check, after the checks given
    /// before it. Each private key, bearer token, API token, JSON Web Token and password in a
    /// URL that registry-lint's secret rules find, in any string of a result's JSON or text
    /// content, becomes `[redacted: <rule>]` (`[redacted: secret/api-token]`), and the call's
    /// audit event says `redacted`.
    ///
    /// ```
    /// use registry_core::content::Content;
    /// use registry_core::{DynamicTool, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// let registry = Registry::builder()
    ///     .tool(DynamicTool::new("tail_log", "Read the last lines of the log.")
    ///         .public()
    ///         .handler(|_, _| Ok::<_, String>(Content::text(
    ///             "connecting with sk-4fG7hJ2kL9mN3pQ8rS1tU6vW... ok",
    ///         ))))
    ///     .redact_secrets()
    ///     .build()?;
    /// let run = registry.open_run("r1", &Subject::new("acme"));
    /// let answer = run.call_blocking(ToolCall::new("c1", "tail_log", json!({})));
    /// assert_eq!(answer.blocks()[0].as_text(), Some("connecting with [redacted: secret/api-token]... ok"));
    /// # Ok::<(), registry_core::RegistryError>(())
    /// ```
    pub fn redact_secrets(self) -> Self {
        self.result_check(crate::gate::RedactSecrets::new())
    }

    /// Limits calls of every tool per subject (tenant and agent): `"10/min"` or a
    /// [`RateLimit`]. A tool's own `rate_limit` replaces this default for that tool. A
    /// malformed text is a build problem.
    #[track_caller]
    pub fn rate_limit<L>(mut self, limit: L) -> Self
    where
        L: TryInto<RateLimit>,
        L::Error: Display,
    {
        let limit = limit.try_into().map_err(|error| error.to_string());
        self.rate_limit = Some((limit, Source::caller()));
        self
    }

    /// Keeps rate-limit buckets in `store` (default: in memory), for limits shared across
    /// processes.
    pub fn quota_store(mut self, store: impl QuotaStore) -> Self {
        self.gate.quotas = Quotas::Custom(Box::new(store));
        self
    }

    /// Keeps approval requests in `store` (default: in memory), for requests that outlive the
    /// process or are decided by another one.
    pub fn approval_store(mut self, store: impl ApprovalStore) -> Self {
        self.gate.approvals = Box::new(store);
        self
    }

    /// Keeps tasks ([`Run::start_task`](crate::Run::start_task)) in `store` (default: in
    /// memory, [`MemoryTaskStore`](crate::task::MemoryTaskStore)), for tasks that another
    /// process reads or cancels.
    pub fn task_store(mut self, store: impl TaskStore) -> Self {
        self.tasks.store = Arc::new(store);
        self
    }

    /// Bounds tasks: running ones per principal and in total, ended ones (with their
    /// results) per principal and in total, the bytes of a result, and how long an ended
    /// task's result is kept (default: [`TaskLimits::new`]). A task past a bound on running
    /// tasks is refused ([`ErrorKind::RateLimited`](crate::ErrorKind::RateLimited)) before it
    /// starts; ended tasks never refuse one, the oldest are forgotten instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// use registry_core::task::TaskLimits;
    /// use registry_core::Registry;
    ///
    /// let limits = TaskLimits::new().with_per_principal(2).with_ttl(Duration::from_secs(300));
    /// let registry = Registry::builder().task_limits(limits).allow_empty().build().unwrap();
    /// # let _ = registry;
    /// ```
    pub fn task_limits(mut self, limits: TaskLimits) -> Self {
        self.tasks.limits = limits;
        self
    }

    /// How long an approval request waits for a decision before it expires (default: 15
    /// minutes).
    pub fn approval_ttl(mut self, ttl: Duration) -> Self {
        self.gate.approval_ttl = ttl;
        self
    }

    /// At most `n` approval requests may wait for a person at once per principal
    /// ([`Subject::principal`](crate::Subject::principal)), or, for a subject without one, per
    /// tenant and agent (default: 64). A call that would ask for one more is refused with
    /// [`ErrorKind::RateLimited`](crate::ErrorKind::RateLimited), saying that too many
    /// approvals are waiting, and nothing is stored: decide the waiting ones, or let them
    /// expire ([`approval_ttl`](Self::approval_ttl)), then call again. `0` refuses every call
    /// that needs approval.
    ///
    /// The count is the approval store's, and it keeps the request in the same atomic step
    /// ([`ApprovalStore::insert_bounded`]): calls asking at the same moment never pass the
    /// bound together, and a store shared by replicas bounds the principal across all of
    /// them; a store that cannot count refuses the call
    /// ([`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable)). A store that keeps the
    /// default `insert_bounded` counts, then inserts: there, calls asking at the same moment
    /// may pass the bound together.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, ErrorKind, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// /// Delete a project.
    /// #[tool(scopes = "project:admin", destructive, needs_approval)]
    /// fn delete_project(project: String) -> String {
    ///     format!("{project} deleted")
    /// }
    ///
    /// let registry = Registry::builder().declared().max_pending_approvals(1).build().unwrap();
    /// let alice = Subject::new("acme").with_scopes(["project:admin"]).with_principal("alice");
    /// let run = registry.open_run("run-1", &alice);
    /// let first = run.call_blocking(ToolCall::new("c1", "delete_project", json!({"project": "a"})));
    /// assert_eq!(first.error_kind(), Some(ErrorKind::ApprovalRequired));
    /// let second = run.call_blocking(ToolCall::new("c2", "delete_project", json!({"project": "b"})));
    /// assert_eq!(second.error_kind(), Some(ErrorKind::RateLimited));
    /// ```
    ///
    /// [`ApprovalStore::insert_bounded`]: crate::approval::ApprovalStore::insert_bounded
    pub fn max_pending_approvals(mut self, n: usize) -> Self {
        self.gate.max_pending = n;
        self
    }

    /// Gives the tool `tool_name` a readiness check: a function, sync or `async`, returning
    /// `Ok(())` or `Err(reason)`. It runs at [`build`](Self::build) and on every
    /// [`Registry::check_readiness`], under a deadline ([`readiness_timeout`](Self::readiness_timeout));
    /// a tool that is not ready is hidden from new runs with the reason
    /// [`HiddenReason::NotReady`](crate::access::HiddenReason::NotReady), and calls in older runs are
    /// answered [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable). A check that
    /// panics or times out counts as not ready. Naming a tool that is not registered is a
    /// build problem.
    ///
    /// At `build` checks run on a thread of their own, without an async runtime: a check
    /// that needs one (Tokio sockets or timers, say) fails there with the reason, and its tool
    /// starts not ready; run [`Registry::check_readiness`] inside the runtime right after
    /// building.
    #[track_caller]
    pub fn readiness<M>(
        mut self,
        tool_name: impl Into<String>,
        check: impl ReadinessCheck<M>,
    ) -> Self {
        self.readiness
            .push((tool_name.into(), check.into_check(), Source::caller()));
        self
    }

    /// How long one readiness check may take before its tool counts as not ready (default:
    /// 5 s).
    pub fn readiness_timeout(mut self, timeout: Duration) -> Self {
        self.readiness_timeout = Some(timeout);
        self
    }

    /// How many threads the registry's synchronous tools may run on at once (default: 64).
    ///
    /// A synchronous tool called from async code ([`Run::call`](crate::Run::call)) never runs
    /// on the caller's thread, an async worker: it runs on one of these threads, as does one
    /// with a deadline called with [`Run::call_blocking`](crate::Run::call_blocking) (which
    /// otherwise runs it on the calling thread). A thread cannot be interrupted: a tool that
    /// overruns its deadline is answered [`ErrorKind::TimedOut`](crate::ErrorKind::TimedOut)
    /// and its [`ToolContext::is_cancelled`](crate::ToolContext::is_cancelled) turns true,
    /// but its thread stays busy, and counts against this bound, until it returns.
    ///
    /// When every thread is busy, a call waits for one asynchronously, at most
    /// [`blocking_wait`](Self::blocking_wait) (or its own deadline, if shorter), with at most
    /// 16 calls per thread waiting; past either bound it is refused
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) (the server is busy, nothing
    /// ran). No more threads are ever started. Idle threads end after 30 s. `0` counts as 1.
    ///
    /// ```standalone_crate
    /// use registry_core::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .declared()
    ///     .allow_empty()
    ///     .blocking_threads(8)
    ///     .build()
    ///     .unwrap();
    /// # let _ = registry;
    /// ```
    pub fn blocking_threads(mut self, threads: usize) -> Self {
        self.blocking_threads = Some(threads);
        self
    }

    /// How long a call of a synchronous tool waits for a free thread when all
    /// [`blocking_threads`](Self::blocking_threads) are busy, before it is refused
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) (default: 10 s).
    pub fn blocking_wait(mut self, wait: Duration) -> Self {
        self.blocking_wait = Some(wait);
        self
    }

    /// How long a tool's question ([`ToolContext::elicit`](crate::ToolContext::elicit)) waits
    /// for an answer before it fails with
    /// [`ElicitError::TimedOut`](crate::host::ElicitError::TimedOut) (default: 10 minutes,
    /// [`DEFAULT_ELICIT_TIMEOUT`](crate::host::DEFAULT_ELICIT_TIMEOUT)). A call's own
    /// ([`CallOptions::with_elicit_timeout`](crate::call::CallOptions::with_elicit_timeout)) comes
    /// first; `registry-mcp` sets its `approval_timeout` so.
    pub fn elicit_timeout(mut self, timeout: Duration) -> Self {
        self.waits.elicit = timeout;
        self
    }

    /// How long a tool's sampling request ([`ToolContext::sample`](crate::ToolContext::sample))
    /// waits for the model's reply before it fails with
    /// [`SampleError::TimedOut`](crate::host::SampleError::TimedOut) (default: 2 minutes,
    /// [`DEFAULT_SAMPLE_TIMEOUT`](crate::host::DEFAULT_SAMPLE_TIMEOUT)). A call's own
    /// ([`CallOptions::with_sample_timeout`](crate::call::CallOptions::with_sample_timeout)) comes
    /// first; `registry-mcp` sets its `sampling_timeout` so.
    ///
    /// ```standalone_crate
    /// use std::time::Duration;
    /// use registry_core::{
    ///     tool, definition::BoxFuture, host::CallHost, host::CallInfo, Registry, host::SampleError, host::SampleReply,
    ///     host::SampleRequest, Subject, ToolCall, ToolContext, call::ToolError,
    /// };
    /// use serde_json::json;
    ///
    /// /// Summarize a text.
    /// #[tool(scopes = "text:read")]
    /// async fn summarize(ctx: &ToolContext, text: String) -> Result<String, ToolError> {
    ///     match ctx.sample(SampleRequest::new(50).user(text)).await {
    ///         Ok(reply) => Ok(reply.text()),
    ///         Err(SampleError::TimedOut(_)) => Ok("no summary: the model did not answer".into()),
    ///         Err(error) => Err(error.into()),
    ///     }
    /// }
    ///
    /// /// A model that never answers.
    /// struct Silent;
    ///
    /// impl CallHost for Silent {
    ///     fn sample<'a>(
    ///         &'a self,
    ///         _call: &CallInfo<'_>,
    ///         _request: SampleRequest,
    ///     ) -> BoxFuture<'a, Result<SampleReply, SampleError>> {
    ///         Box::pin(std::future::pending())
    ///     }
    /// }
    ///
    /// let registry = Registry::builder()
    ///     .declared()
    ///     .host(Silent)
    ///     .sample_timeout(Duration::from_millis(50))
    ///     .build()
    ///     .unwrap();
    /// let run = registry.open_run("r1", &Subject::new("acme").with_scopes(["text:read"]));
    /// let answer = run.call_blocking(ToolCall::new("c1", "summarize", json!({"text": "long"})));
    /// assert_eq!(answer.json(), &json!("no summary: the model did not answer"));
    /// ```
    pub fn sample_timeout(mut self, timeout: Duration) -> Self {
        self.waits.sample = timeout;
        self
    }

    /// Checks everything and builds the registry, or lists every problem found.
    ///
    /// A build that fails is audited: a [`ChangeRefused`](crate::audit::AuditEvent::ChangeRefused)
    /// event with every problem goes to `tracing` and to the [`audit_sink`](Self::audit_sink)
    /// given to this builder.
    pub fn build(self) -> Result<Registry, RegistryError> {
        let mut problems = Vec::new();
        if let Selection::Under(paths) = &self.declared {
            for path in paths {
                let found = declarations().any(|declaration| {
                    is_under(declaration.location.module_path().unwrap_or_default(), path)
                });
                if !found {
                    problems.push(BuildProblem::EmptySelection { path: path.clone() });
                }
            }
        }
        if let Some(bytes) = self.short_audit_key {
            problems.push(BuildProblem::ShortAuditKey { bytes });
        }
        for method in &self.misplaced_policy_sets {
            problems.push(BuildProblem::Policy {
                message: format!(
                    "a policy set was given to `RegistryBuilder::{method}`, where it is never validated against the registry and so hides every tool and denies every call; give it with `RegistryBuilder::policies` instead, which validates it and uses it both as an access rule and as a call policy"
                ),
            });
        }
        let mut schemas = SchemaChecks::default();
        let mut tools: Vec<Tool> = self
            .selected_declarations()
            .into_iter()
            .filter_map(|declaration| declared_tool(declaration, &mut schemas, &mut problems))
            .collect();
        // The declared tools are in name order already; tools built at run time join them.
        if !self.tools.is_empty() {
            tools.extend(
                self.tools
                    .into_iter()
                    .filter_map(|tool| tool.check(&mut problems))
                    .map(Tool::from_parts),
            );
            tools.sort_by(|a, b| a.name().cmp(b.name()));
        }
        tools.dedup_by(|second, first| {
            let same = first.name() == second.name();
            if same {
                problems.push(BuildProblem::DuplicateName {
                    name: first.name().to_owned(),
                    first: first.source(),
                    second: second.source(),
                });
            }
            same
        });
        let mut replacements = Vec::new();
        for (tool, reason) in self.replacements {
            let Some(parts) = tool.check(&mut problems) else {
                continue;
            };
            let by = parts.source;
            let name = parts.name.to_string();
            match tools.binary_search_by(|tool| tool.name().cmp(&name)) {
                Ok(index) => {
                    let replaced = std::mem::replace(&mut tools[index], Tool::from_parts(parts));
                    replacements.push(Replacement {
                        name,
                        replaced: replaced.source(),
                        by,
                        reason,
                    });
                }
                Err(_) => problems.push(BuildProblem::NothingToReplace { name, site: by }),
            }
        }
        crate::register::lint::tenant_data(tools.iter(), &mut problems);
        if self.require_documented {
            for tool in &tools {
                crate::register::lint::documented_parameters(tool, &mut problems);
            }
        }
        let mut gate = self.gate;
        match self.rate_limit {
            Some((Ok(limit), _)) => gate.rate_limit = Some(limit),
            Some((Err(reason), site)) => problems.push(BuildProblem::InvalidRateLimit {
                tool: String::new(),
                site,
                reason,
            }),
            None => {}
        }
        let mut readiness = Vec::with_capacity(self.readiness.len());
        for (name, check, site) in self.readiness {
            if tools
                .binary_search_by(|tool| tool.name().cmp(&name))
                .is_err()
            {
                problems.push(BuildProblem::UnknownReadinessTool { name, site });
            } else if readiness.iter().any(|(other, _)| *other == name) {
                problems.push(BuildProblem::RepeatedReadiness { name, site });
            } else {
                readiness.push((name, check));
            }
        }
        for name in self.required {
            if tools
                .binary_search_by(|tool| tool.name().cmp(&name))
                .is_err()
            {
                problems.push(BuildProblem::MissingTool { name });
            }
        }
        // Nothing at all is most often a mistake, unless said. Where another problem was
        // found (tools refused, a selection that found nothing), it already says why.
        if tools.is_empty() && !self.allow_empty && problems.is_empty() {
            problems.push(BuildProblem::NoTools {
                declared: matches!(self.declared, Selection::All),
            });
        }
        if !problems.is_empty() {
            return Err(refused_build(self.audit.as_deref(), problems));
        }
        let has_readiness = !readiness.is_empty();
        let registry = Registry::from_parts(RegistryParts {
            tools,
            replacements,
            state: AppState::from_map(self.state),
            access_rules: self.access_rules,
            policy_sets: self
                .policy_sets
                .into_iter()
                .map(|set| -> PolicyCheck { Box::new(move |registry| set.validate(registry)) })
                .collect(),
            audit: self.audit,
            audit_key: self
                .audit_key
                .unwrap_or_else(crate::shared::audit_key::AuditKey::of_process),
            host: self.host,
            embedder: self.embedder,
            limits: self.limits,
            gate,
            tasks: self.tasks,
            readiness,
            readiness_timeout: self
                .readiness_timeout
                .unwrap_or(crate::gate::DEFAULT_TIMEOUT),
            pool: BlockingPool::new(
                self.blocking_threads.unwrap_or(pool::DEFAULT_THREADS),
                self.blocking_wait.unwrap_or(pool::DEFAULT_WAIT),
            ),
            waits: self.waits,
            require_documented: self.require_documented,
        });
        // The policy sets are checked against the registry as built (every tool's schema and
        // attributes known); their problems are listed with the others below.
        let mut problems: Vec<BuildProblem> = registry
            .validate_policies(&registry)
            .0
            .into_iter()
            .map(|message| BuildProblem::Policy { message })
            .collect();
        // On a thread of their own, so that a check that needs the caller's async runtime fails
        // at once (rather than blocking that runtime's thread until its deadline).
        if has_readiness {
            std::thread::scope(|scope| {
                let _ = scope
                    .spawn(|| pollster::block_on(registry.check_readiness()))
                    .join();
            });
        }
        for profile in self.compatible {
            if let Err(error) = registry.check(profile) {
                problems.extend(error.0.into_iter().map(BuildProblem::Incompatible));
            }
        }
        if problems.is_empty() {
            Ok(registry)
        } else {
            Err(refused_build(registry.audit_sink(), problems))
        }
    }

    /// The chosen declarations, each once, in a stable order (name, then source).
    fn selected_declarations(&self) -> Vec<&'static Declaration> {
        let chosen: Vec<&'static Declaration> = match &self.declared {
            Selection::None => return Vec::new(),
            Selection::All => declarations().collect(),
            Selection::Under(paths) => declarations()
                .filter(|declaration| {
                    let module = declaration.location.module_path().unwrap_or_default();
                    paths.iter().any(|path| is_under(module, path))
                })
                .collect(),
        };
        // By the first 16 bytes of the name first, kept beside each declaration, so that most
        // comparisons read no declaration (10,000 of them are scattered over megabytes).
        let mut keyed: Vec<(u128, &'static Declaration)> = chosen
            .into_iter()
            .map(|declaration| (name_prefix(declaration.name), declaration))
            .collect();
        keyed.sort_unstable_by(|(a_prefix, a), (b_prefix, b)| {
            a_prefix
                .cmp(b_prefix)
                .then_with(|| a.name.cmp(b.name))
                .then_with(|| a.location.cmp(&b.location))
        });
        keyed
            .into_iter()
            .map(|(_, declaration)| declaration)
            .collect()
    }
}

/// The error of a failed build, audited.
fn refused_build(sink: Option<&dyn AuditSink>, problems: Vec<BuildProblem>) -> RegistryError {
    let error = RegistryError::Build(problems);
    crate::audit::refused(sink, crate::audit::ChangeAttempt::Build, None, None, &error);
    error
}

/// The first 16 bytes of `name` (zeros past its end), as a number that orders as the bytes
/// do: a name whose prefix is smaller is smaller.
fn name_prefix(name: &str) -> u128 {
    let mut bytes = [0; 16];
    let head = &name.as_bytes()[..name.len().min(16)];
    bytes[..head.len()].copy_from_slice(head);
    u128::from_be_bytes(bytes)
}

/// Whether `module` is `path` or a module below it.
fn is_under(module: &str, path: &str) -> bool {
    module
        .strip_prefix(path)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// The tool of a declaration; its name, scopes and `public` were checked at compile time, and
/// are checked again here in case the record was written by hand. Every text of it a model
/// reads meets the description lint.
fn declared_tool(
    declaration: &'static Declaration,
    schemas: &mut SchemaChecks,
    problems: &mut Vec<BuildProblem>,
) -> Option<Tool> {
    let source = declaration.location;
    let mut valid = true;
    if let Err(reason) = crate::declare::name::check_tool_name(declaration.name) {
        problems.push(BuildProblem::InvalidName {
            name: declaration.name.to_owned(),
            site: source,
            reason,
        });
        valid = false;
    }
    let mut scopes = Vec::with_capacity(declaration.scopes.len());
    for scope in declaration.scopes {
        match Scope::new(Cow::Borrowed(*scope)) {
            Ok(scope) => scopes.push(scope),
            Err(error) => {
                problems.push(BuildProblem::InvalidScope {
                    tool: declaration.name.to_owned(),
                    site: source,
                    reason: error.to_string(),
                });
                valid = false;
            }
        }
    }
    let unrestricted = declaration.scopes.is_empty() && declaration.tenants.is_empty();
    if declaration.public != unrestricted {
        let tool = declaration.name.to_owned();
        problems.push(if unrestricted {
            BuildProblem::Unrestricted { tool, site: source }
        } else {
            BuildProblem::PublicButRestricted { tool, site: source }
        });
        valid = false;
    }
    if let Some(namespace) = declaration.namespace
        && let Err(reason) = check_namespace(namespace)
    {
        problems.push(BuildProblem::InvalidNamespace {
            tool: declaration.name.to_owned(),
            site: source,
            reason,
        });
        valid = false;
    }
    let namespace = match declaration.namespace {
        Some(namespace) => Some(Cow::Borrowed(namespace)),
        None => default_namespace(&scopes),
    };
    let settings = ToolSettings {
        scopes,
        tenants: declaration
            .tenants
            .iter()
            .map(|t| (*t).to_owned())
            .collect(),
        public: declaration.public,
        hints: declaration.hints,
        timeout: declaration.timeout,
        needs_approval: declaration.needs_approval,
        rate_limit: declaration.rate_limit,
        allow_description: declaration.allow_description.map(Cow::Borrowed),
        namespace,
        always_loaded: declaration.always_loaded,
        task: declaration.task || declaration.task_required,
        task_required: declaration.task_required,
        non_blocking: declaration.non_blocking && matches!(declaration.execute, Execute::Sync(_)),
        blocking: declaration.blocking && matches!(declaration.execute, Execute::Sync(_)),
        attributes: declaration
            .attributes
            .iter()
            .map(|(key, values)| {
                (
                    (*key).to_owned(),
                    values.iter().map(|value| (*value).to_owned()).collect(),
                )
            })
            .collect(),
        callable_from_code: declaration.callable_from_code,
    };
    // The macro checked them; a declaration written by other means is checked here.
    let attribute_problems = crate::declare::settings::attribute_problems(
        settings
            .attributes
            .iter()
            .map(|(key, values)| (key.as_str(), values.as_slice())),
    );
    if !attribute_problems.is_empty() {
        for reason in attribute_problems {
            problems.push(BuildProblem::InvalidAttribute {
                tool: declaration.name.to_owned(),
                site: source,
                reason,
            });
        }
        valid = false;
    }
    let tool = Tool::declared(declaration, settings);
    // The macro linted the description, the title and the parameters' docs, with the same
    // rules (registry-lint, pinned to one version for both crates), and a `#[tool]` with a
    // finding does not compile: they are not linted again here (they were most of the time
    // of `from_inventory` over 10,000 tools). The docs of the parameter and result types
    // (fields, variants), their values, defaults and examples arrive only through
    // `JsonSchema`, here. Each distinct parameter list and return type is checked once
    // (`SchemaChecks`): the next tools that have it build their schemas when first needed.
    let before = problems.len();
    let lint = Lint {
        tool: declaration.name,
        site: source,
        allowed: declaration
            .allow_description
            .is_some_and(|reason| !reason.trim().is_empty()),
    };
    let parameters = schemas.parameters(declaration.params, lint, || {
        &tool.definition_ref().parameters
    });
    let output = schemas.output(declaration.output, lint, || tool.output_schema());
    problems.extend(parameters.lint);
    problems.extend(output.lint);
    problems.extend(parameters.bound);
    problems.extend(output.bound);
    (valid && problems.len() == before).then_some(tool)
}
