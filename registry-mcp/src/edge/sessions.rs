//! Who owns each MCP session, and how many each principal may hold: sessions in total and
//! per principal, streams per principal (GET streams, and POST requests while their answers
//! are streamed: `subscriptions/listen`, calls in progress). Every request naming a session is checked
//! against its owner, whatever its method. A principal is counted and owns sessions in one
//! tenant ([`owner_key`]): the same person acting in another tenant (an OAuth `sub` whose
//! token names another tenant) is another owner, with caps of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderName, Method, StatusCode};
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::guard::Guarded;
use super::{AwaitsAnswer, EdgeLimits, Inner, Opening, RpcId};
use crate::clients::{Client, Shared};
use crate::tokens::Principal;

/// The header that names a session.
const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// The sessions of one server.
#[derive(Debug)]
pub(crate) struct Sessions {
    manager: Arc<LocalSessionManager>,
    max_total: usize,
    max_per_principal: usize,
    max_streams: usize,
    /// How long a session may go without a request reaching rmcp (see
    /// [`direct_client`](Sessions::direct_client)).
    touch_every: Duration,
    state: Mutex<Owners>,
}

#[derive(Debug, Default)]
struct Owners {
    /// Session id → who opened it.
    owner: HashMap<String, Owner>,
    /// Owner key ([`owner_key`]) → sessions open or being opened.
    held: HashMap<Arc<str>, usize>,
    /// Sessions being opened, all principals together.
    opening: usize,
    /// Owner key → open streams: GET streams, and POST requests not answered yet.
    streams: HashMap<Arc<str>, usize>,
}

/// Who opened a session, and what its requests answered without rmcp need.
struct Owner {
    /// The owner's key ([`owner_key`]): its tenant and principal.
    principal: Arc<str>,
    /// The principal as it opened the session (its subject, with its scopes).
    opener: Principal,
    /// When a request of the session last went to rmcp (its opening, at first).
    touched: Instant,
    /// The client the session's direct answers act for, once found.
    client: Option<Arc<Client>>,
}

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owner")
            .field("principal", &self.principal)
            .field("touched", &self.touched)
            .finish_non_exhaustive()
    }
}

impl Owners {
    fn release(&mut self, principal: &Arc<str>) {
        if let Some(held) = self.held.get_mut(principal) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                self.held.remove(principal);
            }
        }
    }
}

/// Why a new session is refused.
enum Full {
    Total(usize),
    Principal(usize),
}

