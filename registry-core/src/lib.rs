//! Declare the tools an LLM may call, and keep a hard boundary between what the system has
//! and what one run may use.
//!
//! One data path, each step a part of the API and a page of the
//! [guide](https://github.com/tool-registry/tool-registry/tree/main/docs/guide)
//! (`docs/guide/` in the repository, where every snippet is a doc test):
//!
//! 1. **declare** (`declare.md`): a plain function under [`#[tool]`](macro@tool), or a
//!    [`DynamicTool`] built at run time: its [`ToolDefinition`], its
//!    [settings](definition::ToolSettings) (who may use it, hints, gate keys) and its result,
//!    a JSON value or blocks of [`content`];
//! 2. **register** (`register.md`): [`Registry::from_inventory`] or [`Registry::builder`]; a
//!    duplicate name is an error naming both sites, never an overwrite; revocations,
//!    restorations and replacements are explicit and recorded ([`change`]), and the
//!    [`lockfile`] pins every definition;
//! 3. **discover** (`discover.md`): [`Registry::open_run`] projects the registry for one
//!    [`Subject`] and freezes what it may see as the run's [`AllowedSet`] ([`access`]);
//! 4. **present** (`present.md`): [`Run::export`] in the exact format of a [`Profile`]
//!    (OpenAI, Anthropic, Gemini, MCP), [`Profile::parse_calls`] and [`Profile::render`];
//!    [`Run::search`] and [`Run::deferred`] ([`deferred`]) for thousands of tools;
//! 5. **call** (`call.md`, `gate.md`): [`Run::call`] (or [`Run::call_blocking`] outside an
//!    async runtime) checks a [`ToolCall`] against the allowed set, validates its arguments
//!    against the schema the model was shown, passes it through the [`gate`] (call policies,
//!    [approvals](approval) decided with [`Run::decide`], quotas, readiness), runs it (a
//!    running tool reaches its [`host`]), and answers with an [`Observation`] the model can
//!    act on. Every step is [audited](audit). A long-running tool can be started as a
//!    [`task`] instead ([`Run::start_task`]), through the same gate, and followed by id.
//!
//! ```standalone_crate
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
//! assert_eq!(registry.get("get_status").unwrap().definition().parameters["required"], json!(["project"]));
//!
//! // A tool runs only inside a run: the tools one subject may use, frozen.
//! let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["build:read"]));
//! let ok = run.call_blocking(ToolCall::new("call_1", "get_status", json!({"project": "web"})));
//! assert_eq!(ok.json(), &json!("green"));
//! let bad = run.call_blocking(ToolCall::new("call_2", "get_status", json!({"project": "web", "verbose": "yes"})));
//! assert_eq!(bad.error_kind(), Some(ErrorKind::InvalidArguments));
//! assert_eq!(bad.problems()[0].to_string(), r#"/verbose: expected boolean or null, got string "yes""#);
//! # Ok::<(), registry_core::RegistryError>(())
//! ```
//!
//! # Which tools are collected: linking
//!
//! [`Registry::from_inventory`] sees every `#[tool]` *linked into the program*. A crate that
//! only declares tools, and that the program never names, is not linked, and its tools are
//! silently missing: name it once with [`link!`](macro@link), and let
//! [`RegistryBuilder::require`] fail at startup if tools are still missing (the guide's
//! `declare.md` has the details).
//!
//! ```
//! # mod billing_tools {} mod search_tools {}
//! registry_core::link!(billing_tools, search_tools);
//! ```

// docs.rs only (it sets `--cfg docsrs`): show beside each feature-gated item the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Library code reports failures; it does not unwrap them (tests may).
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]
// Every public type can be printed (and prints no secret).
#![warn(missing_debug_implementations)]

mod declare;
mod discover;
mod execute;
mod pointer;
mod present;
mod register;
mod resolve;

pub mod audit;
pub mod call;
pub mod gate;
pub mod server;

pub use compat;

#[doc(hidden)]
pub mod __private;
mod shared;
pub mod content;
pub mod task;
pub mod approval;
pub mod host;
pub mod deferred;
pub mod change;
pub mod compat;
pub mod access;
pub mod search;
mod project;

