//! The bounded pool of threads synchronous tools run on, so that no async worker blocks.
//!
//! A call takes a slot before its tool starts and gives it back when the tool returns,
//! whatever became of the call meanwhile: a tool that overruns its deadline is answered
//! `TimedOut` at once, yet its thread stays busy, and its slot taken, until it returns. At
//! most `limit` threads exist at any time. A call that finds every slot taken waits for one
//! asynchronously, for a bounded time and in a bounded queue; past either bound it is
//! refused. Idle threads are kept a while for the next calls, then end.
//!
//! An own pool rather than Tokio's `spawn_blocking`: registry-core runs without a runtime
//! too (`Run::call_blocking`), and the bound is the registry's, not a process-wide one.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_channel::oneshot;

/// How many threads synchronous tools may use at once, by default.
pub(crate) const DEFAULT_THREADS: usize = 64;

/// How long a call waits for a free thread, by default, before it is refused.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// How many calls may wait for a thread, per thread of the pool.
const WAITING_PER_THREAD: usize = 16;

/// How long an idle thread is kept for the next call.
const IDLE: Duration = Duration::from_secs(30);

/// The name of every pool thread (at most 15 bytes, as Linux keeps it).
pub(crate) const THREAD_NAME: &str = "registry-tool";

/// A job and the slot it runs under.
type Work = (Box<dyn FnOnce() + Send>, Slot);

/// The threads synchronous tools run on; cheap to clone, shared by a registry's runs.
#[derive(Clone)]
pub(crate) struct BlockingPool(Arc<Shared>);

impl std::fmt::Debug for BlockingPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingPool")
            .field("limit", &self.0.limit)
            .field("wait", &self.0.wait)
            .finish_non_exhaustive()
    }
}

struct Shared {
    limit: usize,
    wait: Duration,
    state: Mutex<State>,
    next_worker: AtomicU64,
}

#[derive(Default)]
struct State {
    /// Slots taken: by a job that has not returned, or handed to a waiting call.
    taken: usize,
    /// Threads waiting for a job.
    idle: Vec<(u64, mpsc::Sender<Work>)>,
    /// Calls waiting for a slot, oldest first.
    waiting: VecDeque<oneshot::Sender<()>>,
}

/// Why a call could not get a thread.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Every thread is busy and too many calls wait already.
    QueueFull { threads: usize },
    /// Every thread stayed busy for as long as the call could wait.
    Waited { threads: usize, waited: Duration },
    /// The operating system would not start a thread.
    Spawn(std::io::Error),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::QueueFull { threads } => write!(
                f,
                "all {threads} threads for synchronous tools are busy and {} calls wait already; raise RegistryBuilder::blocking_threads if this is the normal load",
                threads * WAITING_PER_THREAD
            ),
            Refusal::Waited { threads, waited } => write!(
                f,
                "all {threads} threads for synchronous tools stayed busy for {} ms; raise RegistryBuilder::blocking_threads if this is the normal load",
                waited.as_millis()
            ),
            Refusal::Spawn(error) => write!(f, "starting a thread for the tool failed: {error}"),
        }
    }
}

