//! Hooks for the crates that serve a registry (`registry-mcp`) or share it between replicas
//! (`registry-postgres`): what a server needs and an application does not.
//!
//! They are extension traits, implemented for [`Run`] and [`Registry`] only (sealed), so the
//! two types an application reads stay small: bring them in with
//! `use registry_core::server::{RegistryExt, RunExt};`.

use std::sync::Arc;

use crate::approval::request::Verdict;
use crate::approval::request::{ApprovalError, ApprovalRequest, ApprovalState, StoreError};
use crate::declare::settings::Scope;
use crate::discover::run::Run;
use crate::execute::observation::Observation;
use crate::gate::settled::Settled;
use crate::host::call_host::CallHost;
use crate::host::context::CallOptions;
use crate::register::registry::Registry;
use crate::resolve::call::ToolCall;
use crate::task::record::Task;

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::discover::run::Run {}
    impl Sealed for crate::register::registry::Registry {}
}

/// What a server does with a [`Run`] beyond calling its tools.
pub trait RunExt: sealed::Sealed {
    /// [`Run::call`], with a host of the call's own (for its tool's progress, logs,
    /// questions and sampling) and a cancellation: once tripped, the call ends as
    /// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) (an async tool's future is
    /// dropped, a synchronous tool sees
    /// [`ToolContext::is_cancelled`](crate::ToolContext::is_cancelled) and its result is
    /// discarded), audited as `cancelled`.
    ///
    /// ```standalone_crate
    /// use registry_core::call::{CallOptions, Cancellation};
    /// use registry_core::server::RunExt;
    /// use registry_core::{tool, ErrorKind, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// /// Wait for ever.
    /// #[tool(public)]
    /// async fn wait_forever() -> String {
    ///     std::future::pending::<()>().await;
    ///     unreachable!()
    /// }
    ///
    /// let run = Registry::from_inventory().unwrap().open_run("run-1", &Subject::new("acme"));
    /// let cancellation = Cancellation::new();
    /// let options = CallOptions::new().with_cancellation(cancellation.clone());
    /// std::thread::spawn(move || {
    ///     std::thread::sleep(std::time::Duration::from_millis(20));
    ///     cancellation.cancel();
    /// });
    /// let answer = pollster::block_on(run.call_with(ToolCall::new("c1", "wait_forever", json!({})), options));
    /// assert_eq!(answer.error_kind(), Some(ErrorKind::Cancelled));
    /// ```
    fn call_with(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> impl Future<Output = Observation> + Send;

    /// [`Run::call_blocking`], with the call's own host and cancellation (see
    /// [`call_with`](Self::call_with)).
    fn call_blocking_with(&self, call: ToolCall, options: CallOptions) -> Observation;

    /// [`Run::decide`] (the one way to decide a request), with the host and cancellation of
    /// the call that runs if the verdict approves, as [`call_with`](Self::call_with) is
    /// [`Run::call`] with them: `registry-mcp` gives the approved call those of the
    /// `tools/call` it answers.
    fn decide_with(
        &self,
        id: &str,
        verdict: Verdict,
        options: CallOptions,
    ) -> impl Future<Output = Result<Settled, ApprovalError>> + Send;

    /// [`Run::start_task`], with the host the task's tool reaches (its progress and
    /// questions are recorded in the task store first, then passed to `options`' host) and a
    /// cancellation that cancels the task too. `registry-mcp` gives a task the host of the
    /// MCP session that started it.
    fn start_task_with(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> impl Future<Output = Result<Task, Observation>> + Send;

    /// Sends the progress, logs, questions and sampling requests of this run's calls to
    /// `host`, instead of the registry's (see [`CallHost`]); a call's own host, given with
    /// [`call_with`](Self::call_with), still comes first. A second call replaces it.
    ///
    /// ```standalone_crate
    /// use std::sync::{Arc, Mutex};
    /// use registry_core::host::{CallHost, CallInfo, LogLevel};
    /// use registry_core::server::RunExt;
    /// use registry_core::{tool, Registry, Subject, ToolCall, ToolContext};
    /// use serde_json::json;
    ///
    /// /// Clean the build cache.
    /// #[tool(public)]
    /// fn clean(ctx: &ToolContext) -> String {
    ///     ctx.log(LogLevel::Notice, "removed 3 GiB");
    ///     "done".into()
    /// }
    ///
    /// #[derive(Clone, Default)]
    /// struct Transcript(Arc<Mutex<Vec<String>>>);
    ///
    /// impl CallHost for Transcript {
    ///     fn log(&self, call: &CallInfo<'_>, level: LogLevel, message: &str) {
    ///         self.0.lock().unwrap().push(format!("{} {level}: {message}", call.tool_name));
    ///     }
    /// }
    ///
    /// let transcript = Transcript::default();
    /// let run = Registry::from_inventory()
    ///     .unwrap()
    ///     .open_run("run-1", &Subject::new("acme"))
    ///     .with_host(transcript.clone());
    /// let _ = run.call_blocking(ToolCall::new("c1", "clean", json!({})));
    /// assert_eq!(*transcript.0.lock().unwrap(), ["clean notice: removed 3 GiB"]);
    /// ```
    fn with_host(self, host: impl CallHost) -> Run;

    /// The host this run's calls use unless given their own: the run's
    /// ([`with_host`](Self::with_host)), else the registry's
    /// ([`RegistryBuilder::host`](crate::RegistryBuilder::host)), else the defaults
    /// (`tracing` for progress and logs, "not supported" for questions and sampling). A host
    /// given per call can pass on to it what it cannot do itself, as `registry-mcp` does.
    fn host(&self) -> Arc<dyn CallHost>;

    /// The registry the run was opened from.
    fn registry(&self) -> &Registry;

    /// If this run cannot see the tool `name` **only** because its subject lacks scopes:
    /// every scope the tool needs (those the subject has too), in declaration order. `None`
    /// if the run sees it, if it is unknown, or if anything else would still hide it from
    /// the subject with those scopes: another tenant, read-only access, a revocation, a
    /// readiness check, or the application's access policy asked about the subject with the
    /// scopes added.
    ///
    /// What step-up authorization needs (`registry-mcp` answers such a call HTTP 403
    /// `insufficient_scope`, naming the scopes): for servers, never for the model.
    ///
    /// ```standalone_crate
    /// use registry_core::server::RunExt;
    /// use registry_core::{Registry, Subject, access::Access, tool};
    ///
    /// /// Deploy the last build.
    /// #[tool(scopes = "deploy:write, build:read")]
    /// fn deploy_for_scopes_doc() -> String { "ok".into() }
    ///
    /// let registry = Registry::builder().declared_in([module_path!()]).build().unwrap();
    /// let run = registry.open_run("r1", &Subject::new("acme").with_scopes(["build:read"]));
    /// let scopes = run.needs_only_scopes("deploy_for_scopes_doc").unwrap();
    /// let names: Vec<&str> = scopes.iter().map(|scope| scope.as_str()).collect();
    /// assert_eq!(names, ["deploy:write", "build:read"]);
    /// // Read-only access hides it anyway: more scopes would not help.
    /// let read_only = Subject::new("acme").with_access(Access::ReadOnly);
    /// assert!(registry.open_run("r2", &read_only).needs_only_scopes("deploy_for_scopes_doc").is_none());
    /// ```
    fn needs_only_scopes(&self, name: &str) -> Option<Vec<Scope>>;
}

impl RunExt for Run {
    fn call_with(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> impl Future<Output = Observation> + Send {
        self.call_with_options(call, options)
    }

    fn call_blocking_with(&self, call: ToolCall, options: CallOptions) -> Observation {
        self.call_blocking_with_options(call, options)
    }

    fn decide_with(
        &self,
        id: &str,
        verdict: Verdict,
        options: CallOptions,
    ) -> impl Future<Output = Result<Settled, ApprovalError>> + Send {
        self.decide_with_options(id, verdict, options)
    }

    fn start_task_with(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> impl Future<Output = Result<Task, Observation>> + Send {
        self.start_task_with_options(call, options)
    }

    fn with_host(self, host: impl CallHost) -> Run {
        self.hosted_by(host)
    }

    fn host(&self) -> Arc<dyn CallHost> {
        self.effective_host()
    }

    fn registry(&self) -> &Registry {
        self.origin()
    }

    fn needs_only_scopes(&self, name: &str) -> Option<Vec<Scope>> {
        self.missing_scopes(name)
    }
}

/// What a server or a control plane does with a [`Registry`] beyond building runs.
pub trait RegistryExt: sealed::Sealed {
    /// Holds every call, of every run, until [`resume`](Self::resume): each is refused with
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable), and nothing runs. For a
    /// control plane that shares revocations between replicas: while it cannot reach the
    /// shared record, it cannot know whether a tool was revoked elsewhere, and a call it
    /// cannot know is allowed must not run (fail closed). Lists are not changed: the tools
    /// come back as they were once it resumes. Approvals are held too.
    ///
    /// ```standalone_crate
    /// use registry_core::server::RegistryExt;
    /// use registry_core::{tool, ErrorKind, Registry, Subject, ToolCall};
    ///
    /// /// Read the current build status of a project.
    /// #[tool(public, read_only)]
    /// fn status(project: String) -> String {
    ///     format!("{project}: green")
    /// }
    ///
    /// let registry = Registry::builder().declared_in([module_path!()]).build().unwrap();
    /// let run = registry.open_run("run-1", &Subject::new("acme"));
    /// let call = || ToolCall::new("c1", "status", serde_json::json!({"project": "web"}));
    /// registry.suspend("the control plane is unreachable");
    /// let refused = run.call_blocking(call());
    /// assert_eq!(refused.error_kind(), Some(ErrorKind::Unavailable));
    /// assert_eq!(registry.suspended().as_deref(), Some("the control plane is unreachable"));
    /// registry.resume();
    /// assert_eq!(run.call_blocking(call()).error_kind(), None);
    /// ```
    fn suspend(&self, reason: impl Into<String>);

    /// Ends a [`suspend`](Self::suspend): calls run again.
    fn resume(&self);

    /// Why every call is held, if it is ([`suspend`](Self::suspend)).
    fn suspended(&self) -> Option<String>;

    /// Whether the tool named `name` is revoked for runs opened now; `None` for a name the
    /// registry does not have.
    fn is_revoked_now(&self, name: &str) -> Option<bool>;

    /// Approval request `id` and its state, from the registry's approval store (which may
    /// be shared with other replicas); `None` if the store has no such request.
    fn approval_request(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>> + Send;

    /// Who approved pending request `id` outside any run, if the approval store keeps such
    /// approvals
    /// ([`ApprovalStore::approved_outside`](crate::approval::ApprovalStore::approved_outside)).
    fn approved_outside(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// A wait for approval request `id` to change, registered at once; `None` when the
    /// approval store cannot tell (the caller polls):
    /// [`ApprovalStore::watch`](crate::approval::ApprovalStore::watch).
    fn watch_approval(
        &self,
        id: &str,
    ) -> Option<std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'static>>>;

    /// How many revocations and replacements have been made: cheap to poll (an atomic read)
    /// for a server that must tell its clients when their tool lists may have changed.
    fn generation(&self) -> u64;
}

impl RegistryExt for Registry {
    fn suspend(&self, reason: impl Into<String>) {
        self.suspend_calls(reason);
    }

    fn resume(&self) {
        self.resume_calls();
    }

    fn suspended(&self) -> Option<String> {
        self.suspension()
    }

    fn is_revoked_now(&self, name: &str) -> Option<bool> {
        self.revoked_now(name)
    }

    fn approval_request(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>> + Send
    {
        self.pending_approval(id)
    }

    fn approved_outside(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send {
        self.approver_outside(id)
    }

    fn watch_approval(
        &self,
        id: &str,
    ) -> Option<std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'static>>> {
        self.approval_watch(id)
    }

    fn generation(&self) -> u64 {
        self.change_generation()
    }
}
