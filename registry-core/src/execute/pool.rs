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

use crate::execute::inline::InlineGate;
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, mpsc};
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

/// How long a thread that finished a job looks for the next one before it sleeps, when it
/// is the only idle thread of the pool (so that the next job is its own). Waking a sleeping
/// thread is a system call on one side and a context switch on the other, tens of
/// microseconds of CPU on a virtual machine: issue 22's profile of `Run::call` of a
/// synchronous tool in a loop had three quarters of its time in the kernel's wake-ups. With
/// the next call coming within microseconds of the last answer (the calls of one model
/// response run in turn, a batch, a test suite), the job is taken without waking anyone.
/// Calls that come far apart are looked for only now and then ([`LOOK_EVERY`]).
pub(crate) const WORKER_SPIN: Duration = Duration::from_micros(20);

/// The longest a caller waits for a quick tool's answer without yielding (see
/// `execution::on_pool`).
pub(crate) const CALLER_SPIN: Duration = Duration::from_micros(50);

/// A thread whose last look for a job without sleeping found none looks again only after
/// this many jobs: when calls come far apart (a model's, seconds apart), looking after every
/// job would add [`WORKER_SPIN`] of CPU to each call and find nothing; one look in this many
/// costs an eighth of it, and finds calls that start coming one after another again.
pub(crate) const LOOK_EVERY: u32 = 8;

/// Whether waiting without sleeping can help: not on one core, where the spinning thread
/// would only keep the other from running.
pub(crate) fn spinning_helps() -> bool {
    static MANY: OnceLock<bool> = OnceLock::new();
    *MANY.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

/// Calls `ready` until it gives something or `most` has passed, without sleeping; at once
/// `None` where spinning cannot help ([`spinning_helps`]).
pub(crate) fn spin_up_to<T>(most: Duration, mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    if most.is_zero() || !spinning_helps() {
        return None;
    }
    let started = std::time::Instant::now();
    loop {
        if let Some(found) = ready() {
            return Some(found);
        }
        if started.elapsed() >= most {
            return None;
        }
        for _ in 0..32 {
            std::hint::spin_loop();
        }
    }
}

/// What a job does once its thread is idle again: hand its result to the caller.
pub(crate) type Delivery = Box<dyn FnOnce() + Send>;

/// A job, which returns its delivery, and the slot it runs under.
type Work = (Box<dyn FnOnce() -> Delivery + Send>, Slot);

/// A thread waiting for a job: its id, where to send the job, and whether it is looking for
/// one without sleeping (a job sent now is taken within microseconds, without waking it).
struct Idle {
    id: u64,
    sender: mpsc::Sender<Work>,
    awake: Arc<AtomicBool>,
}

/// A job handed to a thread of the pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Started {
    /// How long the call waited for a slot.
    pub(crate) waited: Duration,
    /// Whether the thread was looking for a job without sleeping when it was handed this one:
    /// the job starts within microseconds, and a quick tool's answer follows.
    pub(crate) awake: bool,
}

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
    /// Which quick synchronous tools run on their caller's task instead.
    inline: InlineGate,
}

