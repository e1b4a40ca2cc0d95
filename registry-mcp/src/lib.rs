//! Serve a [`registry_core`] tool registry over the Model Context Protocol, so that any MCP
//! client (Claude Desktop, IDE agents, the MCP Inspector, other agent processes) can use the
//! tools an application declared once, each client seeing only what its credentials allow.
//!
//! Built on [`rmcp`], the official Rust MCP SDK: rmcp does the protocol (JSON-RPC, lifecycle,
//! protocol versions up to 2026-07-28, stdio and streamable HTTP); this crate maps it onto the
//! registry's runs. `registry-core` itself stays free of rmcp and of any async runtime.
//!
//! ```no_run
//! use registry_core::{Registry, Subject, access::Access};
//! use registry_mcp::{HttpConfig, McpServer, ServerOptions, Tokens};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let registry = Registry::from_inventory()?;
//!     // One client over stdin/stdout, acting for a subject from configuration:
//!     let subject = Subject::new("acme").with_scopes(["build:read"]).with_access(Access::ReadOnly);
//!     registry_mcp::serve_stdio(registry.clone(), subject).await?;
//!     // Or many over HTTP, each bearer token standing for a subject:
//!     let config = HttpConfig::new(Tokens::load("tokens.json")?);
//!     registry_mcp::serve_http(registry, config).await?;
//!     Ok(())
//! }
//! ```
//!
//! # What a client gets
//!
//! - **One run per client.** Requests are served from a [`Run`](registry_core::Run) opened
//!   for the client's subject: stdio's from configuration, HTTP's from its bearer token
//!   ([`Tokens`]). All requests and sessions presenting one token share its run.
//! - **`tools/list`**: the run's visible tools exported with
//!   [`Profile::Mcp`] (hints as `annotations`, output schemas as
//!   `outputSchema`, and each tool's digest in `_meta` under
//!   [`DIGEST_META_KEY`](registry_core::lockfile::DIGEST_META_KEY): the `mcp` line of
//!   [`Registry::lock`](registry_core::Registry::lock), which a client can pin), in name order, in pages of [`ServerOptions::page_size`] with an opaque
//!   cursor. A cursor names the run it was made in: after the run changed it is refused
//!   (-32602), and the client lists again from the start.
//! - **`tools/call`**: a [`ToolCall`](registry_core::ToolCall) whose call id is the JSON-RPC
//!   request id and whose arguments are the request's (`{}` when absent), resolved and run by
//!   the run. An unknown tool and a hidden one are the same JSON-RPC error -32602; every
//!   other outcome is a `CallToolResult` rendered by the MCP profile, with `isError: true`
//!   for invalid arguments, failures, panics, timeouts, revoked tools and the gate's refusals
//!   (a call policy's denial, a rate limit, a tool not ready), and `structuredContent` when
//!   the tool has an output schema. A tool that returns content (images, audio, resource
//!   links, embedded resources: [`Content`](registry_core::content::Content)) has its blocks sent as
//!   MCP's, each binary one base64-encoded once.
//! - **Approvals.** A call that needs a person's approval is put to the client's user with
//!   elicitation (`elicitation/create`; on protocol 2026-07-28 an `input_required` result)
//!   if the client declared it: a form with one checkbox, `approve`, and the request's
//!   question as message. Ticked and accepted, the call runs with exactly the arguments
//!   shown; declined, cancelled or unanswered, it is denied and the answer is `isError`. A
//!   client without elicitation gets `isError` saying it cannot give the approval the tool
//!   needs and that nothing was done, and the request is denied. See [`RegistryServer`].
//!   On 2026-07-28 the `input_required` result's `requestState` is sealed
//!   ([`RequestStates`]: bound to the principal and the call, expiring, used once).
//! - **Protocol 2026-07-28.** Every result carries `resultType` (the composed application's
//!   too); a parameter declared `#[header("Region")]` is exported as `x-mcp-header` and must
//!   match its `Mcp-Param-Region` header, or the call is -32020; a request's
//!   `_meta.traceparent` is the parent of the call's span and is in its audit event; logs go
//!   only to a request that set a log level in `_meta`.
//! - **Changes.** The registry is polled for revocations and replacements
//!   ([`ServerOptions::poll_interval`], or [`McpServer::check_changes`] at once). When a change
//!   alters what a client may see, a new run is opened for it and
//!   `notifications/tools/list_changed` is sent: unscoped to connections that went through
//!   `initialize`, and on `subscriptions/listen` streams that asked for tool list changes
//!   (protocol 2026-07-28). The new run takes over when the client lists its tools again
//!   (the first page): until then its calls are still resolved by the run whose tools it
//!   was shown, so a revoked tool is answered `isError` with the revocation's text, and a
//!   replaced one is called in the version it was shown or refused, as the replacement's
//!   policy says. A run never calls a version its client was not shown.
//! - **Deferred loading** (opt-in: [`ServerOptions::with_deferred_loading`]): `tools/list`
//!   holds a client's loaded tools and `search_tools`; calling `search_tools` loads what it
//!   finds, from what the client may see only, appends it to the list and sends
//!   `notifications/tools/list_changed` to that client only.
//!
//! - **While a tool runs**, what it does through its
//!   [`ToolContext`](registry_core::ToolContext) reaches the client: progress as
//!   `notifications/progress` (only for a request that carried a progress token), logs as
//!   `notifications/message` (at or above the level the connection set with
//!   `logging/setLevel`, else [`ServerOptions::log_level`]; on 2026-07-28 the request's own
//!   `_meta` level, and none without one), questions as
//!   `elicitation/create` with a form made from a Rust type, and sampling as
//!   `sampling/createMessage` (to clients that declared them, before protocol 2026-07-28).
//!   What the client cannot take goes to the run's host
//!   ([`RegistryBuilder::host`](registry_core::RegistryBuilder::host)): by default `tracing`
//!   for progress and logs, "not supported" for questions and sampling.
//! - **`notifications/cancelled`** cancels a call: an async tool's future is dropped, a
//!   synchronous tool's [`ToolContext::is_cancelled`](registry_core::ToolContext::is_cancelled)
//!   turns true; the call is audited as cancelled and no result is sent.
//!
//! # One server with an application's resources and prompts
//!
//! [`RegistryServer::with_handler`] composes the registry's tools with an application's own
//! rmcp [`ServerHandler`](rmcp::ServerHandler) (resources, prompts, completions) into one
//! [`Composed`] server, served with [`McpServer::serve_io_with`],
//! [`HttpServer::bind_with_handler`] or [`McpServer::http_router_with_handler`] (which keep
//! the edge's own answers to plain tool calls), or any wrapping of the registry's handler with
//! [`HttpServer::bind_with`] or [`McpServer::http_router_with`].
//!
//! # Tokens from an identity provider
//!
//! [`HttpConfig::with_oauth`] makes the HTTP server an OAuth 2.1 resource server ([`OAuth`]):
//! JWT access tokens checked against the issuer's keys ([`Jwks`]), opaque ones introspected
//! ([`Introspection`]), their scopes, tenant and client becoming the subject's, RFC 9728
//! metadata at `/.well-known/oauth-protected-resource`, RFC 6750 challenges, and, opt-in,
//! step-up ([`ServerOptions::with_step_up_scopes`]).
//!
//! # What it does not do
//!
//! No TLS (put a reverse proxy in front for anything beyond loopback), no resources or
//! prompts of its own (compose them), no tasks, no approval of calls other than through the
//! client's elicitation, and no persistence of sessions across restarts. Its limits at the
//! edge ([`EdgeLimits`]: connections in total, per IP and not yet authenticated, header and
//! body read times, header size, sessions and streams per token and in total, a request rate
//! per token) bound what one client can take;
//! they are not a defence against a distributed flood, which belongs to the network in front.

