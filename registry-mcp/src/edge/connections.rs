//! The accept loop: a bounded number of connections (in total, per source, and not yet
//! authenticated, in total and per source), each with a header-read timeout, a header size limit and an idle timeout,
//! served by hyper's HTTP/1 with the router.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower_service::Service;

use super::guard::Guarded;
use super::{EdgeLimits, Source};

/// The connections open, per source and not yet authenticated (in all and per source).
struct Tally {
    max_per_source: usize,
    max_unauthenticated: usize,
    max_unauthenticated_per_source: usize,
    state: Mutex<TallyState>,
}

#[derive(Default)]
struct TallyState {
    per_source: HashMap<Source, FromSource>,
    unauthenticated: usize,
}

/// The connections open from one source, and how many of them are not yet authenticated.
#[derive(Default)]
struct FromSource {
    open: usize,
    unauthenticated: usize,
}

/// Which limit a connection was refused by.
#[derive(Debug, Clone, Copy)]
enum Over {
    Total,
    PerSource,
    Unauthenticated,
    UnauthenticatedPerSource,
}

impl Tally {
    fn state(&self) -> std::sync::MutexGuard<'_, TallyState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for a new, unauthenticated connection from `source`, or the limit it is over.
    fn admit(self: &Arc<Self>, source: Source) -> Result<Arc<Connection>, Over> {
        let mut state = self.state();
        let (open, unauthenticated) = state
            .per_source
            .get(&source)
            .map_or((0, 0), |from| (from.open, from.unauthenticated));
        if open >= self.max_per_source {
            return Err(Over::PerSource);
        }
        // A source's share is enforced once half the unauthenticated places are taken: below
        // that, a client may open more at once (parallel requests on new connections, each
        // unauthenticated until its first request is read); above it, no source holds more
        // than its share of what is left, so other sources still connect.
        let contended = state.unauthenticated * 2 >= self.max_unauthenticated;
        if contended && unauthenticated >= self.max_unauthenticated_per_source {
            return Err(Over::UnauthenticatedPerSource);
        }
        if state.unauthenticated >= self.max_unauthenticated {
            return Err(Over::Unauthenticated);
        }
        let from = state.per_source.entry(source).or_default();
        from.open += 1;
        from.unauthenticated += 1;
        state.unauthenticated += 1;
        Ok(Arc::new(Connection {
            tally: self.clone(),
            source,
            authenticated: AtomicBool::new(false),
        }))
    }
}

/// One accepted connection's place in the tally, given back when it closes. Each request on it
/// carries it (an extension), so that the first request with a valid token moves it from the
/// unauthenticated connections to the others.
pub(crate) struct Connection {
    tally: Arc<Tally>,
    source: Source,
    authenticated: AtomicBool,
}

impl Connection {
    /// A request on this connection presented a valid token (or is the loopback principal's).
    pub(crate) fn authenticated(&self) {
        if !self.authenticated.swap(true, Ordering::SeqCst) {
            let mut state = self.tally.state();
            state.unauthenticated = state.unauthenticated.saturating_sub(1);
            if let Some(from) = state.per_source.get_mut(&self.source) {
                from.unauthenticated = from.unauthenticated.saturating_sub(1);
            }
        }
    }

    /// Whether a request on this connection has presented a valid token.
    fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::SeqCst)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let mut state = self.tally.state();
        let unauthenticated = !self.authenticated.load(Ordering::SeqCst);
        if unauthenticated {
            state.unauthenticated = state.unauthenticated.saturating_sub(1);
        }
        if let Some(from) = state.per_source.get_mut(&self.source) {
            from.open = from.open.saturating_sub(1);
            if unauthenticated {
                from.unauthenticated = from.unauthenticated.saturating_sub(1);
            }
            if from.open == 0 {
                state.per_source.remove(&self.source);
            }
        }
    }
}

/// Serves `router` on `listener` until `shutdown` is cancelled, then waits for the open
/// connections to finish their requests.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: EdgeLimits,
    shutdown: CancellationToken,
) {
    let max_connections = within_descriptors(limits.max_connections);
    let permits = Arc::new(Semaphore::new(max_connections));
    let tally = Arc::new(Tally {
        max_per_source: limits.max_connections_per_ip,
        max_unauthenticated: limits.max_unauthenticated_connections,
        max_unauthenticated_per_source: limits.max_unauthenticated_connections_per_ip,
        state: Mutex::default(),
    });
    let tasks = TaskTracker::new();
    let limits = Arc::new(limits);
    let mut refused: u64 = 0;
    let mut last_warning: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors, or a connection reset before it was accepted:
                // wait a little rather than spin.
                tracing::debug!(%error, "could not accept a connection");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let admitted = permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| Over::Total)
            .and_then(|permit| Ok((permit, tally.admit(Source::of(Some(peer.ip())))?)));
        let (permit, place) = match admitted {
            Ok(admitted) => admitted,
            Err(over) => {
                drop(tcp);
                refused += 1;
                tracing::debug!(peer = ?peer, ?over, "closed a connection over a connection limit");
                if last_warning.is_none_or(|at| at.elapsed() >= super::SUMMARY_INTERVAL) {
                    tracing::warn!(
                        refused,
                        max_connections,
                        max_connections_per_ip = tally.max_per_source,
                        max_unauthenticated_connections = tally.max_unauthenticated,
                        max_unauthenticated_connections_per_ip =
                            tally.max_unauthenticated_per_source,
                        "closed connections over the connection limits (EdgeLimits)"
                    );
                    last_warning = Some(Instant::now());
                    refused = 0;
                }
                continue;
            }
        };
        // Without TCP_NODELAY, the last chunk of a streamed answer waits for the client's
        // delayed ACK (40 ms on Linux) before it leaves.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let router = router.clone();
        let limits = limits.clone();
        let shutdown = shutdown.clone();
        tasks.spawn(async move {
            connection(tcp, peer, place, router, &limits, shutdown).await;
            drop(permit);
        });
    }
    tasks.close();
    tasks.wait().await;
}

