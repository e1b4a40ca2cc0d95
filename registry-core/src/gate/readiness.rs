//! Readiness: a registered tool whose credentials or connection are missing is not shown.

use std::fmt::Display;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::shared::future::BoxFuture;

/// How long one readiness check may take by default before the tool counts as not ready.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// A readiness check: a function of no arguments, sync or `async`, that returns `Ok(())` when
/// its tool can work and `Err(reason)` when not (`reason: Display`).
///
/// Given to [`RegistryBuilder::readiness`](crate::RegistryBuilder::readiness). The `Marker`
/// type only tells sync and async checks apart; it is inferred.
///
/// ```standalone_crate
/// use registry_core::{tool, ErrorKind, access::HiddenReason, Registry, Subject};
///
/// /// Send a message to the team's chat.
/// #[tool(public)]
/// fn notify(text: String) -> String {
///     text
/// }
///
/// let registry = Registry::builder()
///     .declared()
///     .readiness("notify", || match std::env::var("CHAT_TOKEN_FOR_DOCTEST") {
///         Ok(_) => Ok(()),
///         Err(_) => Err("CHAT_TOKEN_FOR_DOCTEST is not set"),
///     })
///     .build()
///     .unwrap();
/// let run = registry.open_run("run-1", &Subject::new("acme"));
/// assert!(!run.allowed().permits("notify"));
/// let hidden = &run.explain().hidden[0];
/// assert_eq!(
///     hidden.reasons,
///     [HiddenReason::NotReady { reason: "CHAT_TOKEN_FOR_DOCTEST is not set".into() }]
/// );
/// ```
pub trait ReadinessCheck<Marker>: Send + Sync + 'static {
    #[doc(hidden)]
    fn into_check(self) -> Check;
}

/// The marker of synchronous checks.
#[doc(hidden)]
#[derive(Debug)]
pub enum SyncCheck {}

/// The marker of `async` checks.
#[doc(hidden)]
#[derive(Debug)]
pub enum AsyncCheck {}

impl<F, E> ReadinessCheck<SyncCheck> for F
where
    F: Fn() -> Result<(), E> + Send + Sync + 'static,
    E: Display,
{
    fn into_check(self) -> Check {
        Check::Sync(
            Arc::new(move || self().map_err(|error| error.to_string())),
            Arc::default(),
        )
    }
}

impl<F, Fut, E> ReadinessCheck<AsyncCheck> for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Display,
{
    fn into_check(self) -> Check {
        Check::Async(Arc::new(move || {
            let future = self();
            Box::pin(async move { future.await.map_err(|error| error.to_string()) })
        }))
    }
}

/// A readiness check, erased. A synchronous one carries its run in flight, if any.
#[doc(hidden)]
#[derive(Clone)]
pub enum Check {
    Sync(
        Arc<dyn Fn() -> Result<(), String> + Send + Sync>,
        Arc<InFlight>,
    ),
    Async(Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>),
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Check::Sync(..) => "Check::Sync",
            Check::Async(_) => "Check::Async",
        })
    }
}

impl Check {
    /// Runs the check under `timeout`; a panic or a missed deadline is "not ready".
    ///
    /// A synchronous check runs on a thread of its own, never on the caller's (an async
    /// worker, or the thread building the registry), so that its deadline holds: past it the
    /// tool is not ready and the caller goes on, while the check's thread runs on until the
    /// check returns. At most one thread per synchronous check, however often readiness is
    /// checked: a caller that finds the check running joins it and waits for its answer
    /// (under its own deadline); one that finds it running since longer than its deadline is
    /// told at once that it has not returned.
    pub(crate) async fn run(&self, timeout: Duration) -> Result<(), String> {
        let future = match self {
            Check::Sync(check, in_flight) => return run_sync(check, in_flight, timeout).await,
            Check::Async(check) => match catch_unwind(AssertUnwindSafe(|| check())) {
                Ok(future) => future,
                Err(payload) => return Err(panicked(&*payload)),
            },
        };
        match crate::shared::deadline::with_deadline(
            crate::execute::execution::CatchUnwind(future),
            timeout,
        )
        .await
        {
            Some(Ok(result)) => result,
            Some(Err(message)) => Err(format!("the readiness check panicked: {message}")),
            None => Err(format!(
                "the readiness check did not answer within {} ms",
                timeout.as_millis()
            )),
        }
    }
}