#[derive(Default)]
struct State {
    /// Slots taken: by a job that has not returned, or handed to a waiting call.
    taken: usize,
    /// Threads waiting for a job, each with whether it is looking for one without sleeping.
    idle: Vec<Idle>,
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
            inline: InlineGate::default(),
        }))
    }

    /// Which quick synchronous tools of the registry run on their caller's task.
    pub(crate) fn inline_gate(&self) -> &InlineGate {
        &self.0.inline
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `job` on a thread of the pool once a slot is free, waiting at most the pool's
    /// wait or `limit`, whichever is shorter; the slot is given back when `job` returns, and
    /// the delivery it returns is called then, once the thread is idle again (so that a
    /// caller answered at once, calling again, finds it). Returns once the job was handed to
    /// a thread (not when it finished), with how long the call waited and whether that
    /// thread was awake.
    pub(crate) async fn spawn(
        &self,
        job: impl FnOnce() -> Delivery + Send + 'static,
        limit: Option<Duration>,
    ) -> Result<Started, Refusal> {
        let started = std::time::Instant::now();
        let slot = self.take(limit).await?;
        let waited = started.elapsed();
        self.start(Box::new(job), slot)
            .map(|awake| Started { waited, awake })
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
        match crate::shared::deadline::with_deadline(&mut waiter, wait).await {
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

    /// Hands `job` to an idle thread, or starts one; whether the thread was awake.
    fn start(
        &self,
        job: Box<dyn FnOnce() -> Delivery + Send>,
        slot: Slot,
    ) -> Result<bool, std::io::Error> {
        let idle = {
            // An awake thread first (it takes the job without being woken), else the last
            // one to become idle.
            let mut state = self.state();
            let awake = (state.idle.iter()).rposition(|idle| idle.awake.load(Ordering::Acquire));
            match awake {
                Some(index) => Some(state.idle.swap_remove(index)),
                None => state.idle.pop(),
            }
        };
        if let Some(Idle { sender, awake, .. }) = idle {
            let awake = awake.load(Ordering::Acquire);
            // A thread leaves the idle list only under the lock, before it ends: it is there.
            return match sender.send((job, slot)) {
                Ok(()) => Ok(awake),
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
            .map(|_| false)
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
        let awake = Arc::new(AtomicBool::new(false));
        let mut next = Some(first);
        // Whether the job in hand was found by looking without sleeping, and how many jobs
        // ran since the last look (the first job is followed by one).
        let mut paid = false;
        let mut since_look = LOOK_EVERY - 1;
        loop {
            // The next job is looked for a moment before sleeping: when calls come one
            // after another, it is handed over without waking this thread.
            let work = match next.take() {
                Some(work) => Some(work),
                None => {
                    let found = if awake.load(Ordering::Acquire) {
                        spin_up_to(WORKER_SPIN, || receiver.try_recv().ok())
                    } else {
                        None
                    };
                    awake.store(false, Ordering::Release);
                    paid = found.is_some();
                    found
                }
            };
            let (job, slot) = match work {
                Some(work) => work,
                None => match receiver.recv_timeout(IDLE) {
                    Ok(work) => work,
                    Err(_) => {
                        let mut state = self.state();
                        match state.idle.iter().position(|idle| idle.id == id) {
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
            // The job catches its tool's panics; this keeps the thread should it not (its
            // caller then finds its answer's sender dropped).
            let delivery = catch_unwind(AssertUnwindSafe(job)).ok();
            // Idle before the slot is given back, so that whoever takes it finds this thread.
            // Awake (looking for the next job without sleeping) only if it is the pool's one
            // idle thread: with others idle, calls come in parallel rather than one after
            // another, and spinning threads would take the cores from the callers. And only
            // if the last look found a job, or one in `LOOK_EVERY` jobs.
            {
                let mut state = self.state();
                let look = state.idle.is_empty()
                    && spinning_helps()
                    && (paid || since_look + 1 >= LOOK_EVERY);
                since_look = if look { 0 } else { since_look + 1 };
                awake.store(look, Ordering::Release);
                state.idle.push(Idle {
                    id,
                    sender: sender.clone(),
                    awake: awake.clone(),
                });
            }
            drop(slot);
            if let Some(delivery) = delivery {
                let _ = catch_unwind(AssertUnwindSafe(delivery));
            }
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

    /// A job's delivery that does nothing.
    fn unit() -> Delivery {
        Box::new(|| {})
    }

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
                unit()
            };
            pollster::block_on(pool.spawn(job, None)).unwrap();
        }
        // Both threads are busy: a third job waits its bound, then is refused.
        let refused = pollster::block_on(pool.spawn(unit, None)).unwrap_err();
        assert!(
            matches!(refused, Refusal::Waited { threads: 2, .. }),
            "{refused:?}"
        );
        // A slot given back while a call waits goes to it.
        let waiting = {
            let pool = pool.clone();
            std::thread::spawn(move || {
                pollster::block_on(pool.spawn(unit, Some(Duration::from_secs(5))))
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
                    unit()
                },
                None,
            ))
            .unwrap();
            // This one may be handed the slot just as it gives up: the slot must come back.
            let _ = pollster::block_on(pool.spawn(unit, None));
            finished.recv().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(pollster::block_on(pool.spawn(unit, Some(Duration::from_millis(500)))).is_ok());
        assert!(pool.state().taken <= 1);
    }

    /// A job whose delivery reports on `sender`.
    fn reporting(sender: mpsc::Sender<u32>, value: u32) -> impl FnOnce() -> Delivery + Send {
        move || -> Delivery {
            Box::new(move || {
                let _ = sender.send(value);
            })
        }
    }

    /// A job whose delivery, made on its thread once the thread is idle again, hands over
    /// the next job (as a caller answered at once calls again), and notes whether the
    /// hand-over found the thread looking; `left` more after this one, then `done`.
    fn chained(
        pool: BlockingPool,
        looking: Arc<Mutex<Vec<bool>>>,
        done: mpsc::Sender<()>,
        left: u32,
    ) -> impl FnOnce() -> Delivery + Send + 'static {
        move || -> Delivery {
            Box::new(move || {
                if left == 0 {
                    let _ = done.send(());
                    return;
                }
                let next = chained(pool.clone(), looking.clone(), done, left - 1);
                let started = pollster::block_on(pool.spawn(next, None)).expect("a slot is free");
                looking.lock().unwrap().push(started.awake);
            })
        }
    }

    #[test]
    fn a_job_handed_over_as_the_last_one_is_answered_is_taken_awake() {
        // Each job handed over from the last one's delivery: the thread has marked itself
        // looking (the pool's one idle thread, after its first job), the hand-over says so,
        // and the look finds the job, so the thread looks again after it (its last look
        // paid), job after job. No timing in it: the next job is in the channel before the
        // thread looks.
        let pool = BlockingPool::new(4, Duration::from_secs(5));
        let looking = Arc::new(Mutex::new(Vec::new()));
        let (done, finished) = mpsc::channel();
        let jobs = 2 * LOOK_EVERY;
        let first = chained(pool.clone(), looking.clone(), done, jobs);
        pollster::block_on(pool.spawn(first, None)).unwrap();
        finished
            .recv_timeout(Duration::from_secs(10))
            .expect("every job ran");
        let looking = looking.lock().unwrap();
        assert_eq!(looking.len(), jobs as usize);
        let expected = spinning_helps();
        assert!(
            looking.iter().all(|&awake| awake == expected),
            "hand-overs found the thread looking: {looking:?} (expected all {expected})"
        );
        // One thread ran them all.
        assert_eq!(pool.state().idle.len(), 1);
    }

    #[test]
    fn a_thread_stops_looking_without_sleeping_after_a_moment() {
        let pool = BlockingPool::new(1, Duration::from_secs(5));
        let (sender, receiver) = mpsc::channel();
        pollster::block_on(pool.spawn(reporting(sender.clone(), 1), None)).unwrap();
        assert_eq!(receiver.recv().unwrap(), 1);
        // Well past its moment, the idle thread sleeps: the next job wakes it, and the job
        // still runs.
        std::thread::sleep(WORKER_SPIN * 10_000);
        let started = pollster::block_on(pool.spawn(reporting(sender, 2), None)).unwrap();
        assert!(!started.awake, "the thread should be asleep by now");
        assert_eq!(receiver.recv().unwrap(), 2);
    }

    #[test]
    fn calls_far_apart_are_looked_for_one_in_look_every() {
        // Jobs 5 ms apart: a look without sleeping (20 µs) never finds the next one, so a
        // thread looks after its first job and then after one in `LOOK_EVERY`, not after
        // each (which would cost every call the look's CPU for nothing).
        let pool = BlockingPool::new(1, Duration::from_secs(5));
        let looked = Arc::new(Mutex::new(Vec::new()));
        let jobs = 4 * LOOK_EVERY;
        for _ in 0..jobs {
            let (sender, receiver) = mpsc::channel();
            let (pool_in_job, looked) = (pool.clone(), looked.clone());
            let work = move || -> Delivery {
                Box::new(move || {
                    // The delivery runs once the thread is idle again, before it looks.
                    let state = pool_in_job.state();
                    let awake = state
                        .idle
                        .iter()
                        .any(|idle| idle.awake.load(Ordering::SeqCst));
                    looked.lock().unwrap().push(awake);
                    let _ = sender.send(());
                })
            };
            pollster::block_on(pool.spawn(work, None)).unwrap();
            receiver.recv().unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        let looked = looked.lock().unwrap();
        let looks = looked.iter().filter(|&&looked| looked).count();
        if !spinning_helps() {
            assert_eq!(looks, 0, "on one core no thread looks without sleeping");
            return;
        }
        assert!(looked[0], "the first job is followed by a look: {looked:?}");
        // One in `LOOK_EVERY` (4 of 32); a thread held off its core for 5 ms while looking
        // finds the next job, and looks once more: a little slack for a loaded machine.
        let probes = (jobs / LOOK_EVERY) as usize;
        assert!(
            (probes..=probes + 3).contains(&looks),
            "{looks} looks after {jobs} jobs far apart: {looked:?}"
        );
    }

    #[test]
    fn spinning_gives_up_at_its_bound_and_returns_what_is_ready() {
        let started = std::time::Instant::now();
        assert_eq!(spin_up_to(Duration::from_micros(200), || None::<()>), None);
        if spinning_helps() {
            assert!(started.elapsed() >= Duration::from_micros(200));
        }
        assert_eq!(spin_up_to(Duration::ZERO, || Some(1)), None);
        let mut polls = 0;
        let found = spin_up_to(Duration::from_secs(5), || {
            polls += 1;
            (polls == 3).then_some(polls)
        });
        assert_eq!(found, spinning_helps().then_some(3));
    }
}
