//! Discovery: projecting the registry onto one subject, fast.
//!
//! A [`Snapshot`] is the registry's current versions, in name order. What projecting it
//! needs is compiled once per snapshot (the first time a run is opened from it) into a
//! [`Projection`]: scopes and tenants interned, and for each the set of tools it admits as
//! bits (or a short list), so that opening a run over 10,000 tools is a few passes over words
//! of 64 tools, in which the visible ones come out in name order, then one check of
//! revocation and readiness per visible tool.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use crate::access::rule::{AccessRule, hidden_by};
use crate::execute::tool::Tool;
use crate::gate::ReadyState;
use crate::project::bits::{AtomicBits, Bits, Members};
use crate::project::index::SearchIndex;
use crate::search::embed::{Embedder, Vectors};
use crate::shared::subject::{Access, Subject};

/// The per-tool state that changes after build: which versions are revoked.
#[derive(Debug, Default)]
pub(crate) struct SlotState {
    /// Every version up to this one is revoked (versions start at 1; 0: none is).
    pub(crate) revoked_through: AtomicU64,
    /// Whether the tool passed its readiness check, the last time it ran.
    pub(crate) ready: ReadyState,
}

impl SlotState {
    pub(crate) fn is_revoked(&self, version: u64) -> bool {
        version <= self.revoked_through.load(Ordering::Acquire)
    }
}

/// The slots whose tool a new run may not see whatever its subject: those whose current
/// version is revoked, and those not ready, as bits that opening a run takes out of what the
/// subject is admitted to (two passes over words of 64 slots, no read per tool).
///
/// Kept by the registry beside each slot's [`SlotState`], which calls check, and changed
/// with it: `revoked` only while changes are serialized (a revocation sets a slot's bit after
/// its `revoked_through`; a replacement or a restore, which install a version no revocation
/// covers, clear it while holding the snapshot's write lock, so a projection sees the old
/// snapshot with the bit or the new one without); `not_ready` under the readiness state's
/// lock, with its flag.
#[derive(Debug)]
pub(crate) struct Unavailable {
    pub(crate) revoked: AtomicBits,
    pub(crate) not_ready: AtomicBits,
}

impl Unavailable {
    /// Nothing unavailable, over `slots` slots.
    pub(crate) fn new(slots: usize) -> Unavailable {
        Unavailable {
            revoked: AtomicBits::new(slots),
            not_ready: AtomicBits::new(slots),
        }
    }
}

/// The current version of every tool, in name order.
#[derive(Debug)]
pub(crate) struct Snapshot {
    /// Slot `i`'s tool at its current version: `entries[i].slot == i`.
    entries: Box<[Entry]>,
    /// What projecting needs, compiled the first time a run is opened from this snapshot.
    projection: OnceLock<Projection>,
    /// The search index of the tools, built the first time a run of this snapshot searches.
    index: OnceLock<SearchIndex>,
    /// The tools' vectors, computed the first time a run of this snapshot searches with an
    /// embedder; `None` if the embedder failed (then this snapshot's searches are lexical).
    vectors: OnceLock<Option<Vectors>>,
}

/// What a run's set fingerprint reads of each tool, side by side in slot order, so that it
/// reads two arrays in order rather than each visible tool's own memory: every tool's name
/// after its length (8 bytes, little-endian), one after the other, and per slot one record of
/// 32 bytes (two to a cache line) with where its name is and its fingerprint once computed.
#[derive(Debug)]
struct RunReads {
    names: Box<[u8]>,
    slots: Box<[SlotReads]>,
}

/// Where one slot's length and name are in [`RunReads::names`], and its tool's fingerprint
/// once computed.
///
/// The fingerprint is kept as two words and a flag rather than in a `OnceLock` (32 bytes
/// alone): two threads that compute it at once store the same value, and a reader reads the
/// words only after seeing the flag set.
#[derive(Debug)]
struct SlotReads {
    /// Where the slot's length and name start in `names`; they end where the next slot's
    /// start (the last slot's, at the end of `names`).
    start: usize,
    low: AtomicU64,
    high: AtomicU64,
    known: AtomicU32,
}

impl RunReads {
    fn of(entries: &[Entry]) -> RunReads {
        let mut names = Vec::with_capacity(entries.iter().map(|e| 8 + e.tool.name().len()).sum());
        let slots = entries
            .iter()
            .map(|entry| {
                let name = entry.tool.name().as_bytes();
                let start = names.len();
                names.extend_from_slice(&(name.len() as u64).to_le_bytes());
                names.extend_from_slice(name);
                SlotReads {
                    start,
                    low: AtomicU64::new(0),
                    high: AtomicU64::new(0),
                    known: AtomicU32::new(0),
                }
            })
            .collect();
        RunReads {
            names: names.into(),
            slots,
        }
    }