impl BlockingPool {
    /// A pool of at most `limit` threads (at least one), where a call waits at most `wait`.
    pub(crate) fn new(limit: usize, wait: Duration) -> BlockingPool {
        BlockingPool(Arc::new(Shared {
            limit: limit.max(1),
            wait,
            state: Mutex::new(State::default()),
            next_worker: AtomicU64::new(0),
        }))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `job` on a thread of the pool once a slot is free, waiting at most the pool's
    /// wait or `limit`, whichever is shorter; the slot is given back when `job` returns.
    /// Returns once the job was handed to a thread (not when it finished), with how long the
    /// call waited.
    pub(crate) async fn spawn(
        &self,
        job: impl FnOnce() + Send + 'static,
        limit: Option<Duration>,
    ) -> Result<Duration, Refusal> {
        let started = std::time::Instant::now();
        let slot = self.take(limit).await?;
        let waited = started.elapsed();
        self.start(Box::new(job), slot)
            .map(|()| waited)
            .map_err(Refusal::Spawn)
    }

    /// A slot, at once or after a bounded wait.
    async fn take(&self, limit: Option<Duration>) -> Result<Slot, Refusal> {
        let threads = self.0.limit;
        let receiver = {
            let mut state = self.state();
            if state.taken < threads {
                state.taken += 1;
                return Ok(Slot(Some(self.clone())));
            }
            let most = threads.saturating_mul(WAITING_PER_THREAD);
            if state.waiting.len() >= most {
                state.waiting.retain(|waiter| !waiter.is_canceled());
            }
            if state.waiting.len() >= most {
                return Err(Refusal::QueueFull { threads });
            }
            let (sender, receiver) = oneshot::channel();
            state.waiting.push_back(sender);
            receiver
        };
        let wait = limit.map_or(self.0.wait, |limit| limit.min(self.0.wait));
        let mut waiter = Waiter {
            receiver,
            pool: self.clone(),
            claimed: false,
        };
        match crate::execute::deadline::with_deadline(&mut waiter, wait).await {
            Some(true) => {
                waiter.claimed = true;
                Ok(Slot(Some(self.clone())))
            }
            // The sender is only dropped with the pool's state, which outlives this call.
            Some(false) | None => Err(Refusal::Waited {
                threads,
                waited: wait,
            }),
        }
    }

    /// Hands `job` to an idle thread, or starts one.
    fn start(&self, job: Box<dyn FnOnce() + Send>, slot: Slot) -> Result<(), std::io::Error> {
        let idle = self.state().idle.pop();
        if let Some((_, sender)) = idle {
            // A thread leaves the idle list only under the lock, before it ends: it is there.
            return match sender.send((job, slot)) {
                Ok(()) => Ok(()),
                Err(mpsc::SendError((_, slot))) => {
                    drop(slot);
                    Err(std::io::Error::other("a pool thread ended unexpectedly"))
                }
            };
        }
        let id = self.0.next_worker.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = mpsc::channel();
        let pool = self.clone();
        let first = (job, slot);
        std::thread::Builder::new()
            .name(THREAD_NAME.to_owned())
            .spawn(move || pool.work(id, sender, &receiver, first))
            .map(|_| ())
        // On failure the closure, and the slot in it, were dropped: the slot is free again.
    }

    /// A thread's life: run jobs, give their slots back, end when idle for long.
    fn work(
        &self,
        id: u64,
        sender: mpsc::Sender<Work>,
        receiver: &mpsc::Receiver<Work>,
        first: Work,
    ) {
        let mut next = Some(first);
        loop {
            let (job, slot) = match next.take() {
                Some(work) => work,
                None => match receiver.recv_timeout(IDLE) {
                    Ok(work) => work,
                    Err(_) => {
                        let mut state = self.state();
                        match state.idle.iter().position(|(worker, _)| *worker == id) {
                            Some(index) => {
                                state.idle.swap_remove(index);
                                return;
                            }
                            // Taken off the idle list just now: a job is on its way.
                            None => continue,
                        }
                    }
                },
            };
            // The job catches its tool's panics; this keeps the thread should it not.
            let _ = catch_unwind(AssertUnwindSafe(job));
            // Idle before the slot is given back, so that whoever takes it finds this thread.
            self.state().idle.push((id, sender.clone()));
            drop(slot);
        }
    }

    /// Gives a slot back: to the oldest call still waiting, or to the pool.
    fn give_back(&self) {
        let mut state = self.state();
        while let Some(waiter) = state.waiting.pop_front() {
            if waiter.send(()).is_ok() {
                return;
            }
        }
        state.taken = state.taken.saturating_sub(1);
    }
}

/// A slot of the pool, given back when dropped.
struct Slot(Option<BlockingPool>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(pool) = self.0.take() {
            pool.give_back();
        }
    }
}

/// A call waiting for a slot: `true` once handed one. Dropped before it was claimed (the
/// call gave up, timed out, was cancelled), it gives back a slot it was handed meanwhile.
struct Waiter {
    receiver: oneshot::Receiver<()>,
    pool: BlockingPool,
    claimed: bool,
}

impl Future for Waiter {
    type Output = bool;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        Pin::new(&mut self.receiver)
            .poll(cx)
            .map(|answer| answer.is_ok())
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if self.claimed {
            return;
        }
        self.receiver.close();
        if let Ok(Some(())) = self.receiver.try_recv() {
            self.pool.give_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn at_most_limit_jobs_run_and_the_rest_wait_or_are_refused() {
        let pool = BlockingPool::new(2, Duration::from_millis(100));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = Arc::new(Mutex::new(released));
        for _ in 0..2 {
            let (running, most, released) = (running.clone(), most.clone(), released.clone());
            let job = move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let _ = released.lock().unwrap().recv();
                running.fetch_sub(1, Ordering::SeqCst);
            };
            pollster::block_on(pool.spawn(job, None)).unwrap();
        }
        // Both threads are busy: a third job waits its bound, then is refused.
        let refused = pollster::block_on(pool.spawn(|| {}, None)).unwrap_err();
        assert!(
            matches!(refused, Refusal::Waited { threads: 2, .. }),
            "{refused:?}"
        );
        // A slot given back while a call waits goes to it.
        let waiting = {
            let pool = pool.clone();
            std::thread::spawn(move || {
                pollster::block_on(pool.spawn(|| {}, Some(Duration::from_secs(5))))
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        release.send(()).unwrap();
        assert!(waiting.join().unwrap().is_ok());
        release.send(()).unwrap();
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_waiter_that_gives_up_loses_no_slot() {
        let pool = BlockingPool::new(1, Duration::from_millis(30));
        for _ in 0..20 {
            let (done, finished) = std::sync::mpsc::channel();
            pollster::block_on(pool.spawn(
                move || {
                    std::thread::sleep(Duration::from_millis(25));
                    let _ = done.send(());
                },
                None,
            ))
            .unwrap();
            // This one may be handed the slot just as it gives up: the slot must come back.
            let _ = pollster::block_on(pool.spawn(|| {}, None));
            finished.recv().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(pollster::block_on(pool.spawn(|| {}, Some(Duration::from_millis(500)))).is_ok());
        assert!(pool.state().taken <= 1);
    }
}
