//! When a quick synchronous tool runs on the caller's task instead of a thread of the pool.
//!
//! The hop to the pool and back costs two thread wake-ups (tens of microseconds on a busy
//! machine) for a function that may return in one. So a synchronous `#[tool]` function that
//! has shown itself quick runs inline, on the caller's task, until the first time it is not:
//!
//! - **Who.** A synchronous tool that does not take a `&ToolContext` (one that does may wait on
//!   its caller, asking a question or sampling, which would deadlock the task it blocks) and
//!   is not declared `blocking`. `non_blocking` tools always run inline; async tools always
//!   run on the caller's task anyway.
//! - **When.** Once its last run on the pool took at most [`QUICK`] (50 µs), since the last
//!   time any tool of the registry ran slow inline (the registry's epoch, below), and never
//!   again once its version has run slow inline.
//! - **One at a time.** At most one inline run at a time per registry: on a multi-threaded
//!   runtime, a tool that turns slow can block one worker, never all of them. And at most one
//!   inline run at a time per tool version in the process, whatever registry runs it.
//! - **Turning slow.** An inline run that takes longer than [`QUICK`] marks its tool's
//!   version, by its [`version_fingerprint`](crate::Tool::version_fingerprint), as one that
//!   stalled: that version runs on the pool for the rest of the process, in every registry,
//!   however quick it is there afterwards and whoever calls it. Only a new version (another
//!   definition, output schema or policy) may run inline again, once it has proved quick on
//!   the pool itself. The slow run also starts a new epoch: every tool of the registry must
//!   run quick on the pool once more before it runs inline, so that many tools turning slow
//!   at once stall their caller's worker once.
//!
//! A run the machine preempts past [`QUICK`] counts as slow too: the thread's own CPU time, or
//! its context switches, would tell the two apart, but reading them is a system call per run
//! (hundreds of nanoseconds), more than running inline adds to `call_blocking` (about 150). On
//! a loaded host a quick tool so ends on the pool soon.
//!
//! So the worst case is one stall per tool version per process, of that one run's length: a
//! caller who learns which input makes a tool slow gets one stall from it, not one per so many
//! quick calls. The versions are kept in a table of the process, at most [`MAX_VERSIONS`];
//! a version first seen once it is full runs on the pool always (a program declares far fewer
//! tools: only `#[tool]` functions run inline by measure, and their versions are fixed when
//! the program is compiled).
//!
//! A deadline cannot interrupt an inline run: a call that returns past it is answered
//! `TimedOut`, its result discarded, as for a `non_blocking` tool.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use crate::discover::fingerprint::Fingerprint;

/// The longest run that counts as quick.
pub(crate) const QUICK: Duration = Duration::from_micros(50);

/// At most this many tool versions of the process are kept to run inline; a version first
/// seen once the table is full runs on the pool always.
pub(crate) const MAX_VERSIONS: usize = 4_096;

/// An epoch no tool was ever quick in: a tool starts on the pool.
const NEVER: u32 = u32::MAX;

/// A version not running inline now.
const IDLE: u8 = 0;
/// A version running inline now (in some registry of the process).
const RUNNING: u8 = 1;
/// A version that ran slow inline: it runs on the pool for the rest of the process.
const STALLED: u8 = 2;

/// The versions of the process that have run quick on a pool, by version fingerprint.
static VERSIONS: LazyLock<Mutex<HashMap<Fingerprint, Arc<VersionRecord>>>> =
    LazyLock::new(Default::default);

/// A tool version's share, one in the process: whether it runs inline now, or stalled once.
#[derive(Debug, Default)]
pub(crate) struct VersionRecord {
    state: AtomicU8,
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
    /// version runs on the pool from now on and a new epoch starts, both before another run
    /// can take the slots.
    pub(crate) fn end(mut self, took: Duration) {
        self.ended = true;
        if took <= QUICK {
            self.version.state.store(IDLE, Ordering::Release);
        } else {
            self.stalled();
        }
    }

    fn stalled(&self) {
        self.version.state.store(STALLED, Ordering::Release);
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
            self.stalled();
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
    /// version fingerprint, asked once per tool, at its first quick run.
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
        if record.version.get().is_none() {
            let Some(found) = version_record(version()) else {
                return;
            };
            // A race with another run of the same tool sets the same record.
            let _ = record.version.set(found);
        }
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

    #[test]
    fn a_version_that_ran_slow_inline_never_runs_inline_again_in_any_registry() {
        let version = 0x5107_u128 << 64;
        let gate = InlineGate::default();
        let record = InlineRecord::default();
        assert!(gate.admit(&record).is_none(), "inline before any pool run");
        quick_on_pool(&gate, &record, version);
        gate.admit(&record).expect("quick on the pool").end(QUICK);
        gate.admit(&record)
            .expect("still quick")
            .end(Duration::from_millis(5));
        for _ in 0..1_000 {
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
        quick_on_pool(&gate, &record, version);
        assert!(gate.admit(&record).is_none());
    }
}
