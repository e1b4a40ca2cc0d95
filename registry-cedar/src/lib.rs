//! Cedar policies for a `registry-core` registry: which tools a subject is shown (the action
//! `list`) and which calls run (`call`), as rules a security team writes in
//! [Cedar](https://www.cedarpolicy.com), reviews apart from the binary, validates against the
//! registry and reloads without a restart.
//!
//! The vocabulary is fixed, so that policies written today keep working:
//!
//! - `Principal`, the run's subject: `tenant` (String), `scopes` (Set<String>), `access`
//!   (`"read_write"` or `"read_only"`), `agent` (String, optional), and each subject attribute
//!   by its key: every key some tool declares (a String), and the keys declared with
//!   [`CedarPolicies::with_subject_attribute`]; all optional, so policies test them with
//!   `has`;
//! - `Tool`, id the tool's name: `scopes` (Set<String>), `read_only`, `destructive`,
//!   `idempotent`, `open_world`, `needs_approval` (Bool), and each attribute the tool declares
//!   (an optional Set<String>);
//! - the actions `Action::"list"` and `Action::"call"`;
//! - for `call`, `context.arguments` (a record of the tools' argument properties, each
//!   optional: integer → Long, string → String, boolean → Bool, array of strings →
//!   Set<String>, object → Record; a property the tools type differently, or that Cedar
//!   cannot type, is left out, and a policy that reads it fails the build), `context.caller`
//!   (`"model"` or `"code"`) and `context.run` (the run id). No namespace.
//!
//! The set is validated when the registry is built, and again before every
//! [`Registry::replace`](registry_core::Registry::replace): a policy that reads an argument,
//! attribute or field the registry does not give it one type for, or that Cedar says can
//! never apply, is a [`BuildProblem::Policy`](registry_core::BuildProblem::Policy).
//!
//! ```
//! use registry_cedar::CedarPolicies;
//! use registry_core::{DynamicTool, ErrorKind, Registry, Subject, ToolCall};
//! use serde_json::json;
//!
//! let policies = CedarPolicies::parse(r#"
//!     @id("finance-reads")
//!     permit(principal, action, resource == Tool::"balance")
//!     when { principal has data_domain && principal.data_domain == "finance" };
//!
//!     @id("large-refunds") @reason("refunds over 100.00 go through the finance desk")
//!     forbid(principal, action == Action::"call", resource == Tool::"balance")
//!     when { context.arguments has cents && context.arguments.cents > 10000 };
//! "#)?;
//! let registry = Registry::builder()
//!     .tool(
//!         DynamicTool::new("balance", "Read a balance, or refund part of it.")
//!             .scopes(["ledger:read"])
//!             .attribute("data_domain", ["finance", "ops"])
//!             .parameters(json!({"type": "object", "properties": {"cents": {"type": "integer"}}}))
//!             .handler(|_, _| Ok::<_, String>(json!("done"))),
//!     )
//!     .policies(policies.clone())
//!     .build()?;
//! let finance = Subject::new("acme").with_scopes(["ledger:read"]).with_attribute("data_domain", "finance");
//! let run = registry.open_run("run-1", &finance);
//! assert!(run.call_blocking(ToolCall::new("1", "balance", json!({"cents": 500}))).error_kind().is_none());
//! let large = run.call_blocking(ToolCall::new("2", "balance", json!({"cents": 50000})));
//! assert_eq!(large.error_kind(), Some(ErrorKind::Denied));
//! assert!(large.error_text().unwrap().contains("finance desk"));
//! // Cedar denies by default: the ops team is not permitted, so it does not even see the tool.
//! let ops = Subject::new("acme").with_scopes(["ledger:read"]).with_attribute("data_domain", "ops");
//! assert!(registry.open_run("run-2", &ops).allowed().is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Library code reports failures; it does not unwrap them (tests may). Set here, not in
// [workspace.lints]: see the root Cargo.toml.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

/// The guide's page on policies (`docs/guide/policies.md`), its examples compiled and run as
/// this crate's doc tests. Only for the doc tests: the page is outside this package, which a
/// build from the published package (`cargo publish`'s verification, docs.rs) does not have.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/policies.md")]
mod guide {}

mod context;
#[cfg(unix)]
mod hangup;
mod policies;
mod schema;
mod specialise;

#[cfg(unix)]
pub use hangup::ReloadOnHangup;
pub use policies::{AttributeType, CedarError, CedarPolicies, LIST_CACHE_SUBJECTS};
pub use schema::schema;
