//! The integration tests that declare no tool and read no inventory, as modules of one test
//! binary: each was a binary of its own, and the 24 links (and the 17 builds of the MCP
//! example server by `mcp_support`, once per test binary) were a minute of CI's CPU. The
//! tests that declare `#[tool]`s or read `Registry::from_inventory()` stay binaries of their
//! own (`tests/tests/*.rs`): in one binary they would see each other's tools. So do those
//! that install a global `tracing` subscriber (`audit`, `record`, `mcp_trace`), the
//! PostgreSQL replicas and the federation tests.
//! What goes where, and how a file is named: `tests/README.md`.

#[path = "../mcp_support/mod.rs"]
mod mcp_support;

mod agent_example;
mod approval_callers;
mod architecture;
mod concurrency;
mod docs;
mod durable_tasks;
mod examples;
mod gate_async_policies;
mod gate_invariants;
mod gate_result_checks;
mod invariants;
mod limits;
mod mcp_approval;
mod mcp_context;
mod mcp_deferred;
mod mcp_direct;
mod mcp_edge;
mod mcp_http;
mod mcp_logs;
mod mcp_oauth;
mod mcp_readiness;
mod mcp_request_state;
mod mcp_tasks;
mod policy_composition;
mod readiness;
mod search_answers;
mod search_embedder;
mod search_invariants;
mod tasks;
mod words;
mod workspace_lints;