    /// The name of `slot` with its length before it, as the set fingerprint hashes it, and its
    /// fingerprint, computed by `compute` the first time.
    #[inline]
    fn get(
        &self,
        slot: usize,
        compute: impl FnOnce() -> crate::Fingerprint,
    ) -> (&[u8], crate::Fingerprint) {
        let record = &self.slots[slot];
        let end = self
            .slots
            .get(slot + 1)
            .map_or(self.names.len(), |next| next.start);
        let name = &self.names[record.start..end];
        if record.known.load(Ordering::Acquire) == 1 {
            let bits = u128::from(record.low.load(Ordering::Relaxed))
                | u128::from(record.high.load(Ordering::Relaxed)) << 64;
            return (name, crate::Fingerprint::from_u128(bits));
        }
        let fingerprint = compute();
        let bits = fingerprint.as_u128();
        #[expect(
            clippy::cast_possible_truncation,
            reason = "the two halves, on purpose"
        )]
        {
            record.low.store(bits as u64, Ordering::Relaxed);
            record.high.store((bits >> 64) as u64, Ordering::Relaxed);
        }
        record.known.store(1, Ordering::Release);
        (name, fingerprint)
    }
}

/// One tool of a snapshot: the version runs projected from it are shown and call.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) slot: usize,
    pub(crate) version: u64,
    pub(crate) tool: Tool,
}

/// A snapshot's requirements compiled for projection.
#[derive(Debug)]
struct Projection {
    scope_ids: HashMap<Box<str>, usize>,
    tenant_ids: HashMap<Box<str>, usize>,
    /// The tools that require no scope.
    unscoped: Bits,
    /// Per scope id: the tools whose only scope it is.
    single: Vec<Members>,
    /// Per scope id: the tools that require two scopes or more, filed under their first,
    /// with every scope id they require.
    multi: Vec<Vec<(usize, Box<[usize]>)>>,
    /// The tools restricted to some tenants.
    restricted: Bits,
    /// Whether any tool is restricted to tenants.
    any_restricted: bool,
    /// Per tenant id: the tools restricted to tenants that admit it.
    admits: Vec<Members>,
    /// The tools with the `read_only` hint, all a read-only run may see.
    read_only: Bits,
    /// The tools that declare attributes: only these are checked against a subject's.
    attributed: Bits,
    /// Whether any tool declares attributes.
    any_attributed: bool,
    /// What the set fingerprint reads of each visible tool.
    reads: RunReads,
    /// The visible sets of recent runs, with their fingerprints.
    recent: RecentSets,
}

/// How many distinct visible sets a snapshot remembers with their fingerprints.
///
/// A deployment's runs fall into few roles (a tenant's scopes, an agent's), and every run of
/// one role is allowed the same set; this many roles at once open runs without hashing
/// their set again. Bounded: at most this many sets of at most every slot each.
pub(crate) const RECENT_SETS: usize = 16;

/// The last [`RECENT_SETS`] distinct visible sets of a snapshot's runs and their set
/// fingerprints, oldest first. A set's fingerprint depends only on the snapshot (whose tools
/// never change) and the slots, so a remembered one is the value hashing would give.
///
/// Runs opened at once on several threads look for their set together (a read lock); only a
/// set not remembered yet takes the write lock, once its fingerprint is computed.
#[derive(Debug, Default)]
struct RecentSets {
    sets: RwLock<VecDeque<Arc<FrozenSet>>>,
}

/// One visible set of a snapshot as its runs keep it: shared by every run of the snapshot
/// allowed the same set while the snapshot remembers it.
#[derive(Debug)]
pub(crate) struct FrozenSet {
    /// The visible slots, increasing, which is name order.
    pub(crate) slots: Box<[usize]>,
    /// What the runs were shown: each tool's name and fingerprint.
    pub(crate) fingerprint: crate::Fingerprint,
    /// What the runs may execute: each tool's name and version fingerprint, computed the
    /// first time a run of the set asks (its projection event, when audited).
    pub(crate) versions: OnceLock<crate::Fingerprint>,
}

impl RecentSets {
    fn find(&self, visible: &[usize]) -> Option<Arc<FrozenSet>> {
        let sets = self.sets.read().unwrap_or_else(PoisonError::into_inner);
        sets.iter().find(|set| *set.slots == *visible).cloned()
    }

