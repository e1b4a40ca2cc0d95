//! When a quick synchronous tool runs on the caller's task instead of a thread of the pool.
//!
//! The hop to the pool and back costs two thread wake-ups (tens of microseconds on a busy
//! machine) for a function that may return in one. So a synchronous `#[tool]` function that
//! has shown itself quick runs inline, on the caller's task, while it stays so:
//!
//! - **Who.** A synchronous tool that does not take a `&ToolContext` (one that does may wait on
//!   its caller, asking a question or sampling, which would deadlock the task it blocks) and
//!   is not declared `blocking`. `non_blocking` tools always run inline; async tools always
//!   run on the caller's task anyway.
//! - **When.** Once its last run on the pool took at most [`QUICK`] (50 µs), since the last
//!   time any tool of the registry ran slow inline (the registry's epoch, below), and while
//!   its version is neither sent to the pool for a time nor stalled (below).
//! - **One at a time.** At most one inline run at a time per registry: on a multi-threaded
//!   runtime, a tool that turns slow can block one worker, never all of them. And at most one
//!   inline run at a time per tool version in the process, whatever registry runs it.
//! - **Slow, not stalled.** An inline run that takes longer than [`QUICK`] but at most
//!   [`STALL`] (5 ms) sends its tool's version, by its
//!   [`version_fingerprint`](crate::Tool::version_fingerprint), to the pool, in every registry,
//!   for a time that doubles with each such run of that version: [`POOLED_FOR`] (100 ms),
//!   200 ms, 400 ms, ... at most [`POOLED_AT_MOST`] (1 h). Only the clock ends that time: no call, quick or
//!   slow, by any caller, shortens it. After it, the version runs inline again once it has
//!   run quick on the pool.
//! - **Stalled.** An inline run that takes longer than [`STALL`] is a stall: its version runs
//!   on the pool for the rest of the process, in every registry, however quick it is there
//!   afterwards and whoever calls it. Only a new version (another definition, output schema
//!   or policy) may run inline again, once it has proved quick on the pool itself.
//! - **Epoch.** Either slow run also starts a new epoch: every tool of the registry must run
//!   quick on the pool once more before it runs inline, so that many tools turning slow at
//!   once stall their caller's worker once.
//!
//! A run the machine preempts past [`QUICK`] counts as slow too, and one preempted past
//! [`STALL`] as a stall: the thread's own CPU time, or its context switches, would tell them
//! apart, but reading them is a system call per run (hundreds of nanoseconds), more than
//! running inline adds to `call_blocking` (about 150). A preemption of a few milliseconds (the
//! common kind on a loaded host) costs a quick tool 100 ms or more on the pool, not the rest
//! of the process.
//!
//! So the worst case, per tool version and process, is one stall, of that one run's length,
//! plus runs between [`QUICK`] and [`STALL`] at most once per interval: counting from the
//! first of these, at most `1 + log2(1 + 10 T)` within `T` seconds (16 in the first hour),
//! then one an hour. A caller who learns which input makes a tool slow gets one stall from it, not
//! one per so many quick calls. The versions are kept in a table of the process, at most
//! [`MAX_VERSIONS`]; a version first seen once it is full runs on the pool always (a program
//! declares far fewer tools: only `#[tool]` functions run inline by measure, and their
//! versions are fixed when the program is compiled).
//!
//! A deadline cannot interrupt an inline run: a call that returns past it is answered
//! `TimedOut`, its result discarded, as for a `non_blocking` tool.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::shared::fingerprint::Fingerprint;

/// The longest run that counts as quick.
pub(crate) const QUICK: Duration = Duration::from_micros(50);

/// The longest inline run that is not a stall: a longer one keeps its version on the pool for
/// the rest of the process.
pub(crate) const STALL: Duration = Duration::from_millis(5);

/// How long the first inline run between [`QUICK`] and [`STALL`] sends a version to the pool;
/// each next one of the same version doubles it, up to [`POOLED_AT_MOST`].
pub(crate) const POOLED_FOR: Duration = Duration::from_millis(100);

/// The longest time one slow (not stalled) inline run sends a version to the pool.
pub(crate) const POOLED_AT_MOST: Duration = Duration::from_secs(60 * 60);

/// At most this many tool versions of the process are kept to run inline; a version first
/// seen once the table is full runs on the pool always.
pub(crate) const MAX_VERSIONS: usize = 4_096;

/// An epoch no tool was ever quick in: a tool starts on the pool.
const NEVER: u32 = u32::MAX;

/// A version not running inline now, and free to.
const IDLE: u64 = 0;
/// A version running inline now (in some registry of the process).
const RUNNING: u64 = 1;
/// A version that stalled: it runs on the pool for the rest of the process.
const STALLED: u64 = u64::MAX;
/// A version sent to the pool until the [`clock`] reads `until`: `POOLED + until`.
const POOLED: u64 = 2;

