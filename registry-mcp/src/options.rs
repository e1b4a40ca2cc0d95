//! What a server can be told: page size, change polling, limits, its name.

use std::time::Duration;

use registry_core::{deferred::DeferredOptions, host::LogLevel};

/// Settings shared by every transport.
///
/// ```
/// use std::time::Duration;
/// use registry_mcp::ServerOptions;
///
/// let options = ServerOptions::default()
///     .with_page_size(20)
///     .with_call_timeout(Duration::from_secs(30))
///     .with_server_info("my-tools", "1.2.0");
/// assert_eq!(options.page_size, 20);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use = "options do nothing until they are given to `McpServer::new` or `HttpConfig::with_options`"]
pub struct ServerOptions {
    /// How many tools one `tools/list` page holds at most (at least 1). Default 100.
    pub page_size: usize,
    /// How often the registry is checked for revocations and replacements, to announce them
    /// with `notifications/tools/list_changed`. Default 200 ms.
    /// [`McpServer::check_changes`](crate::McpServer::check_changes) checks at once.
    pub poll_interval: Duration,
    /// How often the registry's readiness checks run again
    /// ([`Registry::check_readiness`](registry_core::Registry::check_readiness)): a tool that
    /// stops being ready disappears from the clients' lists (announced like a revocation), and
    /// comes back when it is ready again. `None` runs them only when the application does.
    /// Default 30 s.
    pub readiness_interval: Option<Duration>,
    /// A deadline for every call, on top of each tool's own `timeout`; `None` (the default)
    /// leaves only the tools' own. Synchronous tools never run on the server's async workers:
    /// they run on the registry's bounded pool
    /// ([`RegistryBuilder::blocking_threads`](registry_core::RegistryBuilder::blocking_threads)).
    pub call_timeout: Option<Duration>,
    /// How long a person has to answer a question: the approval question of a call that
    /// needs approval (`elicitation/create`, sent to clients that support elicitation), at
    /// most until the approval request itself expires, and a tool's own
    /// ([`ToolContext::elicit`](registry_core::ToolContext::elicit)). Unanswered in time, the
    /// call is denied, and the tool's question fails with
    /// [`ElicitError::TimedOut`](registry_core::host::ElicitError::TimedOut). Default 10 minutes.
    pub approval_timeout: Duration,
    /// How long a tool's sampling request (`sampling/createMessage`,
    /// [`ToolContext::sample`](registry_core::ToolContext::sample)) waits for the client's
    /// reply. Past it the request is withdrawn (`notifications/cancelled`) and the tool gets
    /// [`SampleError::TimedOut`](registry_core::host::SampleError::TimedOut): a client that never
    /// answers does not hold the call. Default 2 minutes.
    pub sampling_timeout: Duration,
    /// The least level of the tools' log messages
    /// ([`ToolContext::log`](registry_core::ToolContext::log)) sent to a client that did not
    /// choose one with `logging/setLevel` (protocol versions before 2026-07-28); those below go
    /// to the run's host (by default, `tracing`). On 2026-07-28 a request chooses its own
    /// level in `_meta` (`io.modelcontextprotocol/logLevel`), and one that does not gets no
    /// logs (SEP-2575). Default [`LogLevel::Info`].
    pub log_level: LogLevel,
    /// How long a client may keep a `tools/list` page before asking again (`ttlMs`, protocol
    /// 2026-07-28; lists are always `cacheScope: "private"`). A tool revoked meanwhile may
    /// still be listed in a client's cache, but a call to it is refused. Default 0: ask again
    /// every time.
    pub list_ttl: Duration,
    /// The largest message accepted, in bytes: a longer stdio line is dropped, a larger HTTP
    /// body answered 413. Default 8 MiB (the registry's argument limit is 4 MiB).
    pub max_message_bytes: usize,
    /// The name this server gives in `initialize` and `server/discover`.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Instructions for the client, if any.
    pub instructions: Option<String>,
    /// Deferred loading with tool search, if on: each client's `tools/list` holds its loaded
    /// tools and `search_tools`, and calling `search_tools` loads what it finds. `None` (the
    /// default): every visible tool is listed. See
    /// [`with_deferred_loading`](Self::with_deferred_loading).
    pub deferred_loading: Option<DeferredOptions>,
    /// Step-up authorization over HTTP: a `tools/call` of a tool the caller would see with
    /// more scopes is answered HTTP 403 `insufficient_scope`, naming every scope the tool
    /// needs. Default `false`. See [`with_step_up_scopes`](Self::with_step_up_scopes).
    pub step_up_scopes: bool,
    /// How long the `requestState` of an `input_required` result (an approval question on
    /// protocol 2026-07-28) stays valid: a retry after it is refused, and the client calls
    /// again. Default 10 minutes.
    pub request_state_ttl: Duration,
    /// How many used `requestState`s are remembered (each until it expires), so that none is
    /// used twice; when that many live ones are remembered, further retries are refused
    /// until some expire. Default 10 000.
    pub request_state_capacity: usize,
    /// How many of the used `requestState`s remembered may be one principal's: one whose
    /// share is full of live ones has its retries refused (-32602, saying to try again when
    /// some expire) while other principals' retries still succeed. Default 250
    /// ([`DEFAULT_REQUEST_STATES_PER_PRINCIPAL`](crate::DEFAULT_REQUEST_STATES_PER_PRINCIPAL)),
    /// at most [`request_state_capacity`](Self::request_state_capacity).
    pub request_state_capacity_per_principal: usize,
    /// The key that seals `requestState`s; `None` (the default): a random key per process,
    /// so a retry must reach the process that asked. Replicas behind one address share one
    /// (see [`RequestStates`](crate::RequestStates)).
    pub request_state_key: Option<crate::RequestStateKey>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            page_size: 100,
            poll_interval: Duration::from_millis(200),
            readiness_interval: Some(Duration::from_secs(30)),
            call_timeout: None,
            approval_timeout: Duration::from_secs(10 * 60),
            sampling_timeout: registry_core::host::DEFAULT_SAMPLE_TIMEOUT,
            log_level: LogLevel::Info,
            list_ttl: Duration::ZERO,
            max_message_bytes: 8 * 1024 * 1024,
            name: env!("CARGO_PKG_NAME").to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            deferred_loading: None,
            step_up_scopes: false,
            request_state_ttl: Duration::from_secs(10 * 60),
            request_state_capacity: 10_000,
            request_state_capacity_per_principal: crate::DEFAULT_REQUEST_STATES_PER_PRINCIPAL,
            request_state_key: None,
        }
    }
}

