//! Quotas: token buckets per subject and tool, and a run's call budget.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::approval::request::StoreError;
use crate::shared::future::BoxFuture;
use crate::shared::rate_limit::RateLimit;

/// Whose calls a rate limit counts: one subject (tenant, agent and, when it names one,
/// principal) and one tool. Two principals of the same tenant and agent have buckets of their
/// own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct QuotaKey<'a> {
    /// The subject's tenant.
    pub tenant: &'a str,
    /// The subject's agent, if it names one.
    pub agent: Option<&'a str>,
    /// The subject's principal, if it names one
    /// ([`Subject::principal`](crate::Subject::principal)).
    pub principal: Option<&'a str>,
    /// The tool.
    pub tool: &'a str,
}

impl<'a> QuotaKey<'a> {
    /// The key of `tool` for a subject of `tenant` that names no agent and no principal.
    ///
    /// ```
    /// use registry_core::gate::QuotaKey;
    ///
    /// let key = QuotaKey::new("acme", "deploy").with_agent("cli").with_principal("token:ana");
    /// assert_eq!((key.tenant, key.agent, key.principal), ("acme", Some("cli"), Some("token:ana")));
    /// assert_ne!(key.fingerprint(), QuotaKey::new("acme", "deploy").fingerprint());
    /// ```
    pub const fn new(tenant: &'a str, tool: &'a str) -> Self {
        QuotaKey {
            tenant,
            agent: None,
            principal: None,
            tool,
        }
    }

    /// With the subject's agent.
    #[must_use]
    pub const fn with_agent(mut self, agent: &'a str) -> Self {
        self.agent = Some(agent);
        self
    }

    /// With the subject's principal.
    #[must_use]
    pub const fn with_principal(mut self, principal: &'a str) -> Self {
        self.principal = Some(principal);
        self
    }

    /// A stable 128-bit digest of the key, for stores that index buckets by it.
    ///
    /// Each part is written with its length, so no two keys share their input; a key without
    /// a principal has the fingerprint it had before principals existed (its buckets carry on), and
    /// one with a principal appends it, tagged apart.
    pub fn fingerprint(&self) -> u128 {
        // The bytes hashed: each part tagged, its length, its text. A key that fits is hashed
        // in one pass from the stack (most do: a tenant, an agent, a tool name and a principal
        // are short); a longer one streams the same bytes, so the digest is the same.
        let mut buffer = [0u8; FINGERPRINT_STACK];
        let mut written = 0;
        let fits = self.each_part(|bytes| {
            let end = written + bytes.len();
            match buffer.get_mut(written..end) {
                Some(slot) => {
                    slot.copy_from_slice(bytes);
                    written = end;
                    true
                }
                None => false,
            }
        });
        if fits {
            return xxhash_rust::xxh3::xxh3_128(&buffer[..written]);
        }
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        self.each_part(|bytes| {
            hasher.update(bytes);
            true
        });
        hasher.digest128()
    }

    /// Gives `write` the fingerprint's input in pieces, in order, until it returns `false`;
    /// `true` when every piece was taken.
    fn each_part(&self, mut write: impl FnMut(&[u8]) -> bool) -> bool {
        [Some(self.tenant), self.agent, Some(self.tool)]
            .into_iter()
            .all(|part| match part {
                Some(text) => tagged(&mut write, 1, text),
                None => write(&[0]),
            })
            && self
                .principal
                .is_none_or(|principal| tagged(&mut write, 2, principal))
    }
}

/// One part of a fingerprint's input: its tag, its length and its text.
fn tagged(write: &mut impl FnMut(&[u8]) -> bool, tag: u8, text: &str) -> bool {
    write(&[tag]) && write(&(text.len() as u64).to_le_bytes()) && write(text.as_bytes())
}

/// The longest fingerprint input hashed from the stack, in bytes.
const FINGERPRINT_STACK: usize = 256;

/// What a [`QuotaStore`] answers for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum QuotaDecision {
    /// A token was taken: the call may run.
    Granted,
    /// The bucket is empty: a token comes back after `retry_after`.
    Exhausted {
        /// How long until a call may succeed.
        retry_after: Duration,
    },
}

/// Keeps the token buckets of rate limits; the in-memory [`MemoryQuotaStore`] is the default,
/// and a shared store makes a limit hold across replicas.
///
/// [`acquire`](Self::acquire) takes one token from the key's bucket, atomically: a bucket
/// holds at most `limit.calls()` tokens and gains one every `limit.refill_interval()`. A store
/// that cannot answer returns an error, and the call is refused
/// ([`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable)): the gate fails closed.
pub trait QuotaStore: Send + Sync + 'static {
    /// Takes one token for `key` under `limit`, or says when one comes back.
    fn acquire<'a>(
        &'a self,
        key: QuotaKey<'a>,
        limit: RateLimit,
    ) -> BoxFuture<'a, Result<QuotaDecision, StoreError>>;
}

/// The default [`QuotaStore`]: token buckets in this process's memory.
///
/// Full buckets (untouched for a whole period) are dropped from time to time, so memory stays
/// proportional to the subjects recently active.
#[derive(Debug, Default)]
pub struct MemoryQuotaStore {
    buckets: Mutex<Buckets>,
}

