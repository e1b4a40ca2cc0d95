//! Quotas: token buckets per subject and tool, and a run's call budget.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::declare::declaration::BoxFuture;
use crate::gate::approval::StoreError;
use crate::gate::rate_limit::RateLimit;

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
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for part in [Some(self.tenant), self.agent, Some(self.tool)] {
            match part {
                Some(text) => {
                    hasher.update(&[1]);
                    hasher.update(&(text.len() as u64).to_le_bytes());
                    hasher.update(text.as_bytes());
                }
                None => hasher.update(&[0]),
            }
        }
        if let Some(principal) = self.principal {
            hasher.update(&[2]);
            hasher.update(&(principal.len() as u64).to_le_bytes());
            hasher.update(principal.as_bytes());
        }
        hasher.digest128()
    }
}

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
    map: HashMap<u128, Bucket>,
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