//! # Logs nobody can forge
//!
//! A client chooses much of what a server logs (request ids, tool names), and rmcp logs some
//! of it as sent. [`logging`] is a `tracing_subscriber` formatting layer that escapes line
//! breaks, NUL, control and bidirectional characters in every field of every event, whoever
//! logs it, as text or JSON lines: one event, one line. The example servers use it.

// docs.rs only (it sets `--cfg docsrs`): show beside each feature-gated item the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Library code reports failures; it does not unwrap them (tests may). Set here, not in
// [workspace.lints]: see the root Cargo.toml.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod approval;
mod clients;
mod compose;
mod content;
mod direct;
mod edge;
mod handler;
mod headers;
mod host;
mod http;
pub mod logging;
mod oauth;
mod options;
mod request_state;
mod result_type;
mod stdio;
mod tasks;
mod tokens;
mod trace;
pub mod upstream;

use std::sync::Arc;

use registry_core::{Profile, Registry, Subject, compat::CompatibilityError};

pub use compose::Composed;
pub use edge::EdgeLimits;
pub use handler::RegistryServer;
pub use http::{HttpConfig, HttpServer, serve_http};
pub use oauth::{Algorithm, Introspection, Jwks, OAuth, OAuthError};
pub use options::ServerOptions;
pub use request_state::{
    DEFAULT_REQUEST_STATES_PER_PRINCIPAL, RequestDigest, RequestStateError, RequestStateKey,
    RequestStates,
};
pub use stdio::serve_stdio;
pub use tokens::{MIN_TOKEN_LEN, Principal, TokenError, Tokens};

