//! The model–tool loop over one `registry-core` run.
//!
//! An [`Agent`] sends the model exactly the run's tools, reads the model's calls with the
//! run's provider profile, calls each through the run (its allowed set, the arguments'
//! schema, the gate), answers in the model's order, and repeats until the model answers,
//! a call waits for a person ([`AgentEnd::Paused`], resumed with [`Agent::resume`]), or a
//! [`Budget`] is spent. Model APIs: OpenAI Chat Completions, OpenAI Responses and Anthropic
//! Messages, at any `https://` base URL or `http://` one on loopback (so any OpenAI-compatible
//! local server works; plain `http://` elsewhere only with
//! [`ModelConfig::allow_insecure_http`]), redirects never followed; 429 and 5xx are retried
//! with backoff, honouring `Retry-After`. [`Agent::tool_choice`] tells the model whether and
//! which tool to call ([`ToolChoice`]). Spans follow the OpenTelemetry GenAI
//! conventions (`chat {model}`, `execute_tool {name}`); argument values and results are not
//! recorded unless [`Agent::record_content`] opts in.
//!
//! ```no_run
//! use registry_agent::{Agent, AgentEnd, Api, Budget, ModelConfig};
//! use registry_core::{Registry, Subject};
//!
//! # async fn example(registry: Registry) -> Result<(), Box<dyn std::error::Error>> {
//! let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["build:read"]));
//! let agent = Agent::new(
//!     ModelConfig::new(Api::OpenAiChat, "http://127.0.0.1:8080/v1", "local-model")
//!         .api_key_from_env("AGENT_API_KEY"),
//! )?
//! .budget(Budget::default().max_turns(8));
//! match agent.run(&run, "Is the web build green?").await? {
//!     AgentEnd::Answered { answer, .. } => println!("{answer}"),
//!     AgentEnd::Paused { requests, .. } => println!("{} calls wait for a person", requests.len()),
//!     AgentEnd::BudgetSpent { spent, .. } => println!("stopped: {spent} spent"),
//!     _ => {}
//! }
//! # Ok(())
//! # }
//! ```

// Library code reports failures; it does not unwrap them (tests may). Set here, not in
// [workspace.lints]: see the root Cargo.toml.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod agent;
mod api;
mod budget;
mod error;
mod http;
#[cfg(feature = "rig")]
pub mod rig;

pub use agent::{
    Agent, AgentEnd, AgentFailure, AgentLimits, AgentState, CallRecord, DEFER_ABOVE, ModelConfig,
};
#[allow(deprecated)]
pub use agent::{AgentOutcome, Limits};
pub use api::{Api, ToolChoice};
pub use budget::{Budget, Spent};
pub use error::AgentError;
pub use http::Retries;

/// The longest text of a remote error kept in a message.
const MAX_ERROR_TEXT: usize = 500;

/// `text` cut to [`MAX_ERROR_TEXT`] bytes, every control, invisible or reordering character
/// (NUL, line breaks, bidi overrides) escaped by registry-lint's rule, so that a remote
/// error cannot forge a log line or hide what it says.
pub(crate) fn bounded(text: &str) -> String {
    bounded_to(text, MAX_ERROR_TEXT)
}

/// `text` cut to `max` bytes (at a character's boundary, `…` marking the cut), escaped as
/// [`bounded`] escapes it.
pub(crate) fn bounded_to(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = registry_lint::escape(&text[..end]);
    if end < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}
