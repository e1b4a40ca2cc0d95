//! The streamable HTTP transport: many clients, each authenticated by a bearer token.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use http_body_util::BodyExt;
use registry_core::Registry;
use rmcp::ServerHandler;
use rmcp::model::RequestId;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::direct::{Direct, PlainCall};
use crate::edge::{
    self, CalledTool, EdgeLimits, HostLayer, Hosts, Inner, Opening, Origins, Peek, Rates, Refusals,
    RpcId, Sessions, rpc_error,
};
use crate::oauth::{OAuth, Refusal, StepUp, Validator, metadata_router, step_up};
use crate::tokens::{Principal, Tokens, token_digest};
use crate::{McpServer, RegistryServer, ServeError, ServerOptions};

/// Where and how to serve over HTTP.
///
/// ```
/// use registry_mcp::{HttpConfig, Tokens};
///
/// let config = HttpConfig::new(Tokens::new());
/// assert_eq!(config.addr.to_string(), "127.0.0.1:8750");
/// assert_eq!(config.path, "/mcp");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use = "a configuration does nothing until it is given to `serve_http` or `HttpServer::bind`"]
pub struct HttpConfig {
    /// The address to listen on. Default `127.0.0.1:8750`: loopback only. Port 0 picks a free
    /// port ([`HttpServer::local_addr`] tells which).
    pub addr: SocketAddr,
    /// The path of the MCP endpoint. Default `/mcp`.
    pub path: String,
    /// The accepted bearer tokens, and who each stands for.
    pub tokens: Tokens,
    /// What every transport shares.
    pub options: ServerOptions,
    /// The `Host` header values accepted (against DNS rebinding): host names (any port), or
    /// `host:port`. Default: `localhost`, `127.0.0.1` and `::1`. A server reached under
    /// another name must list it; an empty list accepts any. Checked first, on every request
    /// and every route of the router (the MCP endpoint, the OAuth metadata, an unknown path),
    /// before the token: another `Host` gets 403, a missing or malformed one 400, as rmcp
    /// answers them.
    pub allowed_hosts: Vec<String>,
    /// The `Origin` header values accepted (against web pages on other sites reaching the
    /// server through a user's browser): `scheme://host:port`, `:*` for any port, the
    /// scheme's port when none is given. A request with another `Origin` gets 403; one
    /// without an `Origin` header (not from a browser) goes on. Default: pages on loopback,
    /// `http://localhost:*`, `http://127.0.0.1:*`, `http://[::1]:*` and their `https`
    /// twins. An empty list accepts any origin.
    pub allowed_origins: Vec<String>,
    /// What a client may take: connections, time, header bytes, sessions, streams and
    /// requests. Default [`EdgeLimits::default`].
    pub limits: EdgeLimits,
    /// Cancelled to stop the server: it stops accepting requests and ends every session.
    pub shutdown: CancellationToken,
    /// Who a request without an `Authorization` header acts as, when it comes from a
    /// loopback address: for local development and test suites that send no token. `None`
    /// (the default): every request needs a token. See
    /// [`with_loopback_principal`](Self::with_loopback_principal).
    pub loopback_principal: Option<Principal>,
    /// Whether every request needs a token, from loopback too: `true` turns
    /// [`loopback_principal`](Self::loopback_principal) off, whatever sets it. Default
    /// `false`. A server behind a TCP forwarder on the same host must set it: see
    /// [`require_token_on_loopback`](Self::require_token_on_loopback).
    pub require_token_on_loopback: bool,
    /// Access tokens from an identity provider, checked as an OAuth 2.1 resource server does
    /// (see [`OAuth`]), besides the static [`tokens`](Self::tokens). `None` (the default):
    /// only the static tokens.
    pub oauth: Option<OAuth>,
}