/// The versions of the process that have run quick on a pool, by version fingerprint.
static VERSIONS: LazyLock<Mutex<HashMap<Fingerprint, Arc<VersionRecord>>>> =
    LazyLock::new(Default::default);

/// Milliseconds since the first time the clock was read in the process.
fn clock() -> u64 {
    static START: LazyLock<Instant> = LazyLock::new(Instant::now);
    u64::try_from(START.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// How long the `demotions`-th slow (not stalled) inline run of a version sends it to the
/// pool: [`POOLED_FOR`], doubled at each one after the first, at most [`POOLED_AT_MOST`].
pub(crate) fn pooled_for(demotions: u32) -> Duration {
    let doublings = demotions.saturating_sub(1).min(31);
    POOLED_FOR
        .saturating_mul(1 << doublings)
        .min(POOLED_AT_MOST)
}

/// A tool version's share, one in the process: whether it runs inline now, is sent to the
/// pool and until when, or stalled once; and how many times it was sent there.
#[derive(Debug, Default)]
pub(crate) struct VersionRecord {
    /// [`IDLE`], [`RUNNING`], [`STALLED`], or [`POOLED`] plus the [`clock`] reading at which
    /// the version may come back: one word, so that bringing it back cannot undo a later
    /// sending away.
    state: AtomicU64,
    /// The slow (not stalled) inline runs of the version; changed only by the holder of its
    /// one inline run.
    demotions: AtomicU32,
}

impl VersionRecord {
    /// Frees the version to run inline again if the time it was sent to the pool for is over
    /// (read on the pool only, so a quick inline run reads no clock).
    fn come_back_if_due(&self) {
        let state = self.state.load(Ordering::Acquire);
        if state == IDLE || state == RUNNING || state == STALLED {
            return;
        }
        if clock() >= state - POOLED {
            // Fails, as it should, if the version was freed, ran and was sent away again.
            let _ = self
                .state
                .compare_exchange(state, IDLE, Ordering::Release, Ordering::Relaxed);
        }
    }
}

/// The record of the version `fingerprint`, made the first time it is asked for; `None` once
/// [`MAX_VERSIONS`] are kept and this one is not.
fn version_record(fingerprint: Fingerprint) -> Option<Arc<VersionRecord>> {
    let mut versions = VERSIONS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(record) = versions.get(&fingerprint) {
        return Some(record.clone());
    }
    if versions.len() >= MAX_VERSIONS {
        return None;
    }
    Some(versions.entry(fingerprint).or_default().clone())
}

/// The registry's share: its epoch, and whether its one inline run is taken.
#[derive(Debug, Default)]
pub(crate) struct InlineGate {
    /// Advanced by every slow inline run (wrapping past [`NEVER`]).
    epoch: AtomicU32,
    busy: AtomicBool,
}

/// A tool's share: whether it proved quick on the pool in the registry's epoch, and its
/// version's record, found at its first quick run on the pool.
#[derive(Debug)]
pub(crate) struct InlineRecord {
    /// The registry's epoch at the tool's last quick run on the pool; [`NEVER`] after a
    /// slow one.
    quick_in: AtomicU32,
    version: OnceLock<Arc<VersionRecord>>,
}

impl Default for InlineRecord {
    fn default() -> Self {
        InlineRecord {
            quick_in: AtomicU32::new(NEVER),
            version: OnceLock::new(),
        }
    }
}

/// The registry's one inline run and the version's, given back by [`end`](Self::end). Dropped
/// without it (which only an unwinding panic past the tool's own catch could do), the version
/// counts as stalled: failing closed.
pub(crate) struct InlineSlot<'a> {
    gate: &'a InlineGate,
    record: &'a InlineRecord,
    version: &'a VersionRecord,
    ended: bool,
}

impl InlineSlot<'_> {
    /// Notes that the inline run took `took`, then gives the slots back: past [`QUICK`], the
    /// version is sent to the pool (for a time, or past [`STALL`] for good) and a new epoch
    /// starts, both before another run can take the slots.
    pub(crate) fn end(mut self, took: Duration) {
        self.ended = true;
        if took <= QUICK {
            self.version.state.store(IDLE, Ordering::Release);
        } else if took <= STALL {
            self.slow(POOLED.saturating_add(self.sent_to_pool_until()));
        } else {
            self.slow(STALLED);
        }
    }

    /// Counts one more slow run of the version; the [`clock`] reading at which its time on
    /// the pool ends.
    fn sent_to_pool_until(&self) -> u64 {
        let demotions = self
            .version
            .demotions
            .load(Ordering::Relaxed)
            .saturating_add(1);
        self.version.demotions.store(demotions, Ordering::Relaxed);
        let pooled = u64::try_from(pooled_for(demotions).as_millis()).unwrap_or(u64::MAX);
        // Never STALLED by mistake: the clock would have to run for 584 million years.
        clock().saturating_add(pooled).min(STALLED - POOLED - 1)
    }

    fn slow(&self, state: u64) {
        self.version.state.store(state, Ordering::Release);
        self.record.quick_in.store(NEVER, Ordering::Relaxed);
        let next = self.gate.epoch().wrapping_add(1);
        self.gate
            .epoch
            .store(if next == NEVER { 0 } else { next }, Ordering::Release);
    }
}