impl Sessions {
    /// Tracks the sessions of `manager`, within `limits`.
    pub(crate) fn new(manager: Arc<LocalSessionManager>, limits: &EdgeLimits) -> Sessions {
        Sessions {
            manager,
            max_total: limits.max_sessions,
            max_per_principal: limits.max_sessions_per_principal,
            max_streams: limits.max_streams_per_principal,
            touch_every: limits.session_idle_timeout / 4,
            state: Mutex::new(Owners::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the sessions rmcp closed (idle, or ended by the client or the server).
    async fn sweep(&self) {
        let live = self.manager.sessions.read().await;
        let mut state = self.state();
        let mut gone = Vec::new();
        state.owner.retain(|id, owner| {
            let keep = live.contains_key(id.as_str());
            if !keep {
                gone.push(owner.principal.clone());
            }
            keep
        });
        for principal in gone {
            state.release(&principal);
        }
    }

    /// Reserves a place for a new session of `principal`.
    fn try_reserve(&self, principal: &Arc<str>) -> Result<(), Full> {
        let mut state = self.state();
        if state.owner.len() + state.opening >= self.max_total {
            return Err(Full::Total(self.max_total));
        }
        let held = state.held.get(principal).copied().unwrap_or(0);
        if held >= self.max_per_principal {
            return Err(Full::Principal(self.max_per_principal));
        }
        state.opening += 1;
        *state.held.entry(principal.clone()).or_insert(0) += 1;
        Ok(())
    }

    async fn reserve(self: &Arc<Self>, principal: &Arc<str>) -> Result<Reservation, Full> {
        if self.try_reserve(principal).is_err() {
            // Full: forget the sessions rmcp closed since, and look again.
            self.sweep().await;
            self.try_reserve(principal)?;
        }
        Ok(Reservation {
            sessions: self.clone(),
            principal: principal.clone(),
            opened: false,
        })
    }

    fn owned_by(&self, session: &str, principal: &str) -> bool {
        self.state()
            .owner
            .get(session)
            .is_some_and(|owner| &*owner.principal == principal)
    }

    /// The client a request of `session` made by `principal` acts for, if the server may
    /// answer it without rmcp (`direct.rs`): `principal` opened the session, with the same
    /// subject (another token of theirs, with other scopes, goes to rmcp, which serves it from
    /// a run of its own scopes). rmcp ends a session that no request reached for
    /// `EdgeLimits::session_idle_timeout`, so a request of a session whose last request to
    /// rmcp is a quarter of that old goes to rmcp: `None`, and its time noted.
    pub(crate) fn direct_client(
        &self,
        session: &str,
        principal: &Principal,
        shared: &Arc<Shared>,
    ) -> Option<Arc<Client>> {
        {
            let mut state = self.state();
            let owner = state.owner.get_mut(session)?;
            if !owner.opener.same_as(principal) || owner.opener.subject() != principal.subject() {
                return None;
            }
            let now = Instant::now();
            if now.duration_since(owner.touched) >= self.touch_every {
                owner.touched = now;
                return None;
            }
            if let Some(client) = &owner.client {
                return Some(client.clone());
            }
        }
        // Found outside this lock (the clients' map has its own).
        let client = shared.client(principal.issuer(), principal.id(), principal.subject());
        if let Some(owner) = self.state().owner.get_mut(session) {
            owner.client = Some(client.clone());
        }
        Some(client)
    }

    fn forget(&self, session: &str) {
        let mut state = self.state();
        if let Some(owner) = state.owner.remove(session) {
            state.release(&owner.principal);
        }
    }

    fn open_stream(self: &Arc<Self>, principal: &Arc<str>) -> Option<Stream> {
        let mut state = self.state();
        let streams = state.streams.entry(principal.clone()).or_insert(0);
        if *streams >= self.max_streams {
            return None;
        }
        *streams += 1;
        Some(Stream {
            sessions: self.clone(),
            principal: principal.clone(),
        })
    }
}

/// A place for a session being opened; given back when dropped unless the session opened.
struct Reservation {
    sessions: Arc<Sessions>,
    principal: Arc<str>,
    opened: bool,
}

impl Reservation {
    fn opened(mut self, session: &str, opener: Principal) {
        let mut state = self.sessions.state();
        state.opening = state.opening.saturating_sub(1);
        let owner = Owner {
            principal: self.principal.clone(),
            opener,
            touched: Instant::now(),
            client: None,
        };
        state.owner.insert(session.to_owned(), owner);
        self.opened = true;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.opened {
            let mut state = self.sessions.state();
            state.opening = state.opening.saturating_sub(1);
            state.release(&self.principal);
        }
    }
}

/// An open stream of a principal (a GET stream, or a POST request until its answer is done),
/// until its response body is dropped.
struct Stream {
    sessions: Arc<Sessions>,
    principal: Arc<str>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        let mut state = self.sessions.state();
        if let Some(streams) = state.streams.get_mut(&self.principal) {
            *streams = streams.saturating_sub(1);
            if *streams == 0 {
                state.streams.remove(&self.principal);
            }
        }
    }
}

/// Checks every request that names a session against the session's owner (another
/// principal's session is answered as an unknown one: 404), counts the sessions a POST
/// without a session opens, and the GET streams of each principal.
pub(crate) async fn guard_sessions(
    sessions: &Arc<Sessions>,
    request: Request,
    next: impl Inner,
) -> Response {
    let Some(principal) = request.extensions().get::<Principal>() else {
        return next.run(request).await;
    };
    let opener = principal.clone();
    let principal = owner_key(principal);
    let session = request
        .headers()
        .get(SESSION_ID)
        .map(|value| value.to_str().map(str::to_owned));
    let Some(session) = session else {
        // Only an `initialize` request opens a session (rmcp answers the others without a
        // session, or refuses them). Without a session (protocol 2026-07-28), a request's
        // answer may still stream for long (`subscriptions/listen`): counted as in one.
        if request.method() != Method::POST {
            return next.run(request).await;
        }
        if request.extensions().get::<Opening>().is_none() {
            if request.extensions().get::<AwaitsAnswer>().is_some() {
                return streamed(sessions, &principal, request, next).await;
            }
            return next.run(request).await;
        }
        let id = request.extensions().get::<RpcId>().cloned();
        let reservation = match sessions.reserve(&principal).await {
            Ok(reservation) => reservation,
            Err(full) => {
                let (status, message) = match full {
                    Full::Total(max) => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!(
                            "too many sessions: the server holds its limit of {max} \
                             (EdgeLimits::max_sessions); retry later"
                        ),
                    ),
                    Full::Principal(max) => (
                        StatusCode::TOO_MANY_REQUESTS,
                        format!(
                            "too many sessions: this token holds its limit of {max} \
                             (EdgeLimits::max_sessions_per_principal); close one (DELETE) \
                             or let one expire"
                        ),
                    ),
                };
                tracing::debug!(client = ?principal, %status, "refused a new session");
                return super::rpc_error(status, id.as_ref(), -32000, &message);
            }
        };
        let response = next.run(request).await;
        let opened = response
            .headers()
            .get(SESSION_ID)
            .and_then(|value| value.to_str().ok());
        if let Some(opened) = opened {
            tracing::debug!(client = ?principal, session = ?opened, "a session opened");
            reservation.opened(opened, opener);
        }
        return response;
    };
    let session = match session {
        Ok(session) if sessions.owned_by(&session, &principal) => session,
        _ => {
            tracing::debug!(client = ?principal, "refused a request for a session it does not own");
            return not_found();
        }
    };
    match *request.method() {
        Method::DELETE => {
            let response = next.run(request).await;
            if response.status().is_success() {
                tracing::debug!(client = ?principal, session = ?session, "a session closed");
                sessions.forget(&session);
            }
            response
        }
        Method::GET => {
            let Some(stream) = sessions.open_stream(&principal) else {
                return too_many_streams(sessions, &principal, None);
            };
            next.run(request)
                .await
                .map(|body| Guarded::wrap(body, stream))
        }
        Method::POST if request.extensions().get::<AwaitsAnswer>().is_some() => {
            streamed(sessions, &principal, request, next).await
        }
        // A session rmcp closed is still named here until the next sweep; rmcp answers 404.
        _ => next.run(request).await,
    }
}

/// The key the edge owns sessions and counts sessions and streams under: the principal (its
/// issuer and id, [`Principal::key`]) in its subject's tenant, unambiguously (the tenant's
/// length first).
fn owner_key(principal: &Principal) -> Arc<str> {
    let tenant = principal.subject().tenant();
    Arc::from(format!("{}:{tenant}/{}", tenant.len(), principal.key()))
}

/// A POST request, counted as a stream of `principal` while its answer streams; 429 when
/// the principal holds its limit of streams.
async fn streamed(
    sessions: &Arc<Sessions>,
    principal: &Arc<str>,
    request: Request,
    next: impl Inner,
) -> Response {
    let id = request.extensions().get::<RpcId>().cloned();
    let Some(stream) = sessions.open_stream(principal) else {
        return too_many_streams(sessions, principal, id.as_ref());
    };
    let response = next.run(request).await;
    let streaming = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    if streaming {
        response.map(|body| Guarded::wrap(body, stream))
    } else {
        // Answered whole: its place is given back at once.
        drop(stream);
        response
    }
}

/// 429 for a stream over `max_streams_per_principal`, with the request's id if it has one.
fn too_many_streams(sessions: &Sessions, principal: &Arc<str>, id: Option<&RpcId>) -> Response {
    tracing::debug!(client = ?principal, "refused a stream over the limit");
    let message = format!(
        "too many streams: this token holds its limit of {} open streams, GET streams and \
         requests still being answered together (EdgeLimits::max_streams_per_principal); \
         close one or wait for an answer",
        sessions.max_streams
    );
    super::rpc_error(StatusCode::TOO_MANY_REQUESTS, id, -32000, &message)
}

/// What rmcp answers for a session it does not know: a session of another principal gets
/// the same.
fn not_found() -> Response {
    let mut response = Response::new(Body::from("Not Found: Session not found"));
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}