impl HttpConfig {
    /// Loopback, `/mcp`, default options, accepting `tokens`.
    pub fn new(tokens: Tokens) -> Self {
        HttpConfig {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 8750)),
            path: "/mcp".to_owned(),
            tokens,
            options: ServerOptions::default(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: edge::loopback_origins(),
            limits: EdgeLimits::default(),
            shutdown: CancellationToken::new(),
            loopback_principal: None,
            require_token_on_loopback: false,
            oauth: None,
        }
    }

    /// Sets the address to listen on.
    pub fn with_addr(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// Sets the path of the MCP endpoint.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Sets the options every transport shares.
    pub fn with_options(mut self, options: ServerOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets the accepted `Host` header values.
    pub fn with_allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the accepted `Origin` header values (see [`allowed_origins`](Self::allowed_origins)).
    ///
    /// ```
    /// use registry_mcp::{HttpConfig, Tokens};
    ///
    /// let config = HttpConfig::new(Tokens::new())
    ///     .with_allowed_origins(["https://app.example.com", "http://localhost:*"]);
    /// assert_eq!(config.allowed_origins.len(), 2);
    /// ```
    pub fn with_allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the limits at the edge (see [`EdgeLimits`]).
    pub fn with_limits(mut self, limits: EdgeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the token whose cancellation stops the server.
    pub fn with_shutdown(mut self, shutdown: CancellationToken) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Lets requests without an `Authorization` header act as `principal`, but only from a
    /// loopback peer (`127.0.0.0/8`, `::1`): for local development, and for clients such as
    /// the MCP conformance suite that send no token.
    ///
    /// A raw TCP forwarder on the same host (`socat`, `ssh -L`, `kubectl port-forward`) is not
    /// detectable: a request through one comes from loopback and acts as `principal`. A
    /// server behind one must set [`require_token_on_loopback`](Self::require_token_on_loopback),
    /// which turns this off.
    ///
    /// It fails closed: [`HttpServer::bind`] refuses it on an address that is not loopback;
    /// a peer that is not loopback, or whose address is unknown (a router served without
    /// `ConnectInfo<SocketAddr>`), still needs a token; so does a request carrying
    /// `Forwarded`, `X-Forwarded-For` or `X-Real-IP`, which a reverse proxy or tunnel on the
    /// same host passed on for someone else; and a request that does carry an
    /// `Authorization` header is judged by its token alone, never downgraded to `principal`.
    ///
    /// ```
    /// use registry_core::Subject;
    /// use registry_mcp::{HttpConfig, Principal, Tokens};
    ///
    /// let config = HttpConfig::new(Tokens::new())
    ///     .with_loopback_principal(Principal::new("local", Subject::new("dev")));
    /// assert_eq!(config.loopback_principal.unwrap().id(), "local");
    /// ```
    pub fn with_loopback_principal(mut self, principal: Principal) -> Self {
        self.loopback_principal = Some(principal);
        self
    }

    /// Requires a token from every request, from a loopback peer too: the
    /// [`loopback_principal`](Self::loopback_principal), if any, is never given.
    ///
    /// **A server behind a TCP forwarder on the same host must set it.** A forwarder that
    /// copies bytes (`socat`, `ssh -L`/`-R`, `kubectl port-forward`, a TCP load balancer's
    /// agent, a container runtime's port proxy) connects from loopback on behalf of whoever
    /// reached it, and adds no header that says so (unlike an HTTP reverse proxy's
    /// `Forwarded` or `X-Forwarded-For`, which refuse the loopback principal already): without
    /// this, a request without a token through it acts as the loopback principal. Set it in
    /// every deployment whose listening address is reachable through something else than
    /// local clients, even if nothing sets a loopback principal today.
    ///
    /// ```
    /// use registry_core::Subject;
    /// use registry_mcp::{HttpConfig, Principal, Tokens};
    ///
    /// let config = HttpConfig::new(Tokens::new())
    ///     .with_loopback_principal(Principal::new("local", Subject::new("dev")))
    ///     .require_token_on_loopback();
    /// assert!(config.require_token_on_loopback);
    /// ```
    pub fn require_token_on_loopback(mut self) -> Self {
        self.require_token_on_loopback = true;
        self
    }

    /// Accepts access tokens from an identity provider as `oauth` says, and serves RFC 9728
    /// protected-resource metadata. Static tokens, if any, are still accepted.
    pub fn with_oauth(mut self, oauth: OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }
}

/// Serves `registry` over streamable HTTP as `config` says, until `config.shutdown` is
/// cancelled.
///
/// Every request must carry `Authorization: Bearer <token>` with a token of
/// `config.tokens`; any other gets 401 with an empty body, before anything else is looked at.
/// Each token stands for a subject, and all requests and sessions of one token are served
/// from one run opened for it (a new one after the registry changed, when the client lists
/// its tools again). A body that is not JSON gets 400 with JSON-RPC error -32700, JSON that
/// is not a JSON-RPC message 400 with -32600 (so do a batch and an `id` that is not a string,
/// a number or null), a body larger than [`ServerOptions::max_message_bytes`] or with more
/// values than [`EdgeLimits::max_message_values`] 413; the server keeps serving. What one client may
/// take (connections, time, sessions, streams, requests) is bounded by
/// [`HttpConfig::limits`], and a session answers only the token that opened it.
///
/// ```no_run
/// use registry_core::Registry;
/// use registry_mcp::{HttpConfig, Tokens};
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let registry = Registry::from_inventory()?;
///     let tokens = Tokens::load("tokens.json")?;
///     registry_mcp::serve_http(registry, HttpConfig::new(tokens)).await?;
///     Ok(())
/// }
/// ```
pub async fn serve_http(registry: Registry, config: HttpConfig) -> Result<(), ServeError> {
    let server = HttpServer::bind(registry, config).await?;
    tracing::info!(url = %server.url(), "serving MCP over HTTP");
    server.serve().await
}

/// An HTTP server bound to its address, not yet serving: [`HttpServer::local_addr`] says
/// where it listens (useful with port 0), [`HttpServer::serve`] serves.
#[derive(Debug)]
pub struct HttpServer {
    listener: TcpListener,
    router: axum::Router,
    addr: SocketAddr,
    path: String,
    shutdown: CancellationToken,
    limits: EdgeLimits,
}

impl HttpServer {
    /// Checks that the registry can be served over MCP, and binds `config.addr`.
    pub async fn bind(registry: Registry, config: HttpConfig) -> Result<HttpServer, ServeError> {
        HttpServer::bind_serving(registry, config, |tools| tools, true).await
    }

    /// [`bind`](Self::bind), serving to each session the handler `wrap` makes of the
    /// registry's (see [`McpServer::http_router_with`]). Since that handler may be anything,
    /// every request goes to it: the edge answers no plain call itself. For the registry's
    /// tools with an application's resources and prompts ([`RegistryServer::with_handler`]),
    /// [`bind_with_handler`](Self::bind_with_handler) keeps those answers.
    ///
    /// ```no_run
    /// # use registry_core::Registry;
    /// # use registry_mcp::{HttpConfig, HttpServer, Tokens};
    /// # async fn serve(registry: Registry, app: impl registry_mcp::rmcp::ServerHandler + Clone) -> Result<(), registry_mcp::ServeError> {
    /// let config = HttpConfig::new(Tokens::load("tokens.json")?);
    /// let server = HttpServer::bind_with(registry, config, move |tools| tools.with_handler(app.clone())).await?;
    /// server.serve().await
    /// # }
    /// ```
    pub async fn bind_with<S, F>(
        registry: Registry,
        config: HttpConfig,
        wrap: F,
    ) -> Result<HttpServer, ServeError>
    where
        S: ServerHandler,
        F: Fn(RegistryServer) -> S + Send + Sync + 'static,
    {
        HttpServer::bind_serving(registry, config, wrap, false).await
    }

    /// [`bind`](Self::bind), serving the registry's tools and `app`'s own resources, prompts
    /// and completions as one server ([`RegistryServer::with_handler`], [`Composed`]).
    ///
    /// Unlike [`bind_with`](Self::bind_with), whose handler may be anything and so gets
    /// every request, this keeps the edge's own answers to plain `tools/call` requests
    /// (`direct.rs`): a composed server answers `tools/call` as the registry's handler alone
    /// does, so the edge's answer is the one it would give.
    ///
    /// ```no_run
    /// # use registry_core::Registry;
    /// # use registry_mcp::{HttpConfig, HttpServer, Tokens};
    /// # async fn serve(registry: Registry, app: impl registry_mcp::rmcp::ServerHandler + Clone) -> Result<(), registry_mcp::ServeError> {
    /// let config = HttpConfig::new(Tokens::load("tokens.json")?);
    /// let server = HttpServer::bind_with_handler(registry, config, app).await?;
    /// server.serve().await
    /// # }
    /// ```
    ///
    /// [`Composed`]: crate::Composed
    pub async fn bind_with_handler<H>(
        registry: Registry,
        config: HttpConfig,
        app: H,
    ) -> Result<HttpServer, ServeError>
    where
        H: ServerHandler + Clone,
    {
        let compose = move |tools: RegistryServer| tools.with_handler(app.clone());
        HttpServer::bind_serving(registry, config, compose, true).await
    }

    /// [`bind_with`](Self::bind_with); `direct`: whether the edge may answer plain calls
    /// itself (`direct.rs`), only when `wrap` serves the registry's handler as it is.
    async fn bind_serving<S, F>(
        registry: Registry,
        config: HttpConfig,
        wrap: F,
        direct: bool,
    ) -> Result<HttpServer, ServeError>
    where
        S: ServerHandler,
        F: Fn(RegistryServer) -> S + Send + Sync + 'static,
    {
        if config.loopback_principal.is_some()
            && !config.require_token_on_loopback
            && !config.addr.ip().is_loopback()
        {
            return Err(ServeError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "requests without a token are served only on loopback, and {} is not a \
                     loopback address: bind 127.0.0.1 or ::1, or drop `with_loopback_principal`",
                    config.addr.ip()
                ),
            )));
        }
        let server = McpServer::new(registry, config.options.clone())?;
        let validator = match &config.oauth {
            Some(oauth) => Some(Arc::new(
                Validator::new(oauth.clone(), server.registry(), &config.path).await?,
            )),
            None => None,
        };
        let listener = TcpListener::bind(config.addr).await?;
        let addr = listener.local_addr()?;
        let router = server.router(&config, validator.map(Ok), wrap, direct);
        Ok(HttpServer {
            listener,
            router,
            addr,
            path: config.path,
            shutdown: config.shutdown,
            limits: config.limits,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of its MCP endpoint, e.g. `http://127.0.0.1:8750/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.path)
    }

    /// Serves until the shutdown token is cancelled, within [`HttpConfig::limits`]: at
    /// most `max_connections` connections, each closed when it takes longer than
    /// `header_read_timeout` to send a request's headers or stays idle `idle_timeout`.
    pub async fn serve(self) -> Result<(), ServeError> {
        edge::serve(self.listener, self.router, self.limits, self.shutdown).await;
        Ok(())
    }
}

impl McpServer {
    /// An axum router serving MCP at `config.path`, with the bearer-token check and the
    /// protocol-error layer of [`serve_http`], to serve with `axum::serve` or to nest in an
    /// application's own router. `config.addr` is not used. Call it inside a Tokio runtime.
    ///
    /// The router applies the limits of [`HttpConfig::limits`] on sessions, streams, request
    /// rate and body read time, and checks `Origin`; the limits on connections (count,
    /// header read time, header size, idle time) belong to the server that accepts them:
    /// [`HttpServer`] applies them, `axum::serve` does not.
    ///
    /// Serving it yourself, set `TCP_NODELAY` on accepted connections, as [`HttpServer`]
    /// does: without it the end of each streamed answer waits for the client's delayed ACK,
    /// 40 ms on Linux, and a client that reads answers whole is limited to 25 calls per
    /// second per connection.
    pub fn http_router(&self, config: &HttpConfig) -> axum::Router {
        self.router(config, self.lazy_validator(config), |tools| tools, true)
    }

    /// [`http_router`](Self::http_router), serving to each session the handler `wrap` makes
    /// of the registry's: say, [`RegistryServer::with_handler`], to serve an application's
    /// resources and prompts beside the tools (see [`Composed`](crate::Composed)). The bearer
    /// tokens, sessions and runs are the registry's, whatever `wrap` does; every request goes
    /// to `wrap`'s handler ([`http_router_with_handler`](Self::http_router_with_handler) keeps
    /// the edge's answers to plain calls for a composed server).
    ///
    /// ```no_run
    /// # use registry_mcp::{HttpConfig, McpServer, Tokens};
    /// # fn router(server: McpServer, app: impl registry_mcp::rmcp::ServerHandler + Clone) -> axum::Router {
    /// let config = HttpConfig::new(Tokens::load("tokens.json").unwrap());
    /// server.http_router_with(&config, move |tools| tools.with_handler(app.clone()))
    /// # }
    /// ```
    ///
    /// With [`HttpConfig::oauth`], the issuer's keys are fetched at the first token rather than
    /// at once (as [`HttpServer::bind`] does), and a configuration that cannot work refuses
    /// every request with 503 and logs why; [`HttpServer::bind`] reports both as errors.
    pub fn http_router_with<S, F>(&self, config: &HttpConfig, wrap: F) -> axum::Router
    where
        S: ServerHandler,
        F: Fn(RegistryServer) -> S + Send + Sync + 'static,
    {
        self.router(config, self.lazy_validator(config), wrap, false)
    }

    /// [`http_router`](Self::http_router), serving the registry's tools and `app`'s own
    /// resources, prompts and completions as one server ([`RegistryServer::with_handler`],
    /// [`Composed`](crate::Composed)), with the edge's own answers to plain `tools/call`
    /// requests, which [`http_router_with`](Self::http_router_with) gives up: see
    /// [`HttpServer::bind_with_handler`].
    ///
    /// ```no_run
    /// # use registry_mcp::{HttpConfig, McpServer, Tokens};
    /// # fn router(server: McpServer, app: impl registry_mcp::rmcp::ServerHandler + Clone) -> axum::Router {
    /// let config = HttpConfig::new(Tokens::load("tokens.json").unwrap());
    /// server.http_router_with_handler(&config, app)
    /// # }
    /// ```
    pub fn http_router_with_handler<H>(&self, config: &HttpConfig, app: H) -> axum::Router
    where
        H: ServerHandler + Clone,
    {
        let compose = move |tools: RegistryServer| tools.with_handler(app.clone());
        self.router(config, self.lazy_validator(config), compose, true)
    }

    /// The validator of `config.oauth`, fetching the issuer's keys at the first token.
    fn lazy_validator(&self, config: &HttpConfig) -> Option<Result<Arc<Validator>, String>> {
        config.oauth.as_ref().map(|oauth| {
            Validator::lazy(oauth.clone(), self.registry(), &config.path)
                .map(Arc::new)
                .map_err(|error| {
                    tracing::error!(%error, "OAuth cannot work: every request is refused");
                    error.to_string()
                })
        })
    }

    /// The router; `direct`: whether plain calls are answered by the edge (`direct.rs`).
    fn router<S, F>(
        &self,
        config: &HttpConfig,
        validator: Option<Result<Arc<Validator>, String>>,
        wrap: F,
        direct: bool,
    ) -> axum::Router
    where
        S: ServerHandler,
        F: Fn(RegistryServer) -> S + Send + Sync + 'static,
    {
        self.shared().watch();
        let server = self.clone();
        // The `Host` allowlist is the edge's, in front of every route (`edge/host.rs`): the
        // same check, once, so rmcp is given none.
        let rmcp_config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_max_request_body_bytes(config.options.max_message_bytes)
            .with_cancellation_token(config.shutdown.child_token());
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(config.limits.session_idle_timeout);
        let manager = Arc::new(manager);
        let sessions = Arc::new(Sessions::new(manager.clone(), &config.limits));
        let direct = direct.then(|| Direct {
            shared: self.shared().clone(),
            sessions: sessions.clone(),
            manager: manager.clone(),
        });
        let service = StreamableHttpService::new(
            move || Ok(wrap(server.http_handler())),
            manager,
            rmcp_config,
        );
        let limits = Limits {
            max_body: config.options.max_message_bytes,
            max_values: config.limits.max_message_values,
            body_read_timeout: config.limits.body_read_timeout,
        };
        let metadata = match &validator {
            Some(Ok(validator)) => Some(validator.metadata.clone()),
            _ => None,
        };
        let step_up = config.options.step_up_scopes.then(|| StepUp {
            server: self.clone(),
            metadata: metadata.as_ref().map(|metadata| metadata.url.clone()),
        });
        let rates = Arc::new(Rates::new(
            config.limits.requests_per_second,
            config.limits.burst,
        ));
        let origins = Arc::new(Origins::new(&config.allowed_origins));
        // One chain, outermost first (behind the router's `Host` check, below): a request
        // meets the Origin check, authentication and the rate limit (one step), then the
        // body checks, the session checks and step-up, then rmcp's service. One future for
        // all of it (see `edge/chain.rs`).
        let stack = EdgeService(Arc::new(Edge {
            credentials: Credentials {
                origins,
                tokens: config.tokens.clone(),
                loopback: config
                    .loopback_principal
                    .clone()
                    .filter(|_| !config.require_token_on_loopback),
                validator,
                refusals: Refusals::new("requests without a valid bearer token"),
                rates,
            },
            limits,
            sessions,
            step_up,
            direct,
            endpoint: service,
        }));
        let router = axum::Router::new().nest_service(&config.path, stack);
        let router = match metadata {
            // The metadata is public: outside the token check.
            Some(metadata) => router.merge(metadata_router(&metadata)),
            None => router,
        };
        // Before anything else, on every route (and the answer to an unknown path): `Host`.
        let hosts = Arc::new(Hosts::new(&config.allowed_hosts));
        router.layer(HostLayer(hosts))
    }
}

/// The edge and rmcp's streamable HTTP service behind it, shared by every request.
struct Edge<S: ServerHandler> {
    credentials: Credentials,
    limits: Limits,
    sessions: Arc<Sessions>,
    step_up: Option<StepUp>,
    /// The plain calls answered here, unless the handler is wrapped.
    direct: Option<Direct>,
    endpoint: StreamableHttpService<S, LocalSessionManager>,
}

impl<S: ServerHandler + Send + 'static> Edge<S> {
    /// Every step of the edge, in order, then rmcp's service.
    async fn serve(&self, request: Request) -> Response {
        authenticate(&self.credentials, request, |request| {
            protocol_errors(&self.limits, request, |request| {
                edge::guard_sessions(&self.sessions, request, |request| async move {
                    match &self.step_up {
                        Some(check) => {
                            step_up(check, request, |request| self.endpoint(request)).await
                        }
                        None => self.endpoint(request).await,
                    }
                })
            })
        })
        .await
    }

    async fn endpoint(&self, request: Request) -> Response {
        let request = match &self.direct {
            Some(direct) => match direct.answer(request).await {
                Ok(answered) => return answered,
                Err(request) => request,
            },
            None => request,
        };
        self.endpoint.handle(request).await.map(Body::new)
    }
}

/// [`Edge`] as a service: a clone is an `Arc`'s.
struct EdgeService<S: ServerHandler>(Arc<Edge<S>>);

impl<S: ServerHandler> Clone for EdgeService<S> {
    fn clone(&self) -> Self {
        EdgeService(self.0.clone())
    }
}

impl<S: ServerHandler + Send + 'static> tower::Service<Request> for EdgeService<S> {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response, std::convert::Infallible>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let edge = self.0.clone();
        Box::pin(async move { Ok(edge.serve(request).await) })
    }
}