impl Drop for InlineSlot<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.slow(STALLED);
        }
        self.gate.busy.store(false, Ordering::Release);
    }
}

impl InlineGate {
    fn epoch(&self) -> u32 {
        match self.epoch.load(Ordering::Acquire) {
            NEVER => 0,
            epoch => epoch,
        }
    }

    /// The inline slots for the tool of `record`, if it may run inline now (see the module's
    /// rules; the caller has checked that it is synchronous, takes no context and is not
    /// `blocking`).
    pub(crate) fn admit<'a>(&'a self, record: &'a InlineRecord) -> Option<InlineSlot<'a>> {
        let version = record.version.get()?;
        if record.quick_in.load(Ordering::Relaxed) != self.epoch() {
            return None;
        }
        version
            .state
            .compare_exchange(IDLE, RUNNING, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        if self
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            version.state.store(IDLE, Ordering::Release);
            return None;
        }
        Some(InlineSlot {
            gate: self,
            record,
            version,
            ended: false,
        })
    }

    /// Notes a run of the tool of `record` on the pool that took `took`; `version` gives its
    /// version fingerprint, asked once per tool, at its first quick run. A quick run brings
    /// the version back from the pool if its time there is over.
    pub(crate) fn ran_on_pool(
        &self,
        record: &InlineRecord,
        took: Duration,
        version: impl FnOnce() -> Fingerprint,
    ) {
        if took > QUICK {
            record.quick_in.store(NEVER, Ordering::Relaxed);
            return;
        }
        let found = match record.version.get() {
            Some(found) => found,
            None => {
                let Some(found) = version_record(version()) else {
                    return;
                };
                // A race with another run of the same tool sets the same record.
                record.version.get_or_init(|| found)
            }
        };
        found.come_back_if_due();
        record.quick_in.store(self.epoch(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick_on_pool(gate: &InlineGate, record: &InlineRecord, version: u128) {
        gate.ran_on_pool(record, Duration::from_micros(1), || {
            Fingerprint::of_bytes(&version.to_le_bytes())
        });
    }

    /// When the version of `record` may come back from the pool, by the [`clock`].
    fn pooled_until(record: &InlineRecord) -> u64 {
        let state = record.version.get().unwrap().state.load(Ordering::Acquire);
        assert!(state > RUNNING && state != STALLED, "not pooled: {state}");
        state - POOLED
    }

    /// Ends the version's time on the pool now, as the clock would.
    fn time_passes(record: &InlineRecord) {
        let version = record.version.get().unwrap();
        let state = version.state.load(Ordering::Acquire);
        if state > RUNNING && state != STALLED {
            version.state.store(POOLED, Ordering::Release);
        }
    }

    #[test]
    fn the_time_on_the_pool_doubles_with_each_slow_run_up_to_an_hour() {
        let millis = |demotions| pooled_for(demotions).as_millis();
        assert_eq!(pooled_for(1), POOLED_FOR);
        assert_eq!(POOLED_FOR, Duration::from_millis(100));
        assert_eq!(
            (1..=16).map(millis).collect::<Vec<_>>(),
            [
                100, 200, 400, 800, 1_600, 3_200, 6_400, 12_800, 25_600, 51_200, 102_400, 204_800,
                409_600, 819_200, 1_638_400, 3_276_800
            ]
        );
        assert_eq!(pooled_for(17), POOLED_AT_MOST);
        assert_eq!(POOLED_AT_MOST, Duration::from_secs(3_600));
        for demotions in [18, 32, 33, 64, 1_000, u32::MAX] {
            assert_eq!(pooled_for(demotions), POOLED_AT_MOST, "{demotions}");
        }
        // In the first hour: 16 slow runs at most (each waits out the previous ones' times).
        let mut at = Duration::ZERO;
        let mut runs = 0;
        while at <= POOLED_AT_MOST {
            runs += 1;
            at += pooled_for(runs);
        }
        assert_eq!(runs, 16);
    }

    #[test]
    fn a_slow_run_sends_its_version_to_the_pool_for_a_time_that_only_the_clock_ends() {
        let version = 0x510e_u128 << 64;
        let gate = InlineGate::default();
        let record = InlineRecord::default();
        quick_on_pool(&gate, &record, version);
        let before = clock();
        gate.admit(&record)
            .expect("quick on the pool")
            .end(QUICK + Duration::from_micros(1));
        let first = pooled_until(&record);
        let base = u64::try_from(POOLED_FOR.as_millis()).unwrap();
        assert!((before + base..=clock() + base).contains(&first), "{first}");
        // No quick run anywhere, however many, brings it back early, in any registry.
        let (other_gate, other) = (InlineGate::default(), InlineRecord::default());
        for _ in 0..1_000 {
            quick_on_pool(&gate, &record, version);
            quick_on_pool(&other_gate, &other, version);
            assert!(gate.admit(&record).is_none());
            assert!(other_gate.admit(&other).is_none());
        }
        assert_eq!(pooled_until(&record), first);
        // Once the time is over, a quick run on the pool brings it back.
        time_passes(&record);
        assert!(gate.admit(&record).is_none(), "back before a quick run");
        quick_on_pool(&gate, &record, version);
        gate.admit(&record).expect("back").end(Duration::ZERO);
        // The next slow run sends it away for twice as long, the one after for four times.
        for (n, factor) in [(2_u64, 2_u64), (3, 4)] {
            let before = clock();
            gate.admit(&record).expect("back").end(STALL);
            let until = pooled_until(&record);
            assert!(
                (before + base * factor..=clock() + base * factor).contains(&until),
                "slow run {n}: {until} from {before}"
            );
            time_passes(&record);
            quick_on_pool(&gate, &record, version);
        }
    }

    #[test]
    fn a_version_that_stalled_inline_never_runs_inline_again_in_any_registry() {
        let version = 0x5107_u128 << 64;
        let gate = InlineGate::default();
        let record = InlineRecord::default();
        assert!(gate.admit(&record).is_none(), "inline before any pool run");
        quick_on_pool(&gate, &record, version);
        gate.admit(&record).expect("quick on the pool").end(QUICK);
        gate.admit(&record)
            .expect("still quick")
            .end(STALL + Duration::from_micros(1));
        for _ in 0..1_000 {
            time_passes(&record);
            quick_on_pool(&gate, &record, version);
            assert!(gate.admit(&record).is_none());
        }
        // The same version in another registry (another tool record, another gate).
        let (other_gate, other) = (InlineGate::default(), InlineRecord::default());
        quick_on_pool(&other_gate, &other, version);
        assert!(other_gate.admit(&other).is_none());
        // A new version may.
        let fresh = InlineRecord::default();
        quick_on_pool(&gate, &fresh, version + 1);
        assert!(gate.admit(&fresh).is_some());
    }

    #[test]
    fn a_slow_run_starts_a_new_epoch_for_every_tool_of_the_registry() {
        let version = 0xe0c_u128 << 64;
        let gate = InlineGate::default();
        let (slow, other) = (InlineRecord::default(), InlineRecord::default());
        quick_on_pool(&gate, &slow, version);
        quick_on_pool(&gate, &other, version + 1);
        gate.admit(&slow)
            .expect("quick")
            .end(Duration::from_millis(1));
        assert!(gate.admit(&other).is_none(), "inline in the old epoch");
        quick_on_pool(&gate, &other, version + 1);
        gate.admit(&other).expect("quick again").end(Duration::ZERO);
    }

    #[test]
    fn one_inline_run_at_a_time_per_version_and_per_registry() {
        let version = 0x0e_u128 << 64;
        let (first, second) = (InlineGate::default(), InlineGate::default());
        let (a, b) = (InlineRecord::default(), InlineRecord::default());
        quick_on_pool(&first, &a, version);
        quick_on_pool(&second, &b, version);
        let slot = first.admit(&a).expect("quick");
        // The same version in another registry waits for it.
        assert!(second.admit(&b).is_none());
        // Another version in the same registry too.
        let c = InlineRecord::default();
        quick_on_pool(&first, &c, version + 1);
        assert!(first.admit(&c).is_none());
        slot.end(Duration::ZERO);
        second
            .admit(&b)
            .expect("the version is free")
            .end(Duration::ZERO);
        first
            .admit(&c)
            .expect("the registry is free")
            .end(Duration::ZERO);
    }

    #[test]
    fn a_slot_dropped_without_its_end_counts_as_a_stall() {
        let version = 0xd0_u128 << 64;
        let gate = InlineGate::default();
        let record = InlineRecord::default();
        quick_on_pool(&gate, &record, version);
        drop(gate.admit(&record).expect("quick"));
        time_passes(&record);
        quick_on_pool(&gate, &record, version);
        assert!(gate.admit(&record).is_none());
    }
}
