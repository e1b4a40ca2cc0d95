//! Cancelling a call: a flag a running tool can check, and a future it can wait on, with no
//! async runtime behind either.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

/// A cancellation: tripped once, by whoever holds a clone, and seen by every clone.
///
/// Give one to a call with [`CallOptions::with_cancellation`](crate::call::CallOptions::with_cancellation)
/// and [`RunExt::call_with`](crate::server::RunExt::call_with); [`cancel`](Self::cancel) it and the call
/// ends as [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled): an async tool's future is
/// dropped, a synchronous tool sees [`ToolContext::is_cancelled`](crate::ToolContext::is_cancelled)
/// turn true (and what it returns is discarded). `registry-mcp` trips one when the client sends
/// `notifications/cancelled`.
///
/// Cheap to clone; it needs no async runtime.
///
/// ```
/// use registry_core::call::Cancellation;
///
/// let cancellation = Cancellation::new();
/// let seen_by_the_tool = cancellation.clone();
/// assert!(!seen_by_the_tool.is_cancelled());
/// cancellation.cancel();
/// assert!(seen_by_the_tool.is_cancelled());
/// // Its future is ready once cancelled.
/// pollster::block_on(seen_by_the_tool.cancelled());
/// ```
#[derive(Clone)]
pub struct Cancellation {
    /// `None` for a call that nothing can cancel (no caller's cancellation, no deadline):
    /// such a call needs no allocation for it.
    inner: Option<Arc<Inner>>,
}

impl Default for Cancellation {
    fn default() -> Self {
        Cancellation {
            inner: Some(Arc::default()),
        }
    }
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    /// Cancelling the parent cancels this one too.
    parent: Option<Arc<Inner>>,
    /// Another signal that counts as cancelled (see [`Cancellation::observing`]).
    probe: Option<Probe>,
    waiters: Mutex<Vec<(u64, Waker)>>,
}

/// A signal from outside, asked each time whether it says cancelled.
type Probe = Box<dyn Fn() -> bool + Send + Sync>;

/// Numbers the waiting futures, so that each replaces and removes its own waker.
static NEXT_WAITER: AtomicU64 = AtomicU64::new(0);

impl Inner {
    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
            || self.probe.as_ref().is_some_and(|probe| probe())
            || self
                .parent
                .as_ref()
                .is_some_and(|parent| parent.is_cancelled())
    }

    /// This one and its parents, nearest first.
    fn chain(self: &Arc<Self>) -> Vec<Arc<Inner>> {
        let mut chain = vec![self.clone()];
        while let Some(parent) = chain.last().and_then(|last| last.parent.clone()) {
            chain.push(parent);
        }
        chain
    }

    fn register(&self, id: u64, waker: &Waker) {
        let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        match waiters.iter_mut().find(|(waiter, _)| *waiter == id) {
            Some((_, known)) if known.will_wake(waker) => {}
            Some((_, known)) => known.clone_from(waker),
            None => waiters.push((id, waker.clone())),
        }
    }

    fn deregister(&self, id: u64) {
        let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        waiters.retain(|(waiter, _)| *waiter != id);
    }
}

impl Cancellation {
    /// A cancellation not yet tripped.
    pub fn new() -> Cancellation {
        Cancellation::default()
    }

    /// A cancellation that also counts as tripped whenever `probe` says so: for a signal that
    /// already exists elsewhere (a request's cancellation token, a shutdown flag), which a
    /// synchronous tool then sees through [`is_cancelled`](Self::is_cancelled) without any
    /// task relaying it. The [`cancelled`](Self::cancelled) futures see the probe when they
    /// are polled, but only [`cancel`](Self::cancel) wakes them: whoever watches the signal
    /// asynchronously calls `cancel` when it fires.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use registry_core::call::Cancellation;
    ///
    /// let shutdown = Arc::new(AtomicBool::new(false));
    /// let flag = shutdown.clone();
    /// let cancellation = Cancellation::observing(move || flag.load(Ordering::Relaxed));
    /// assert!(!cancellation.is_cancelled());
    /// shutdown.store(true, Ordering::Relaxed);
    /// assert!(cancellation.is_cancelled());
    /// assert!(cancellation.child().is_cancelled());
    /// ```
    pub fn observing(probe: impl Fn() -> bool + Send + Sync + 'static) -> Cancellation {
        Cancellation {
            inner: Some(Arc::new(Inner {
                probe: Some(Box::new(probe)),
                ..Inner::default()
            })),
        }
    }