/// What a request may authenticate with, and the checks around it: the `Origin` before, the
/// principal's rate after.
struct Credentials {
    origins: Arc<Origins>,
    rates: Arc<Rates>,
    tokens: Tokens,
    loopback: Option<Principal>,
    /// The refusals, for a bounded log.
    refusals: Refusals,
    /// Access tokens of an identity provider, if configured; `Err` if its configuration
    /// cannot work (every request is refused).
    validator: Option<Result<Arc<Validator>, String>>,
}

impl Credentials {
    /// The principal a request acts for, or why it is refused.
    async fn principal(
        &self,
        headers: &axum::http::HeaderMap,
        query: Option<&str>,
        peer: Option<SocketAddr>,
    ) -> Result<Principal, Refusal> {
        let validator = match &self.validator {
            None => None,
            Some(Ok(validator)) => Some(validator),
            Some(Err(_)) => {
                return Err(Refusal::Unavailable(
                    "the server cannot check tokens (its OAuth configuration is wrong)".into(),
                ));
            }
        };
        // Any refusal without a resource server is a bare 401: nothing else is revealed.
        let refuse = |refusal: Refusal| match validator {
            Some(_) => refusal,
            None => Refusal::Missing,
        };
        if token_in_query(query) {
            return Err(Refusal::InvalidRequest(
                "access tokens are not accepted in the query string: send them in the \
                 `Authorization: Bearer` header"
                    .into(),
            ));
        }
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            // A request a proxy or tunnel on this host passed on comes from loopback too, on
            // behalf of someone else: the headers proxies add say so, and it needs a token.
            let forwarded = FORWARDED_HEADERS
                .iter()
                .any(|name| headers.contains_key(*name));
            if forwarded && self.loopback.is_some() {
                tracing::debug!("refused a forwarded request without a token");
            }
            return self
                .loopback
                .as_ref()
                .filter(|_| !forwarded && peer.is_some_and(|peer| peer.ip().is_loopback()))
                .cloned()
                .ok_or(Refusal::Missing);
        };
        let Some(token) = bearer_token(value) else {
            return Err(refuse(Refusal::InvalidRequest(
                "the Authorization header must be `Bearer <token>`".into(),
            )));
        };
        let digest = token_digest(token);
        if let Some(principal) = self.tokens.resolve_digest(&digest) {
            return Ok(principal.clone());
        }
        match validator {
            Some(validator) => {
                validator
                    .principal(token, digest, peer.map(|peer| peer.ip()))
                    .await
            }
            None => Err(Refusal::Missing),
        }
    }

    /// The URL of the protected-resource metadata, if the server is a resource server.
    fn metadata_url(&self) -> Option<&str> {
        match &self.validator {
            Some(Ok(validator)) => Some(&validator.metadata.url),
            _ => None,
        }
    }
}