    /// Remembers `set`, or gives back the same set if another run remembered it meanwhile.
    fn remember(&self, set: Arc<FrozenSet>) -> Arc<FrozenSet> {
        let mut sets = self.sets.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = sets.iter().find(|known| known.slots == set.slots) {
            return known.clone();
        }
        if sets.len() == RECENT_SETS {
            sets.pop_front();
        }
        sets.push_back(set.clone());
        set
    }
}

/// The id of `name` in `ids`, added if new.
fn intern(ids: &mut HashMap<Box<str>, usize>, name: &str) -> usize {
    if let Some(&id) = ids.get(name) {
        return id;
    }
    let id = ids.len();
    ids.insert(name.into(), id);
    id
}

impl Projection {
    fn build(entries: &[Entry]) -> Projection {
        let len = entries.len();
        let mut scope_ids = HashMap::new();
        let mut tenant_ids = HashMap::new();
        let mut unscoped = Bits::new(len);
        let mut restricted = Bits::new(len);
        let mut read_only = Bits::new(len);
        let mut attributed = Bits::new(len);
        let mut single: Vec<Vec<usize>> = Vec::new();
        let mut multi: Vec<Vec<(usize, Box<[usize]>)>> = Vec::new();
        let mut admits: Vec<Vec<usize>> = Vec::new();
        for (slot, entry) in entries.iter().enumerate() {
            let settings = entry.tool.settings();
            let at = slot;
            let scopes: Vec<usize> = settings
                .scopes
                .iter()
                .map(|scope| intern(&mut scope_ids, scope.as_str()))
                .collect();
            single.resize_with(scope_ids.len(), Vec::new);
            multi.resize_with(scope_ids.len(), Vec::new);
            match scopes[..] {
                [] => unscoped.insert(slot),
                [only] => single[only].push(at),
                [first, ..] => multi[first].push((at, scopes.into_boxed_slice())),
            }
            if !settings.tenants.is_empty() {
                restricted.insert(slot);
            }
            for tenant in &settings.tenants {
                let id = intern(&mut tenant_ids, tenant);
                admits.resize_with(tenant_ids.len(), Vec::new);
                // A tenant listed twice by one tool: its slot once.
                if admits[id].last() != Some(&at) {
                    admits[id].push(at);
                }
            }
            if settings.hints.read_only {
                read_only.insert(slot);
            }
            if !settings.attributes.is_empty() {
                attributed.insert(slot);
            }
        }
        Projection {
            scope_ids,
            tenant_ids,
            unscoped,
            single: single
                .into_iter()
                .map(|slots| Members::of(slots, len))
                .collect(),
            multi,
            any_restricted: !restricted.is_empty(),
            restricted,
            admits: admits
                .into_iter()
                .map(|slots| Members::of(slots, len))
                .collect(),
            read_only,
            any_attributed: !attributed.is_empty(),
            attributed,
            reads: RunReads::of(entries),
            recent: RecentSets::default(),
        }
    }

    /// The slots whose scopes, tenants and access admit `subject`, before revocation,
    /// readiness and access rules.
    fn admitted(&self, subject: &Subject) -> Bits {
        let mut visible = self.unscoped.clone();
        let mut grants = Bits::new(self.scope_ids.len());
        let mut granted: Vec<usize> = Vec::new();
        for scope in subject.scopes() {
            if let Some(&id) = self.scope_ids.get(scope) {
                grants.insert(id);
                granted.push(id);
            }
        }
        for &id in &granted {
            visible.union(&self.single[id]);
            for (slot, scopes) in &self.multi[id] {
                if scopes.iter().all(|&scope| grants.contains(scope)) {
                    visible.insert(*slot);
                }
            }
        }
        if self.any_restricted {
            let tenant = self.tenant_ids.get(subject.tenant());
            let admitted = tenant.map(|&id| &self.admits[id]);
            visible.restrict(&self.restricted, admitted);
        }
        if subject.access() == Access::ReadOnly {
            visible.intersect(&self.read_only);
        }
        visible
    }
}

impl Snapshot {
    /// A snapshot of `tools` (in name order) at `versions`.
    pub(crate) fn new(tools: Vec<Tool>, versions: Vec<u64>) -> Snapshot {
        let entries = tools
            .into_iter()
            .zip(versions)
            .enumerate()
            .map(|(slot, (tool, version))| Entry {
                slot,
                version,
                tool,
            })
            .collect();
        Snapshot::of_entries(entries)
    }