pub use declare::definition::ToolDefinition;
pub use register::dynamic::DynamicTool;
pub use discover::allowed::AllowedSet;
pub use shared::fingerprint::Fingerprint;
pub use discover::run::Run;
pub use shared::subject::Subject;
pub use host::context::ToolContext;
pub use execute::observation::{ErrorKind, Observation};
pub use shared::profile::{ParseProfileError, Profile};
pub use present::reader::ParseError;
pub use register::builder::RegistryBuilder;
pub use declare::error::{BuildProblem, RegistryError};
pub use register::registry::Registry;
pub use execute::tool::Tool;
pub use resolve::call::ToolCall;

#[doc = include_str!("declare/tool_macro.md")]
pub use registry_macros::tool;

pub mod approval {
    //! Approvals: a call that waits for a person, and what the person decides.
    //!
    //! A tool declared `needs_approval`, or a call a [`CallPolicy`](crate::gate::CallPolicy)
    //! answers [`RequireApproval`](crate::gate::Decision::RequireApproval), is not run: its
    //! observation is [`ErrorKind::ApprovalRequired`](crate::ErrorKind::ApprovalRequired) and
    //! carries an [`ApprovalRequest`] ([`Observation::approval`](crate::Observation::approval)).
    //! A person decides it with a [`Verdict`], given to [`Run::decide`](crate::Run::decide) or
    //! [`Run::decide_blocking`](crate::Run::decide_blocking), whose observation is the model's
    //! answer to its call. Requests wait in an [`ApprovalStore`] (in memory by default,
    //! [`MemoryApprovalStore`]; `registry-postgres` shares one between replicas).

    pub use crate::approval::request::{ApprovalError, ApprovalRequest, ApprovalState, ArgumentDigest, Verdict};
    pub use crate::approval::store::{ApprovalStore, ApprovalWatchers, Insertion, MemoryApprovalStore, Transition};
}

pub mod task {
    //! Tasks: a call to a long-running tool, started and followed instead of awaited.
    //!
    //! A tool declared `#[tool(task)]` (or [`DynamicTool::task`](crate::DynamicTool::task))
    //! can be started as a task with [`Run::start_task`](crate::Run::start_task): the call
    //! passes the same gate as [`Run::call`](crate::Run::call) (resolution, arguments,
    //! policies, a person's approval, the budget and the rate limit) **before** anything
    //! starts, then its tool runs on a thread of its own and the caller gets a [`Task`] at
    //! once. [`Run::task`](crate::Run::task) polls its [`TaskStatus`] and progress,
    //! [`Run::cancel_task`](crate::Run::cancel_task) cancels it (the tool sees
    //! [`ToolContext::cancelled`](crate::ToolContext::cancelled)),
    //! [`Run::task_result`](crate::Run::task_result) and
    //! [`Run::wait_task`](crate::Run::wait_task) give the observation a call would have
    //! answered. A task that needs approval starts when
    //! [`Run::decide_task`](crate::Run::decide_task) approves it.
    //!
    //! A task belongs to its subject's [principal](crate::Subject::principal): another
    //! principal can neither read nor cancel it. Tasks are bounded per principal and in
    //! total, and an ended task's result is kept for a TTL ([`TaskLimits`]), in a
    //! [`TaskStore`] (in memory by default, [`MemoryTaskStore`]). Each start, end and
    //! cancellation is audited ([`TaskEvent`](crate::audit::TaskEvent)). Over MCP,
    //! `registry-mcp` serves the same tasks through the tasks extension.

    pub use crate::task::host::MAX_TASK_QUESTIONS;
    pub use crate::task::kept::{KeptResult, KeptResultError};
    pub use crate::task::record::{MAX_ANSWER_BYTES, Task, TaskAnswers, TaskError, TaskLimits, TaskQuestion, TaskStatus};
    pub use crate::task::store::{Answering, Finish, Insertion, MemoryTaskStore, TaskEnd, TaskStore, TaskUpdate, answer_questions, questions_status, take_answer};
}

pub mod definition {
    //! What a tool is declared with, besides its [`ToolDefinition`](crate::ToolDefinition): its
    //! settings (scopes, tenants, hints, gate flags), where it was declared, and the rule its
    //! name follows.

