//! Declare the tools an LLM may call, and keep a hard boundary between what the system has
//! and what one run may use.
//!
//! One data path, each step a part of the API:
//!
//! 1. **declare**: a tool is a plain function under [`#[tool]`](macro@tool), which derives
//!    its definition (name, description from the doc comment, JSON Schema of the parameters
//!    from their types), an executor (JSON arguments in, JSON result out) and its policy
//!    (scopes, tenants, behaviour hints), and submits a static record to a registration list;
//!    [`DynamicTool`] builds one at run time;
//! 2. **register**: [`Registry::from_inventory`] (or [`Registry::builder`]) builds the
//!    registry from that list; a duplicate name is an error naming both declaration sites,
//!    never an overwrite;
//! 3. **discover**: [`Registry::open_run`] projects the registry for one [`Subject`] and
//!    freezes what it may see as the run's [`AllowedSet`];
//! 4. **present**: [`Run::export`] gives the visible definitions in the exact format of a
//!    [`Profile`] (OpenAI, Anthropic, Gemini, MCP); for thousands of tools, [`Run::search`]
//!    finds tools of the allowed set by what they do, and a [`DeferredSession`]
//!    ([`Run::deferred`]) shows the model a few of them and a search tool, loading what it
//!    finds;
//! 5. **resolve and execute**: [`Run::call`] checks every call (a [`ToolCall`], read from a
//!    provider's response with [`Profile::parse_calls`]) against the allowed set, resolves
//!    it, validates its arguments against the schema the model was shown, passes it through
//!    the gate (a per-call [`CallPolicy`], human approval, quotas, readiness), runs it, and
//!    answers with an [`Observation`], which [`Profile::render`] turns into the provider's
//!    result message. Unknown, hidden, revoked and invalid calls, failures, panics and
//!    timeouts are all observations the model can act on.
//!
//! ```
//! use registry_core::{tool, ErrorKind, Registry, Subject, ToolCall};
//! use serde_json::json;
//!
//! /// Read the current build status of a project.
//! ///
//! /// Returns the state of the last pipeline run.
//! #[tool(scopes = "build:read", read_only)]
//! fn get_status(
//!     /// Project identifier, e.g. `web`.
//!     project: String,
//!     /// Include the last log lines.
//!     verbose: Option<bool>,
//! ) -> Result<String, String> {
//!     match project.as_str() {
//!         "web" => Ok(if verbose == Some(true) { "green (12 steps)" } else { "green" }.into()),
//!         other => Err(format!("no project named {other:?}")),
//!     }
//! }
//!
//! let registry = Registry::from_inventory()?;
//! assert_eq!(registry.get("get_status")?.definition().parameters["required"], json!(["project"]));
//!
//! // A tool runs only inside a run: the tools one subject may use, frozen.
//! let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["build:read"]));
//! let ok = run.call_blocking(ToolCall::new("call_1", "get_status", json!({"project": "web"})));
//! assert_eq!(ok.content(), &json!("green"));
//! let bad = run.call_blocking(ToolCall::new("call_2", "get_status", json!({"project": "web", "verbose": "yes"})));
//! assert_eq!(bad.error_kind(), Some(ErrorKind::InvalidArguments));
//! assert_eq!(bad.problems()[0].to_string(), r#"/verbose: expected boolean or null, got string "yes""#);
//! # Ok::<(), registry_core::RegistryError>(())
//! ```
//!
//! # Which tools are collected: linking
//!
//! [`Registry::from_inventory`] sees every `#[tool]` function *linked into the program*, from
//! any module of any crate. The compiler links a dependency only if the program names it
//! somewhere: a crate that only declares tools, and is never called, is left out, and its
//! tools are silently missing. Name such crates once, e.g. in `main.rs`:
//!
//! ```
//! # mod billing_tools {} mod search_tools {}
//! registry_core::link!(billing_tools, search_tools);
//! ```
//!
//! and let the application fail at startup if tools are still missing, with their names:
//!
//! ```
//! # use registry_core::Registry;
//! let error = Registry::builder()
//!     .declared()
//!     .require(["create_invoice", "search"])
//!     .build()
//!     .unwrap_err();
//! assert!(error.to_string().contains("the required tool \"create_invoice\" is not registered"));
//! ```
//!
//! Collection relies on [`inventory`](https://docs.rs/inventory), which works on Linux,
//! macOS, Windows, the BSDs, iOS, Android and WebAssembly; not in `no_std` or on targets
//! without static constructors.