    fn of_entries(entries: Box<[Entry]>) -> Snapshot {
        Snapshot {
            entries,
            projection: OnceLock::new(),
            index: OnceLock::new(),
            vectors: OnceLock::new(),
        }
    }

    /// The `visible` slots (increasing) as a run keeps them, with their set fingerprint: each
    /// tool's name and fingerprint (`Fingerprint::of_named`), read from the arrays the
    /// projection keeps for that; or the same set of a recent run of this snapshot, shared.
    pub(crate) fn freeze(&self, visible: Vec<usize>) -> Arc<FrozenSet> {
        let projection = self.projection();
        if let Some(known) = projection.recent.find(&visible) {
            return known;
        }
        let fingerprint = crate::Fingerprint::of_prefixed(visible.iter().map(|&slot| {
            projection
                .reads
                .get(slot, || self.entries[slot].tool.fingerprint())
        }));
        projection.recent.remember(Arc::new(FrozenSet {
            slots: visible.into_boxed_slice(),
            fingerprint,
            versions: OnceLock::new(),
        }))
    }

    /// How many visible sets the snapshot remembers with their fingerprints.
    #[cfg(test)]
    pub(crate) fn remembered_sets(&self) -> usize {
        let recent = &self.projection().recent;
        recent
            .sets
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// How many tools (slots) there are.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Every tool with its slot and version, in slot (name) order.
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The tool in `slot`.
    pub(crate) fn tool(&self, slot: usize) -> &Tool {
        &self.entries[slot].tool
    }

    /// The version of the tool in `slot`.
    pub(crate) fn version(&self, slot: usize) -> u64 {
        self.entries[slot].version
    }

    /// Every tool, in slot (name) order.
    pub(crate) fn tools(&self) -> impl ExactSizeIterator<Item = &Tool> + Clone + '_ {
        self.entries.iter().map(|entry| &entry.tool)
    }

    fn projection(&self) -> &Projection {
        self.projection
            .get_or_init(|| Projection::build(&self.entries))
    }

    /// The search index of this snapshot's tools: built once, the first time it is asked for
    /// (by any run of the snapshot), then shared.
    pub(crate) fn index(&self) -> &SearchIndex {
        self.index.get_or_init(|| SearchIndex::build(self.tools()))
    }

    /// The vectors of this snapshot's tools by `embedder`: computed once, the first time they
    /// are asked for, then shared; `None` if the embedder failed (logged once).
    pub(crate) fn vectors(&self, embedder: &dyn Embedder) -> Option<&Vectors> {
        self.vectors
            .get_or_init(|| match Vectors::build(self.tools(), embedder) {
                Ok(vectors) => Some(vectors),
                Err(error) => {
                    tracing::warn!(
                        error = ?error.message(),
                        tools = self.len(),
                        "the embedder could not embed this snapshot's tools: its searches are lexical"
                    );
                    None
                }
            })
            .as_ref()
    }

    /// The vectors of this snapshot's tools if they were computed already (by
    /// [`vectors`](Self::vectors)): never calls the embedder.
    pub(crate) fn built_vectors(&self) -> Option<&Vectors> {
        self.vectors.get().and_then(Option::as_ref)
    }

    /// This snapshot with slot `slot` holding `tool` at `version`.
    pub(crate) fn with_replaced(&self, slot: usize, tool: Tool, version: u64) -> Snapshot {
        let mut entries = self.entries.clone();
        entries[slot] = Entry {
            slot,
            version,
            tool,
        };
        Snapshot::of_entries(entries)
    }

    /// The slots of every tool `subject` may see, in name order.
    ///
    /// `unavailable` is of this snapshot only while it is the registry's current one, which
    /// the caller's read lock on it ensures.
    pub(crate) fn project(
        &self,
        subject: &Subject,
        unavailable: &Unavailable,
        rules: &[Box<dyn AccessRule>],
    ) -> Vec<usize> {
        let projection = self.projection();
        let mut admitted = projection.admitted(subject);
        admitted.remove_all(&unavailable.revoked);
        admitted.remove_all(&unavailable.not_ready);
        let mut visible = Vec::with_capacity(admitted.len());
        for slot in admitted.iter() {
            let tool = &self.entries[slot].tool;
            if projection.any_attributed
                && projection.attributed.contains(slot)
                && tool.settings().attribute_hiding(subject).is_some()
            {
                continue;
            }
            if !rules.is_empty() && hidden_by(rules, subject, tool).is_some() {
                continue;
            }
            visible.push(slot);
        }
        visible
    }
}
