//! The limits of the HTTP edge, in one type.

use std::time::Duration;

/// What the HTTP server lets a client take: connections, time, header bytes, sessions,
/// streams and requests. Every limit holds before the next request is served; a client over
/// one is refused at once, and another client is never evicted to make room.
///
/// The defaults suit a server on loopback or behind a reverse proxy with a few dozen agents;
/// raise them for more.
///
/// ```
/// use std::time::Duration;
/// use registry_mcp::{EdgeLimits, HttpConfig, Tokens};
///
/// let limits = EdgeLimits::default()
///     .with_max_sessions(200)
///     .with_max_sessions_per_principal(4)
///     .with_requests_per_second(20)
///     .with_burst(40)
///     .with_session_idle_timeout(Duration::from_secs(120));
/// let config = HttpConfig::new(Tokens::new()).with_limits(limits);
/// assert_eq!(config.limits.max_sessions, 200);
/// assert_eq!(config.limits.max_connections, 1024);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use = "limits do nothing until they are given to `HttpConfig::with_limits`"]
pub struct EdgeLimits {
    /// Open TCP connections at once, whoever opened them. Default 1024. A connection over
    /// the limit is closed as soon as it is accepted, before a byte is read. On Linux it is lowered, with a
    /// warning, to the process's limit of open files less 32.
    pub max_connections: usize,
    /// Open TCP connections from one source: an IP address (an IPv6 /64 counts as one).
    /// Default 256. One over it is closed as soon as it is accepted. Behind a reverse proxy
    /// every connection comes from the proxy's address: raise it to `max_connections`.
    pub max_connections_per_ip: usize,
    /// Open TCP connections on which no request has yet presented a valid token, all sources
    /// together. Default 256. A connection counts until its first request with a valid token
    /// (or from the loopback principal); a new one over the limit is closed as soon as it is
    /// accepted. Clients that hold connections open without authenticating (or with bad
    /// tokens) cannot take the places of those that did.
    pub max_unauthenticated_connections: usize,
    /// Open TCP connections from one source (as for
    /// [`max_connections_per_ip`](Self::max_connections_per_ip)) on which no request has yet
    /// presented a valid token, once half of
    /// [`max_unauthenticated_connections`](Self::max_unauthenticated_connections) are taken.
    /// Default 8, far below that limit, so that one address cannot hold every
    /// unauthenticated place and keep new clients out: it holds at most half of them, and
    /// then no more than its share. A new connection from a source over it is closed as soon
    /// as it is accepted; clients from other sources, and connections that authenticated, are
    /// still served. Below half, a client may open more at once (parallel requests, each on a
    /// new connection that is unauthenticated until its first request is read). Behind a
    /// reverse proxy every connection comes from the proxy's address: raise it to
    /// `max_unauthenticated_connections`.
    pub max_unauthenticated_connections_per_ip: usize,
    /// How long a client may take to send a request's line and headers, from the moment the
    /// server waits for them. Default 10 s. A slower one (slowloris) is disconnected.
    pub header_read_timeout: Duration,
    /// How long a connection may stay open without a request in flight. Default 60 s. An
    /// open response stream (server-sent events) counts as in flight.
    pub idle_timeout: Duration,
    /// How long a client may take to send a POST body. Default 30 s. A slower one gets 408
    /// with JSON-RPC error -32600.
    pub body_read_timeout: Duration,
    /// The most JSON values one request's message may hold: every array, object, string,
    /// number, boolean and null, and every key of an object, counts as one. Default 100,000.
    /// Counted before anything builds the message, since whatever builds it (rmcp's parser,
    /// the arguments' validation) allocates per value: under this bound a message of
    /// [`ServerOptions::max_message_bytes`](crate::ServerOptions::max_message_bytes) costs a
    /// few times its own size, whatever its shape. One over it gets 413 with JSON-RPC error
    /// -32600 naming the limit. Raise it for tools that take large arrays.
    pub max_message_values: usize,
    /// The largest request line and headers, in bytes. Default 16 KiB. Larger ones get 431
    /// and the connection is closed.
    pub max_header_bytes: usize,
    /// Open MCP sessions at once, all principals together. Default 1000 (each costs about
    /// 60 KB). A new session over the limit is refused with 503 and JSON-RPC error -32000.
    pub max_sessions: usize,
    /// Open MCP sessions of one principal (one bearer token) in one tenant. Default 16. A new session
    /// over the limit is refused with 429 and JSON-RPC error -32000; the principal's open
    /// sessions are kept.
    pub max_sessions_per_principal: usize,
    /// How long a session may go without a message before it is closed. Default 5 min.
    pub session_idle_timeout: Duration,
    /// Open streams of one principal in one tenant: GET streams (server-sent events), and POST requests in a
    /// session while their answers are streamed (`subscriptions/listen`, a call in progress).
    /// Default 32. One more gets 429 with JSON-RPC error -32000 (with the request's id); an
    /// answer sent whole gives its place back at once.
    pub max_streams_per_principal: usize,
    /// Requests per second one principal may make, on average. Default 50. `0` turns the
    /// rate limit off.
    pub requests_per_second: u32,
    /// How many requests one principal may make at once after a pause. Default 100. A
    /// request over the rate gets 429 with `Retry-After` (whole seconds) and JSON-RPC error
    /// -32000.
    pub burst: u32,
}