/// File descriptors kept for what is not a connection: the listener, logs, files, tools.
const SPARE_DESCRIPTORS: u64 = 32;

/// `max`, or fewer when the process may not open that many files (Linux: the soft limit of
/// `/proc/self/limits`): a connection limit above it would let idle sockets use up every
/// descriptor, and the listener could not accept a valid client.
fn within_descriptors(max: usize) -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            let line = limits
                .lines()
                .find(|line| line.starts_with("Max open files"))?
                .to_owned();
            line.split_whitespace().nth(3)?.parse::<u64>().ok()
        });
    let Some(soft) = soft else {
        return max;
    };
    let room = usize::try_from(soft.saturating_sub(SPARE_DESCRIPTORS).max(1)).unwrap_or(max);
    if room < max {
        tracing::warn!(
            max_connections = max,
            open_files = soft,
            "the process may open {soft} files: serving at most {room} connections; raise \
             the limit (ulimit -n) or lower EdgeLimits::max_connections"
        );
    }
    max.min(room)
}

/// What a connection is doing: requests in flight, and since when it has had none.
struct Activity {
    in_flight: AtomicUsize,
    idle_since: std::sync::Mutex<Instant>,
}

impl Activity {
    fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(self.clone())
    }

    /// When the connection has been idle long enough to close, if it is idle.
    fn idle_deadline(&self, timeout: Duration) -> Option<Instant> {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let since = *self
            .idle_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(since + timeout)
    }
}

/// A request in flight until its response body is done.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        *self
            .0
            .idle_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    place: Arc<Connection>,
    router: axum::Router,
    limits: &EdgeLimits,
    shutdown: CancellationToken,
) {
    let activity = Arc::new(Activity {
        in_flight: AtomicUsize::new(0),
        idle_since: std::sync::Mutex::new(Instant::now()),
    });
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            request.extensions_mut().insert(place.clone());
            let in_flight = activity.begin();
            let mut router = router.clone();
            let place = place.clone();
            async move {
                let mut response = match router.call(request.map(Body::new)).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                // A connection that has not authenticated and is refused (no or a bad token, a
                // foreign `Host` or `Origin`) is closed after the answer: it gives its place
                // back instead of trying again on it.
                let refused = matches!(
                    response.status(),
                    StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
                );
                if refused && !place.is_authenticated() {
                    response
                        .headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                Ok::<_, Infallible>(response.map(|body| Guarded::wrap(body, in_flight)))
            }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_header_size(limits.max_header_bytes);
    let connection = builder.serve_connection(TokioIo::new(tcp), service);
    let mut connection = std::pin::pin!(connection);
    // After a graceful shutdown, how long the connection gets to finish before it is dropped.
    let mut closing: Option<Instant> = None;
    loop {
        let idle = activity.idle_deadline(limits.idle_timeout);
        let wake = match (closing, idle) {
            (Some(deadline), _) => deadline,
            (None, Some(deadline)) => deadline,
            // Busy: look again later.
            (None, None) => Instant::now() + limits.idle_timeout,
        };
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, peer = ?peer, "connection ended with an error");
                }
                return;
            }
            () = shutdown.cancelled(), if closing.is_none() => {
                connection.as_mut().graceful_shutdown();
                closing = Some(Instant::now() + Duration::from_secs(30));
            }
            () = tokio::time::sleep_until(wake) => {
                if closing.is_some_and(|deadline| Instant::now() >= deadline) {
                    tracing::debug!(peer = ?peer, "dropped a connection that did not close");
                    return;
                }
                if closing.is_none()
                    && activity
                        .idle_deadline(limits.idle_timeout)
                        .is_some_and(|deadline| Instant::now() >= deadline)
                {
                    tracing::debug!(peer = ?peer, "closing an idle connection");
                    connection.as_mut().graceful_shutdown();
                    closing = Some(Instant::now() + limits.header_read_timeout);
                }
            }
        }
    }
}