/// Re-exported: the MCP SDK this crate is built on, at the version it uses.
pub use rmcp;
/// Re-exported: the token that stops an HTTP server ([`HttpConfig::shutdown`]).
pub use tokio_util::sync::CancellationToken;

use clients::Shared;

/// A registry served over MCP: the state every connection of one server shares (the
/// registry, the options, one client per subject, the watch over the registry's changes).
/// Cheap to clone.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("registry", &self.shared.registry)
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

/// Why a server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Some tools cannot be exported to MCP: every problem, with how to fix it.
    #[error("the registry cannot be served over MCP: {0}")]
    Incompatible(#[from] CompatibilityError),
    /// The token file is unusable.
    #[error(transparent)]
    Tokens(#[from] TokenError),
    /// The MCP connection could not be set up (e.g. the client closed it before initializing).
    #[error("the MCP connection failed: {0}")]
    Initialize(String),
    /// The OAuth configuration cannot work, or the issuer's keys cannot be loaded.
    #[error(transparent)]
    OAuth(#[from] OAuthError),
    /// Binding or serving failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl McpServer {
    /// A server for `registry`. Fails if a tool cannot be exported to MCP
    /// ([`Registry::check`] with [`Profile::Mcp`]), so that no client ever meets it.
    pub fn new(registry: Registry, options: ServerOptions) -> Result<McpServer, ServeError> {
        registry.check(Profile::Mcp)?;
        Ok(McpServer {
            shared: Shared::new(registry, options),
        })
    }

    /// The registry served.
    pub fn registry(&self) -> &Registry {
        &self.shared.registry
    }

    /// The options.
    pub fn options(&self) -> &ServerOptions {
        &self.shared.options
    }

    /// The handler of a connection acting for `subject`, for any rmcp transport (stdio uses
    /// it). `id` names the client in logs and run ids; handlers made with the same `id`
    /// share one client, hence one run. Inside a Tokio runtime, this starts the watch over
    /// the registry's changes.
    ///
    /// `subject` is taken as given, its principal
    /// ([`Subject::principal`](registry_core::Subject::principal)) included: a stdio server
    /// serves the one person who started it, so a subject without a principal is fine there
    /// (its approvals, rate limits and bound on pending approvals are then its tenant's and
    /// agent's); a program that serves several people over one transport gives each
    /// handler a subject `with_principal`.
    pub fn handler(&self, id: &str, subject: Subject) -> RegistryServer {
        self.shared.watch();
        let client = self.shared.client(None, id, &subject);
        RegistryServer::fixed(self.shared.clone(), client)
    }

    /// The handler of an HTTP session or request, acting for the [`Principal`] that the HTTP
    /// layer put into each request's extensions (a request without one is refused). The
    /// first request binds the handler to its principal; a later one with another principal
    /// is refused.
    pub fn http_handler(&self) -> RegistryServer {
        self.shared.watch();
        RegistryServer::from_request(self.shared.clone())
    }

    /// Checks the registry for revocations and replacements now, instead of at the next
    /// poll, and announces those that change what a client may see. Call it after
    /// [`Registry::revoke`] or [`Registry::replace`] for an immediate announcement.
    pub async fn check_changes(&self) {
        self.shared.check_changes().await;
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

/// The README's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