impl Default for EdgeLimits {
    fn default() -> Self {
        EdgeLimits {
            max_connections: 1024,
            max_connections_per_ip: 256,
            max_unauthenticated_connections: 256,
            max_unauthenticated_connections_per_ip: 8,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_read_timeout: Duration::from_secs(30),
            max_header_bytes: 16 * 1024,
            max_message_values: 100_000,
            max_sessions: 1000,
            max_sessions_per_principal: 16,
            session_idle_timeout: Duration::from_secs(300),
            max_streams_per_principal: 32,
            requests_per_second: 50,
            burst: 100,
        }
    }
}

macro_rules! with {
    ($($(#[$doc:meta])* $name:ident: $field:ident: $ty:ty;)*) => {
        impl EdgeLimits {
            $(
                $(#[$doc])*
                pub fn $name(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

with! {
    /// Sets [`max_connections`](Self::max_connections).
    with_max_connections: max_connections: usize;
    /// Sets [`max_connections_per_ip`](Self::max_connections_per_ip).
    with_max_connections_per_ip: max_connections_per_ip: usize;
    /// Sets [`max_unauthenticated_connections`](Self::max_unauthenticated_connections).
    with_max_unauthenticated_connections: max_unauthenticated_connections: usize;
    /// Sets [`max_unauthenticated_connections_per_ip`](Self::max_unauthenticated_connections_per_ip).
    with_max_unauthenticated_connections_per_ip: max_unauthenticated_connections_per_ip: usize;
    /// Sets [`header_read_timeout`](Self::header_read_timeout).
    with_header_read_timeout: header_read_timeout: Duration;
    /// Sets [`idle_timeout`](Self::idle_timeout).
    with_idle_timeout: idle_timeout: Duration;
    /// Sets [`body_read_timeout`](Self::body_read_timeout).
    with_body_read_timeout: body_read_timeout: Duration;
    /// Sets [`max_message_values`](Self::max_message_values).
    with_max_message_values: max_message_values: usize;
    /// Sets [`max_header_bytes`](Self::max_header_bytes).
    with_max_header_bytes: max_header_bytes: usize;
    /// Sets [`max_sessions`](Self::max_sessions).
    with_max_sessions: max_sessions: usize;
    /// Sets [`max_sessions_per_principal`](Self::max_sessions_per_principal).
    with_max_sessions_per_principal: max_sessions_per_principal: usize;
    /// Sets [`session_idle_timeout`](Self::session_idle_timeout).
    with_session_idle_timeout: session_idle_timeout: Duration;
    /// Sets [`max_streams_per_principal`](Self::max_streams_per_principal).
    with_max_streams_per_principal: max_streams_per_principal: usize;
    /// Sets [`requests_per_second`](Self::requests_per_second).
    with_requests_per_second: requests_per_second: u32;
    /// Sets [`burst`](Self::burst).
    with_burst: burst: u32;
}