// Library code reports failures; it does not unwrap them (tests may).
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod audit;
mod declare;
mod discover;
mod execute;
mod gate;
mod pointer;
mod present;
mod register;
mod resolve;

#[doc(hidden)]
pub mod __private;

pub use present::compat;

pub use audit::{
    AUDIT_TARGET, ApprovalEvent, ApprovalEventKind, AuditEvent, AuditSink, CallEvent,
    ChangeAttempt, ChangeEvent, ChangeRefusedEvent, PROJECTED_TOOLS, ProjectionEvent,
    REFUSAL_PROBLEMS, REFUSAL_TEXT, ReadinessEvent, ToolVersion,
};
pub use declare::declaration::{BoxFuture, Outcome};
pub use declare::definition::ToolDefinition;
pub use declare::dynamic::DynamicTool;
pub use declare::name::{MAX_NAME_LEN, NameError, check_tool_name};
pub use declare::policy::{Hints, Scope, ScopeError, ToolPolicy};
pub use declare::source::Source;
pub use discover::access::{AccessPolicy, Verdict};
pub use discover::allowed::AllowedSet;
pub use discover::explain::{Explanation, HiddenReason, HiddenTool};
pub use discover::fingerprint::Fingerprint;
pub use discover::run::{Capability, Run};
pub use discover::search::SearchHit;
pub use discover::subject::{Access, Subject};
pub use execute::cancel::{Cancellation, Cancelled};
pub use execute::content::{
    Content, Embedded, EmbeddedResource, Media, Payload, ResourceLink, ToolOutput,
};
pub use execute::context::{CallOptions, ToolContext};
pub use execute::form::form_schema;
pub use execute::host::{
    CallHost, CallInfo, DEFAULT_ELICIT_TIMEOUT, DEFAULT_SAMPLE_TIMEOUT, ElicitError, ElicitRequest,
    Elicitation, FormError, LogLevel, Progress, SampleContent, SampleError, SampleMessage,
    SampleReply, SampleRequest, SampleRole, TOOL_EVENT_TARGET,
};
pub use execute::observation::{ErrorKind, Observation};
pub use gate::{
    ApprovalError, ApprovalRequest, ApprovalState, ApprovalStore, CallPolicy, CallRequest,
    Decision, MemoryApprovalStore, MemoryQuotaStore, QuotaDecision, QuotaKey, QuotaStore,
    RateLimit, RateLimitError, ReadinessCheck, StoreError, ToolReadiness, Transition,
};
pub use present::deferred::{
    DeferredOptions, DeferredSession, SEARCH_TOOL_NAME, SearchAnswer, SearchCall, SessionCall,
};
pub use present::export::DIGEST_META_KEY;
pub use present::profile::{CompatibilityError, Incompatibility, Profile};
pub use present::reader::ParseError;
pub use register::builder::RegistryBuilder;
pub use register::change::{Change, ChangeKind, OldRuns, ReplacePolicy};
pub use register::error::{BuildProblem, RegistryError};
pub use register::registry::{Registry, Replacement};
pub use register::tool::Tool;
pub use resolve::call::ToolCall;
pub use resolve::guard::{ArgumentLimits, MAX_ARGUMENT_DEPTH};
pub use resolve::tool_error::{ArgumentProblem, ToolError};

#[doc = include_str!("declare/tool_macro.md")]
pub use registry_macros::tool;