/// A synchronous check's run in flight: when it started and who waits for its answer. Those
/// who wait are the callers that came while it ran (each also under its own deadline), so
/// they are few: one who gave up is dropped when the next one comes.
#[doc(hidden)]
#[derive(Default)]
pub struct InFlight(Mutex<Option<Running>>);

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("InFlight")
            .field("since", &state.as_ref().map(|running| running.started))
            .finish()
    }
}

struct Running {
    started: Instant,
    waiting: Vec<futures_channel::oneshot::Sender<Result<(), String>>>,
}

impl InFlight {
    fn state(&self) -> std::sync::MutexGuard<'_, Option<Running>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Runs a synchronous check on a thread of its own, or joins its run in flight, under
/// `timeout`.
async fn run_sync(
    check: &Arc<dyn Fn() -> Result<(), String> + Send + Sync>,
    in_flight: &Arc<InFlight>,
    timeout: Duration,
) -> Result<(), String> {
    let (sender, receiver) = futures_channel::oneshot::channel();
    {
        let mut state = in_flight.state();
        match &mut *state {
            Some(running) if running.started.elapsed() >= timeout => {
                return Err(
                    "the readiness check has not returned since it last ran past its deadline"
                        .into(),
                );
            }
            Some(running) => {
                running.waiting.retain(|waiting| !waiting.is_canceled());
                running.waiting.push(sender);
            }
            None => {
                *state = Some(Running {
                    started: Instant::now(),
                    waiting: vec![sender],
                });
                let job = {
                    let (check, in_flight) = (check.clone(), in_flight.clone());
                    move || {
                        let result = catch_unwind(AssertUnwindSafe(|| check()))
                            .unwrap_or_else(|payload| Err(panicked(&*payload)));
                        let running = in_flight.state().take();
                        for waiting in running.map(|running| running.waiting).unwrap_or_default() {
                            let _ = waiting.send(result.clone());
                        }
                    }
                };
                if let Err(error) = std::thread::Builder::new()
                    .name("readiness-check".into())
                    .spawn(job)
                {
                    *state = None;
                    return Err(format!(
                        "the readiness check could not be started (no thread: {error})"
                    ));
                }
            }
        }
    }
    match crate::shared::deadline::with_deadline(receiver, timeout).await {
        Some(Ok(result)) => result,
        Some(Err(_)) => Err("the readiness check ended without an answer".into()),
        None => Err(format!(
            "the readiness check did not answer within {} ms",
            timeout.as_millis()
        )),
    }
}

fn panicked(payload: &(dyn std::any::Any + Send)) -> String {
    format!(
        "the readiness check panicked: {}",
        crate::execute::execution::panic_message(payload)
    )
}

/// Whether a tool is ready, as last checked; read on every projection and call.
#[derive(Debug, Default)]
pub(crate) struct ReadyState {
    not_ready: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl ReadyState {
    pub(crate) fn is_ready(&self) -> bool {
        !self.not_ready.load(Ordering::Acquire)
    }

    /// Why not, if not.
    pub(crate) fn reason(&self) -> Option<String> {
        if self.is_ready() {
            return None;
        }
        self.reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records a result, and passes whether the tool is not ready to `mirror` under the same
    /// lock (the registry's bits of tools not ready, which projection reads); whether readiness
    /// changed.
    pub(crate) fn set(&self, result: &Result<(), String>, mirror: impl FnOnce(bool)) -> bool {
        let mut reason = self.reason.lock().unwrap_or_else(PoisonError::into_inner);
        *reason = result.as_ref().err().cloned();
        let was_not_ready = self.not_ready.swap(result.is_err(), Ordering::AcqRel);
        mirror(result.is_err());
        was_not_ready != result.is_err()
    }
}

/// The result of checking one tool's readiness.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolReadiness {
    /// The tool.
    pub name: String,
    /// Why it is not ready; `None`: it is.
    pub not_ready: Option<String>,
}

impl ToolReadiness {
    /// Whether the tool is ready.
    pub fn is_ready(&self) -> bool {
        self.not_ready.is_none()
    }
}