impl ServerOptions {
    /// Sets the page size of `tools/list` (at least 1).
    pub fn with_page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// Sets how often the registry is checked for changes.
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Sets how often the readiness checks run again; `None`: never by the server.
    pub fn with_readiness_interval(mut self, interval: Option<Duration>) -> Self {
        self.readiness_interval = interval.map(|interval| interval.max(Duration::from_millis(1)));
        self
    }

    /// Sets a deadline for every call.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// Sets how long a person has to answer an approval question.
    pub fn with_approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = timeout;
        self
    }

    /// Sets how long a `requestState` stays valid, and how many used ones are remembered.
    pub fn with_request_states(mut self, ttl: Duration, capacity: usize) -> Self {
        self.request_state_ttl = ttl;
        self.request_state_capacity = capacity.max(1);
        self
    }

    /// Sets how many of the used `requestState`s remembered may be one principal's (at
    /// least 1; see [`request_state_capacity_per_principal`](Self::request_state_capacity_per_principal)).
    ///
    /// ```
    /// use registry_mcp::ServerOptions;
    ///
    /// let options = ServerOptions::default().with_request_state_capacity_per_principal(20);
    /// assert_eq!(options.request_state_capacity_per_principal, 20);
    /// ```
    pub fn with_request_state_capacity_per_principal(mut self, share: usize) -> Self {
        self.request_state_capacity_per_principal = share.max(1);
        self
    }

    /// Sets the key that seals `requestState`s, shared by replicas.
    pub fn with_request_state_key(mut self, key: crate::RequestStateKey) -> Self {
        self.request_state_key = Some(key);
        self
    }

    /// Sets how long a tool's sampling request waits for the client's reply.
    pub fn with_sampling_timeout(mut self, timeout: Duration) -> Self {
        self.sampling_timeout = timeout;
        self
    }

    /// Sets the least level of tool log messages sent to clients that did not choose one.
    pub fn with_log_level(mut self, level: LogLevel) -> Self {
        self.log_level = level;
        self
    }

    /// Sets how long a client may keep a `tools/list` page (`ttlMs`).
    pub fn with_list_ttl(mut self, ttl: Duration) -> Self {
        self.list_ttl = ttl;
        self
    }

    /// Sets the largest message accepted, in bytes.
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes.max(1024);
        self
    }

    /// Sets the name and version the server gives.
    pub fn with_server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// Sets instructions for the client.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Turns on deferred loading with tool search, which MCP has no standard for yet (hence
    /// off by default): a client is shown a few tools and a search tool, and loads the others
    /// it needs by searching, from what it may see only.
    ///
    /// - **`tools/list`** serves the client's
    ///   [`DeferredSession`](registry_core::deferred::DeferredSession) (one per client, next to its
    ///   run): the loaded tools (those declared `always_loaded` and those `options` names, in
    ///   name order), then the search tool (`search_tools` unless
    ///   [`DeferredOptions::search_tool_name`] says otherwise), then the tools searches
    ///   loaded, in the order they were. Paging and cursors are as without it.
    /// - **`tools/call` of the search tool** (`{"query": "..."}`) searches the client's
    ///   allowed set and answers with the tools found, names and descriptions; those not
    ///   loaded yet are appended to the list, and `notifications/tools/list_changed` goes to
    ///   this client's connections only (unscoped to those that went through `initialize`,
    ///   and on `subscriptions/listen` streams that asked for tool list changes). Loading
    ///   only appends: the tools listed before keep their place and their bytes.
    /// - **Every other call** is resolved by the run as without it: a call to a tool the
    ///   client may use but has not loaded yet is served like any other. A hidden tool is
    ///   never found, listed, nor named.
    /// - **Changes.** When a revocation or replacement opens a new run for the client, the
    ///   tools it had loaded stay loaded (those it may still see), now in name order after
    ///   the `always_loaded` ones: the client was told the list changed anyway.
    ///
    /// No tool of the registry may have the search tool's name: `tools/list` fails for a
    /// client that may see one (name the search tool otherwise).
    ///
    /// ```
    /// use registry_core::deferred::DeferredOptions;
    /// use registry_mcp::ServerOptions;
    ///
    /// let options = ServerOptions::default().with_deferred_loading(
    ///     DeferredOptions::new().load(["get_status"]).results(3),
    /// );
    /// assert!(options.deferred_loading.is_some());
    /// ```
    pub fn with_deferred_loading(mut self, options: DeferredOptions) -> Self {
        self.deferred_loading = Some(options);
        self
    }

    /// Turns step-up authorization on (HTTP only), as the MCP authorization spec describes
    /// it: a `tools/call` of a tool that the caller cannot see only because its token lacks
    /// scopes (same tenant, not revoked, ready, not hidden by read-only access, admitted by the
    /// access policy with those scopes: [`RunExt::needs_only_scopes`](registry_core::server::RunExt::needs_only_scopes)) is answered
    /// HTTP 403 with `WWW-Authenticate: Bearer error="insufficient_scope", scope="..."`
    /// listing every scope the tool needs, so that the client can ask the person for consent
    /// and retry with a new token. A new token of the same principal carries the session on,
    /// and its run sees what the new scopes allow.
    ///
    /// **Off by default, because it tells the caller that the tool exists**: off, a hidden
    /// tool is indistinguishable from an unknown one (JSON-RPC error -32602 with the same
    /// text). Turn it on where tool names are no secret from the people who may hold tokens,
    /// and what matters is that they can get the access they lack.
    ///
    /// ```
    /// use registry_mcp::ServerOptions;
    ///
    /// assert!(!ServerOptions::default().step_up_scopes);
    /// assert!(ServerOptions::default().with_step_up_scopes(true).step_up_scopes);
    /// ```
    pub fn with_step_up_scopes(mut self, on: bool) -> Self {
        self.step_up_scopes = on;
        self
    }
}
