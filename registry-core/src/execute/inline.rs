//! When a quick synchronous tool runs on the caller's task instead of a thread of the pool.
//!
//! The hop to the pool and back costs two thread wake-ups (tens of microseconds on a busy
//! machine) for a function that may return in one. So a synchronous `#[tool]` function that
//! has shown itself quick runs inline, on the caller's task, as long as it stays quick:
//!
//! - **Who.** A synchronous tool that does not take a `&ToolContext` (one that does may wait on
//!   its caller, asking a question or sampling, which would deadlock the task it blocks) and
//!   is not declared `blocking`. `non_blocking` tools always run inline; async tools always
//!   run on the caller's task anyway.
//! - **When.** Once its last run on the pool took at most [`QUICK`] (50 µs), since the last
//!   time any tool of the registry ran slow inline (the registry's epoch, below), and not
//!   while it owes quick runs on the pool for running slow inline before.
//! - **One at a time.** At most one inline run at a time per registry: on a multi-threaded
//!   runtime, a tool that turns slow can block one worker, never all of them.
//! - **Turning slow.** An inline run that takes longer than [`QUICK`] moves its tool back to
//!   the pool, owing 4, 16, 64... (at most 65,536) quick runs there before it runs inline
//!   again, and starts a new epoch: every tool of the registry must run quick on the pool
//!   once more before it runs inline. So a tool that suddenly blocks for seconds stalls its
//!   caller's worker for that one call, and many tools turning slow at once stall it once.
//!
//! A deadline cannot interrupt an inline run: a call that returns past it is answered
//! `TimedOut`, its result discarded, as for a `non_blocking` tool.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

/// The longest run that counts as quick.
pub(crate) const QUICK: Duration = Duration::from_micros(50);

/// An epoch no tool was ever quick in: a tool starts on the pool.
const NEVER: u32 = u32::MAX;

/// The registry's share: its epoch, and whether its one inline run is taken.
#[derive(Debug, Default)]
pub(crate) struct InlineGate {
    /// Advanced by every slow inline run (wrapping past [`NEVER`]).
    epoch: AtomicU32,
    busy: AtomicBool,
}

/// A tool's share: whether and how long ago it proved quick.
#[derive(Debug)]
pub(crate) struct InlineRecord {
    /// The registry's epoch at the tool's last quick run on the pool; [`NEVER`] after a
    /// slow one.
    quick_in: AtomicU32,
    /// Quick runs on the pool it still owes before it runs inline.
    owed: AtomicU32,
    /// How many times it ran slow inline.
    strikes: AtomicU32,
}

impl Default for InlineRecord {
    fn default() -> Self {
        InlineRecord {
            quick_in: AtomicU32::new(NEVER),
            owed: AtomicU32::new(0),
            strikes: AtomicU32::new(0),
        }
    }
}

/// The registry's one inline run, given back when dropped.
pub(crate) struct InlineSlot<'a>(&'a InlineGate);

impl Drop for InlineSlot<'_> {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

impl InlineGate {
    fn epoch(&self) -> u32 {
        match self.epoch.load(Ordering::Acquire) {
            NEVER => 0,
            epoch => epoch,
        }
    }

    /// The inline slot for the tool of `record`, if it may run inline now (see the module's
    /// rules; the caller has checked that it is synchronous, takes no context and is not
    /// `blocking`).
    pub(crate) fn admit(&self, record: &InlineRecord) -> Option<InlineSlot<'_>> {
        if record.quick_in.load(Ordering::Relaxed) != self.epoch()
            || record.owed.load(Ordering::Relaxed) > 0
        {
            return None;
        }
        self.busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            .then_some(InlineSlot(self))
    }

    /// Notes an inline run of the tool of `record` that took `took`: past [`QUICK`], the tool
    /// goes back to the pool, owing quick runs there, and a new epoch starts.
    pub(crate) fn ran_inline(&self, record: &InlineRecord, took: Duration) {
        if took <= QUICK {
            return;
        }
        let strikes = record
            .strikes
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        record
            .owed
            .store(1 << (2 * strikes.min(8)), Ordering::Relaxed);
        record.quick_in.store(NEVER, Ordering::Relaxed);
        let next = self.epoch().wrapping_add(1);
        self.epoch
            .store(if next == NEVER { 0 } else { next }, Ordering::Release);
    }

    /// Notes a run of the tool of `record` on the pool that took `took`.
    pub(crate) fn ran_on_pool(&self, record: &InlineRecord, took: Duration) {
        if took > QUICK {
            record.quick_in.store(NEVER, Ordering::Relaxed);
            return;
        }
        // Saturating at zero: a race with another run only repays one more.
        let _ = record
            .owed
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |owed| {
                owed.checked_sub(1)
            });
        record.quick_in.store(self.epoch(), Ordering::Relaxed);
    }
}