#[derive(Debug, Default)]
struct Buckets {
    /// Keyed by [`QuotaKey::fingerprint`], an unkeyed digest that a caller could aim at
    /// one of the map's slots: hashed again with a keyed hash, foldhash's (a random seed per
    /// process, mixed with one per map), as std's SipHash would be, for less
    /// (`acquire_now` 673 → 512 instructions: issue 22's profile, under callgrind).
    map: HashMap<u128, Bucket, foldhash::fast::RandomState>,
    /// When the map grows past this, full buckets are swept.
    sweep_at: usize,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Tokens, in nanoseconds of refill: `calls * interval` is a full bucket.
    tokens: u128,
    at: Instant,
    capacity: u128,
    interval: u128,
}

impl Bucket {
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_nanos();
        self.tokens = (self.tokens + elapsed).min(self.capacity);
        self.at = now;
    }
}

impl MemoryQuotaStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryQuotaStore::default()
    }

    /// Takes a token now; the synchronous core of [`QuotaStore::acquire`].
    pub fn acquire_now(&self, key: QuotaKey<'_>, limit: RateLimit) -> QuotaDecision {
        let now = Instant::now();
        let interval = limit.refill_interval().as_nanos().max(1);
        let capacity = interval * u128::from(limit.calls());
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.map.len() >= buckets.sweep_at.max(1024) {
            buckets.map.retain(|_, bucket| {
                bucket.refill(now);
                bucket.tokens < bucket.capacity
            });
            buckets.sweep_at = buckets.map.len() * 2;
        }
        let bucket = buckets.map.entry(key.fingerprint()).or_insert(Bucket {
            tokens: capacity,
            at: now,
            capacity,
            interval,
        });
        if bucket.capacity != capacity || bucket.interval != interval {
            // The limit changed (a tool replaced with another limit): start over under it.
            *bucket = Bucket {
                tokens: capacity,
                at: now,
                capacity,
                interval,
            };
        }
        bucket.refill(now);
        if bucket.tokens >= interval {
            bucket.tokens -= interval;
            QuotaDecision::Granted
        } else {
            let wait = interval - bucket.tokens;
            QuotaDecision::Exhausted {
                retry_after: Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX)),
            }
        }
    }
}

impl QuotaStore for MemoryQuotaStore {
    fn acquire<'a>(
        &'a self,
        key: QuotaKey<'a>,
        limit: RateLimit,
    ) -> BoxFuture<'a, Result<QuotaDecision, StoreError>> {
        Box::pin(std::future::ready(Ok(self.acquire_now(key, limit))))
    }
}

/// A run's budget: how many calls it may run in all.
#[derive(Debug)]
pub(crate) struct Budget {
    pub(crate) limit: u64,
    used: AtomicU64,
}

impl Budget {
    pub(crate) fn new(limit: u64) -> Budget {
        Budget {
            limit,
            used: AtomicU64::new(0),
        }
    }

    /// Takes one call from the budget, if any is left.
    pub(crate) fn take(&self) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used < self.limit).then_some(used + 1)
            })
            .is_ok()
    }

    /// Gives back a call taken by [`take`](Self::take) for a call refused afterwards.
    pub(crate) fn refund(&self) {
        self.used.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fingerprint as it was first written (one streamed piece at a time): stores keep
    /// buckets under it, so it must never change.
    fn streamed(key: &QuotaKey<'_>) -> u128 {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for part in [Some(key.tenant), key.agent, Some(key.tool)] {
            match part {
                Some(text) => {
                    hasher.update(&[1]);
                    hasher.update(&(text.len() as u64).to_le_bytes());
                    hasher.update(text.as_bytes());
                }
                None => hasher.update(&[0]),
            }
        }
        if let Some(principal) = key.principal {
            hasher.update(&[2]);
            hasher.update(&(principal.len() as u64).to_le_bytes());
            hasher.update(principal.as_bytes());
        }
        hasher.digest128()
    }

    #[test]
    fn the_fingerprint_is_the_streamed_digest_on_and_off_the_stack() {
        let long = "t".repeat(FINGERPRINT_STACK);
        let edge = "e".repeat(FINGERPRINT_STACK - 3 * 9);
        let keys = [
            QuotaKey::new("acme", "deploy"),
            QuotaKey::new("acme", "deploy").with_agent("cli"),
            QuotaKey::new("acme", "deploy").with_principal("token:ana"),
            QuotaKey::new("", "").with_agent("").with_principal(""),
            QuotaKey::new("acme\0", "dep\u{202e}loy").with_agent("a\nb"),
            // Exactly the stack's size, one byte over, and far over.
            QuotaKey::new(&edge, "").with_agent(""),
            QuotaKey::new(&edge, "x").with_agent(""),
            QuotaKey::new(&long, "deploy"),
            QuotaKey::new("acme", "deploy").with_principal(&long),
        ];
        for key in keys {
            assert_eq!(key.fingerprint(), streamed(&key), "{key:?}");
        }
        // Pinned: the digest stores already hold for this key.
        assert_eq!(
            format!(
                "{:032x}",
                QuotaKey::new("acme", "deploy")
                    .with_agent("cli")
                    .fingerprint()
            ),
            "3ab2e38bd79d3afc580bf7c8cce39c62",
        );
    }
}
