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
//!    async runtime) takes a [`ToolCall`] through four steps, each refusal an [`Observation`]
//!    the model can act on:
//!    - 5.1 **resolve**: the name against the allowed set, revocation and readiness, the
//!      arguments validated against the schema the model was shown;
//!    - 5.2 **gate** ([`gate`]): the call policies, and the rules kept apart from the program
//!      ([`policy`]), [approvals](approval) decided with [`Run::decide`], the budget and the
//!      rate limit;
//!    - 5.3 **execute**: the tool runs (a running tool reaches its [`host`]);
//!    - 5.4 **check**: the result checks ([`gate::ResultCheck`]) pass, redact or withhold what
//!      it returned, and the answer is an [`Observation`].
//!
//!    Every step is [audited](audit). A long-running tool can be started as a [`task`]
//!    instead ([`Run::start_task`]), through the same steps, and followed by id.
//!
//! The numbering is that of `ARCHITECTURE.md` and the guide.
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
// Library code reports failures; it does not unwrap them (tests may). Set here, not in
// [workspace.lints]: see the root Cargo.toml.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

// The modules stand in one order, bottom to top, each importing only those before it:
// pointer, shared (the leaf), content, resolve, host, declare, approval, execute, task,
// change, audit, gate, access, search, project, present, compat, register, discover,
// deferred, server, call, __private; definition, lockfile and policy only gather items
// defined in the others. `ORDER` in `tests/tests/integration/architecture.rs` checks it.
pub mod access;
pub mod approval;
pub mod audit;
pub mod call;
pub mod change;
pub mod compat;
pub mod content;
mod declare;
pub mod deferred;
mod discover;
mod execute;
pub mod gate;
pub mod host;
mod pointer;
mod present;
mod project;
mod register;
mod resolve;
pub mod search;
pub mod server;
mod shared;
pub mod task;
// Public modules that only gather items defined in the others.
pub mod definition;
pub mod lockfile;
pub mod policy;

#[doc(hidden)]
pub mod __private;

pub use declare::definition::ToolDefinition;
pub use declare::error::{BuildProblem, RegistryError};
pub use discover::allowed::AllowedSet;
pub use discover::run::Run;
pub use execute::observation::{ErrorKind, Observation};
pub use execute::tool::Tool;
pub use host::context::ToolContext;
pub use present::reader::ParseError;
pub use register::builder::RegistryBuilder;
pub use register::dynamic::DynamicTool;
pub use register::registry::Registry;
pub use resolve::call::ToolCall;
pub use shared::fingerprint::Fingerprint;
pub use shared::profile::{ParseProfileError, Profile};
pub use shared::subject::Subject;

#[doc = include_str!("declare/tool_macro.md")]
pub use registry_macros::tool;

/// The crate README's example, compiled and run as a doc test. (The workspace README's are
/// run by the `registry-tests` package: a published crate holds only its own directory.)
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