/// The headers a proxy adds to a request it passes on: a request carrying one is not served
/// as the loopback principal.
const FORWARDED_HEADERS: [&str; 3] = ["forwarded", "x-forwarded-for", "x-real-ip"];

/// Whether a query string carries an access token (RFC 6750 §2.3), which is refused.
fn token_in_query(query: Option<&str>) -> bool {
    query.is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair.split('=').next() == Some("access_token"))
    })
}

/// Refuses, with 401 and nothing else, every request without a known bearer token (but for
/// one from a loopback peer without any `Authorization` header, when
/// [`HttpConfig::loopback_principal`] is set); puts the [`Principal`] into the request's
/// extensions.
async fn authenticate(
    credentials: &Credentials,
    mut request: Request,
    next: impl Inner,
) -> Response {
    if let Some(refused) = edge::check_origin(&credentials.origins, &request) {
        return refused;
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer);
    let verdict = credentials
        .principal(request.headers(), request.uri().query(), peer)
        .await;
    let principal = match verdict {
        Ok(principal) => principal,
        Err(refusal) => {
            // No path, no header: an attacker chooses them. One warning per interval at most.
            tracing::debug!(
                method = ?request.method(),
                error = refusal.code().unwrap_or("missing_token"),
                "refused a request without a valid bearer token"
            );
            credentials.refusals.refused();
            return refusal.response(credentials.metadata_url());
        }
    };
    if let Some(connection) = request.extensions().get::<Arc<edge::Connection>>() {
        connection.authenticated();
    }
    if let Some(refused) = edge::limit_rate(&credentials.rates, &principal) {
        return refused;
    }
    let started = Instant::now();
    let method = request.method().clone();
    let id = principal.id().to_owned();
    request.extensions_mut().insert::<Principal>(principal);
    let response = next.run(request).await;
    tracing::debug!(
        client = ?id,
        method = ?method,
        status = response.status().as_u16(),
        elapsed_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        "request"
    );
    response
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
fn bearer_token(value: &HeaderValue) -> Option<&str> {
    let value = value.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

struct Limits {
    max_body: usize,
    max_values: usize,
    body_read_timeout: Duration,
}

/// Answers a POST whose body is not JSON with JSON-RPC error -32700, and one whose JSON is not
/// a JSON-RPC message (which rmcp refuses with 415) with -32600, both as HTTP 400; a body over
/// the limit with 413 and -32600.
async fn protocol_errors(limits: &Limits, request: Request, next: impl Inner) -> Response {
    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split(';').next().unwrap_or_default().trim();
            essence.eq_ignore_ascii_case("application/json")
        });
    if request.method() != Method::POST || !is_json {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let collect = http_body_util::Limited::new(body, limits.max_body).collect();
    let Ok(collected) = tokio::time::timeout(limits.body_read_timeout, collect).await else {
        tracing::debug!("a request body that did not arrive in time");
        return rpc_error(
            StatusCode::REQUEST_TIMEOUT,
            None,
            -32600,
            &format!(
                "the request body did not arrive within {} s (EdgeLimits::body_read_timeout)",
                limits.body_read_timeout.as_secs_f64()
            ),
        );
    };
    let bytes: Bytes = match collected {
        Ok(collected) => collected.to_bytes(),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
                -32600,
                &format!("the message is larger than {} bytes", limits.max_body),
            );
        }
        Err(error) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                -32700,
                &format!("the request body could not be read: {error}"),
            );
        }
    };
    let message = match serde_json::from_slice::<Peek<'_>>(&bytes) {
        Ok(message) => message,
        Err(error) => {
            tracing::debug!(%error, "a request body that is not JSON");
            return rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                -32700,
                &format!("parse error: {error}"),
            );
        }
    };
    // What rmcp would parse into a `Value` per element (and its own buffer besides) is refused
    // here, before it does: a body that is not one JSON object (a batch), an id that is not a
    // string, a number or null, more values than the limit.
    if !message.object {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            -32600,
            "invalid request: the body is not a JSON-RPC request, notification or response \
             (one JSON object; batches are not accepted)",
        );
    }
    if let Some(problem) = message.bad_id {
        tracing::debug!("a message with a bad id: {problem}");
        return rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            -32600,
            &format!("invalid request: {problem}"),
        );
    }
    if !edge::within_values(&bytes, limits.max_values) {
        tracing::debug!("a message with more JSON values than the limit");
        return rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            message.id.clone().map(RpcId).as_ref(),
            -32600,
            &format!(
                "the message holds more than {} JSON values (EdgeLimits::max_message_values): \
                 send less data",
                limits.max_values
            ),
        );
    }
    if let Some(id) = message.id.clone() {
        let id = RpcId(id);
        if let Some(problem) = message.malformed_call() {
            tracing::debug!("a malformed tools/call: {problem}");
            return rpc_error(
                StatusCode::OK,
                Some(&id),
                -32602,
                &format!("invalid params: {problem}"),
            );
        }
        if let Some(arguments) = message.plain_call_arguments() {
            let plain_id = match &id.0 {
                Value::String(id) => Some(RequestId::String(id.as_str().into())),
                Value::Number(id) => id.as_i64().map(RequestId::Number),
                _ => None,
            };
            if let Some(id) = plain_id {
                let arguments = arguments.to_owned();
                parts.extensions.insert(PlainCall { id, arguments });
            }
        }
        parts.extensions.insert(id);
        if message.method.is_some() {
            parts.extensions.insert(edge::AwaitsAnswer);
        }
        if message.method.as_deref() == Some("initialize") {
            parts.extensions.insert(Opening);
        }
        if let Some(tool) = message.called_tool() {
            parts.extensions.insert(CalledTool(tool.into()));
        }
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        // The body is JSON (checked above) with a JSON content type: rmcp refused it because
        // it is not a JSON-RPC message.
        return rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            -32600,
            "invalid request: the body is not a JSON-RPC request, notification or response",
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_from_the_header() {
        let token =
            |value: &'static str| bearer_token(&HeaderValue::from_static(value)).map(str::to_owned);
        assert_eq!(token("Bearer abc").as_deref(), Some("abc"));
        assert_eq!(token("bearer  abc ").as_deref(), Some("abc"));
        assert_eq!(token("Basic abc"), None);
        assert_eq!(token("Bearer "), None);
        assert_eq!(token("Bearerabc"), None);
    }
}