    /// The cancellation of a call that nothing can cancel: never tripped, and tripping it
    /// does nothing. It allocates nothing, which keeps it off the cost of a plain call.
    pub(crate) fn never() -> Cancellation {
        Cancellation { inner: None }
    }

    /// Trips it: every clone, and every cancellation made with [`child`](Self::child) from
    /// them, is cancelled, and every [`cancelled`](Self::cancelled) future is woken. Tripping
    /// it again does nothing.
    pub fn cancel(&self) {
        let Some(inner) = &self.inner else {
            return;
        };
        if inner.cancelled.swap(true, Ordering::AcqRel) {
            return;
        }
        let waiters =
            std::mem::take(&mut *inner.waiters.lock().unwrap_or_else(PoisonError::into_inner));
        for (_, waker) in waiters {
            waker.wake();
        }
    }

    /// Whether it was tripped (here or in a parent). A cheap check, for loops in synchronous
    /// tools.
    pub fn is_cancelled(&self) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|inner| inner.is_cancelled())
    }

    /// A future that completes once it is tripped (at once if it already was). It holds a
    /// clone, so it may outlive `self` and move to another task.
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            chain: self.inner.as_ref().map(Inner::chain).unwrap_or_default(),
            id: None,
        }
    }

    /// A cancellation that is tripped with this one, and can also be tripped on its own
    /// without tripping this one.
    ///
    /// ```
    /// use registry_core::call::Cancellation;
    ///
    /// let call = Cancellation::new();
    /// let step = call.child();
    /// step.cancel();
    /// assert!(!call.is_cancelled());
    /// let other_step = call.child();
    /// call.cancel();
    /// assert!(other_step.is_cancelled());
    /// ```
    #[must_use]
    pub fn child(&self) -> Cancellation {
        Cancellation {
            inner: Some(Arc::new(Inner {
                parent: self.inner.clone(),
                ..Inner::default()
            })),
        }
    }
}

impl std::fmt::Debug for Cancellation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancellation")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// The future of [`Cancellation::cancelled`] and
/// [`ToolContext::cancelled`](crate::ToolContext::cancelled): completes once the cancellation
/// is tripped.
///
/// ```
/// use registry_core::call::Cancellation;
///
/// let cancellation = Cancellation::new();
/// let waiting = cancellation.cancelled();
/// std::thread::spawn(move || cancellation.cancel());
/// pollster::block_on(waiting);
/// ```
#[must_use = "a future does nothing unless awaited"]
pub struct Cancelled {
    chain: Vec<Arc<Inner>>,
    id: Option<u64>,
}

impl std::fmt::Debug for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancelled").finish_non_exhaustive()
    }
}

impl Cancelled {
    fn is_cancelled(&self) -> bool {
        self.chain.first().is_some_and(|inner| inner.is_cancelled())
    }
}

impl Future for Cancelled {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.is_cancelled() {
            return Poll::Ready(());
        }
        let id = *self
            .id
            .get_or_insert_with(|| NEXT_WAITER.fetch_add(1, Ordering::Relaxed));
        for inner in &self.chain {
            inner.register(id, cx.waker());
        }
        // Tripped while registering: its wakers may have been taken before ours was added.
        if self.is_cancelled() {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Drop for Cancelled {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            for inner in &self.chain {
                inner.deregister(id);
            }
        }
    }
}