    pub use crate::shared::future::BoxFuture;
    pub use crate::declare::declaration::Outcome;
    pub use crate::declare::header::{MAX_HEADER_NAME, check_header_name};
    pub use crate::declare::name::{MAX_NAME_LEN, NameError, check_tool_name};
    pub use crate::shared::hints::Hints;
    pub use crate::declare::settings::{Scope, ScopeError, ToolSettings};
    pub use crate::declare::source::Source;
}

pub mod access {
    //! Who sees which tools: a run's [`Access`] level, the application's [`AccessRule`]s, and
    //! why a tool is hidden from a subject ([`Explanation`], from
    //! [`Run::explain`](crate::Run::explain)).

    pub use crate::access::rule::{AccessRule, Visibility};
    pub use crate::shared::attribute::{AttributeValue, MAX_ATTRIBUTE_KEY, MAX_ATTRIBUTE_VALUE, MAX_ATTRIBUTE_VALUES, MAX_SUBJECT_ATTRIBUTES, MAX_TOOL_ATTRIBUTES, check_attribute_key, check_attribute_text};
    pub use crate::discover::explain::{Explanation, HiddenReason, HiddenTool};
    pub use crate::discover::run::Capability;
    pub use crate::shared::subject::Access;
}

pub mod policy {
    //! Rules kept apart from the program: a [`PolicySet`] (Cedar's, with `registry-cedar`) is
    //! an access rule and a call policy in one, checked against the registry when it is built
    //! ([`RegistryBuilder::policies`](crate::RegistryBuilder::policies)).

    pub use crate::register::policies::PolicySet;
}

pub mod content {
    //! The blocks of content a tool's result may hold: text, images, audio, links and embedded
    //! resources ([`Content`]), with a structured value beside them ([`ToolOutput`]).

    pub use crate::content::{Content, Embedded, EmbeddedResource, Media, Payload, ResourceLink, ToolOutput};
}

pub mod host {
    //! What a running tool reaches through its [`ToolContext`](crate::ToolContext): progress,
    //! logs, questions to the user (elicitation) and sampling, answered by a [`CallHost`].

    pub use crate::host::form::form_schema;
    pub use crate::host::call_host::{CallHost, CallInfo, DEFAULT_ELICIT_TIMEOUT, DEFAULT_SAMPLE_TIMEOUT, ElicitError, ElicitRequest, Elicitation, FormError, LogLevel, Progress, SampleContent, SampleError, SampleMessage, SampleReply, SampleRequest, SampleRole, TOOL_EVENT_TARGET};
}

pub mod deferred {
    //! Deferred loading: a model shown a few tools and a search tool, loading what it finds
    //! ([`Run::deferred`](crate::Run::deferred)).

    pub use crate::deferred::{DeferredOptions, DeferredSession, EmbeddedQuery, GOOD_SIMILARITY, NO_MATCH_COVERAGE, QueryEmbedding, SEARCH_TOOL_NAME, SearchAnswer, SearchCall, SessionCall, WEAK_COVERAGE};
}

pub mod search {
    //! Finding tools of a run's allowed set by what they do ([`Run::search`](crate::Run::search)).

    #[cfg(feature = "openai-embeddings")]
    pub use crate::search::embed::openai::OpenAiEmbedder;
    pub use crate::search::embed::{EmbedError, Embedder, MAX_BATCH, MAX_DIMENSIONS, MAX_TEXT_BYTES};
    pub use crate::discover::search::SearchHit;
}

pub mod change {
    //! Changes to a built registry: revocations, restorations and replacements, each recorded
    //! ([`Registry::changes`](crate::Registry::changes)).

    pub use crate::change::{Change, ChangeKind, OldRuns, ReplaceOptions};
    pub use crate::change::Replacement;
}

pub mod lockfile {
    //! Pinned definitions: the lockfile of what each provider is shown
    //! ([`Registry::lock`](crate::Registry::lock),
    //! [`Registry::assert_lockfile`](crate::Registry::assert_lockfile)), whose digests MCP
    //! clients also find in each tool's `_meta`.

    pub use crate::present::export::DIGEST_META_KEY;
}

/// The crate README's example, compiled and run as a doc test. (The workspace README's are
/// run by the `registry-tests` package: a published crate holds only its own directory.)
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
