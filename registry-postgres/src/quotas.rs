//! Token buckets in `registry_quota_buckets`, shared by every replica.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use registry_core::gate::{QuotaDecision, QuotaKey, QuotaStore, RateLimit, StoreError};

use crate::error::Error;
use crate::plane::ControlPlane;

/// A limit of at least this many calls per period is generous: its tokens are taken in chunks.
const GENEROUS: u32 = 50;
/// A chunk is a fiftieth of a generous limit's calls, at most this many.
const MAX_CHUNK: u32 = 100;
/// How long a replica keeps the tokens of a chunk it has not spent; the rest are dropped.
const LEASE: Duration = Duration::from_secs(1);

/// The [`QuotaStore`] of the control plane: one token bucket per subject (tenant and agent)
/// and tool for all replicas together, so a limit of 10 calls a minute is 10 across the
/// fleet, not 10 per replica.
///
/// Tokens are taken in one round trip: a SQL function whose upsert locks the bucket's row,
/// refills it by the time elapsed on the database's clock (so replicas' clocks do not
/// matter), and takes tokens or says how long until one comes back. When the database
/// cannot answer in time, the call is refused (the gate fails closed).
///
/// **Generous limits are taken in chunks.** For a limit of at least 50 calls per period, a
/// replica takes a fiftieth of them at once (at most 100), spends them on its next calls under
/// that subject and tool, and drops whatever it has not spent after one second. Every token
/// spent was taken from the shared bucket, so the fleet never exceeds the limit; it may stay
/// under it, by the unspent part of one chunk per replica. A hot bucket (one busy agent) is
/// locked once per chunk rather than once per call. Limits under 50 calls per period are
/// taken one token per call; [`exact`](Self::exact) does that for every limit.
///
/// ```no_run
/// # async fn build(plane: registry_postgres::ControlPlane) -> Result<(), registry_core::RegistryError> {
/// let registry = registry_core::Registry::builder()
///     .declared()
///     .rate_limit("60/min")
///     .quota_store(plane.quota_store())
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PgQuotaStore {
    plane: ControlPlane,
    /// Tokens taken in chunks and not spent yet, by bucket; `None`: one token per call.
    leases: Option<Arc<Mutex<Leases>>>,
}

type Leases = HashMap<u128, Lease>;

/// Tokens of one bucket that this replica took and has not spent.
#[derive(Debug, Clone, Copy)]
struct Lease {
    left: u32,
    until: Instant,
    capacity: i64,
    step: i64,
}

impl ControlPlane {
    /// The quota store on this plane; generous limits are taken in chunks (see
    /// [`PgQuotaStore`]).
    pub fn quota_store(&self) -> PgQuotaStore {
        PgQuotaStore {
            plane: self.clone(),
            leases: Some(Arc::default()),
        }
    }
}

impl PgQuotaStore {
    /// Takes one token from the database for every call, whatever the limit: nothing is
    /// held locally, at the cost of one round trip (and one lock of the bucket's row) per
    /// call.
    #[must_use]
    pub fn exact(mut self) -> Self {
        self.leases = None;
        self
    }

    async fn take(&self, key: QuotaKey<'_>, limit: RateLimit) -> Result<QuotaDecision, Error> {
        let step = micros(limit.refill_interval()).max(1);
        let capacity = step.saturating_mul(i64::from(limit.calls()));
        let digest = key.fingerprint();
        let chunk = match &self.leases {
            Some(_) if limit.calls() >= GENEROUS => (limit.calls() / GENEROUS).min(MAX_CHUNK),
            _ => 1,
        };
        if chunk > 1 && self.spend_leased(digest, capacity, step) {
            return Ok(QuotaDecision::Granted);
        }
        let client = self.plane.client().await?;
        let statement = client
            .prepare_cached("SELECT registry_take_tokens($1, $2, $3, $4)")
            .await
            .map_err(Error::db("preparing the quota statement"))?;
        let want = i32::try_from(chunk).unwrap_or(1);
        let row = client
            .query_one(
                &statement,
                &[&&digest.to_be_bytes()[..], &capacity, &step, &want],
            )
            .await
            .map_err(Error::db("taking a quota token"))?;
        let taken: i64 = row.get(0);
        if taken <= 0 {
            return Ok(QuotaDecision::Exhausted {
                retry_after: Duration::from_micros(taken.unsigned_abs().max(1)),
            });
        }
        if taken > 1 {
            self.lease(
                digest,
                u32::try_from(taken - 1).unwrap_or(0),
                capacity,
                step,
            );
        }
        Ok(QuotaDecision::Granted)
    }

    /// Spends a token this replica holds for the bucket, if it holds one for the same limit.
    fn spend_leased(&self, digest: u128, capacity: i64, step: i64) -> bool {
        let Some(leases) = &self.leases else {
            return false;
        };
        let mut leases = leases.lock().unwrap_or_else(PoisonError::into_inner);
        match leases.get_mut(&digest) {
            Some(lease)
                if lease.left > 0
                    && Instant::now() < lease.until
                    && lease.capacity == capacity
                    && lease.step == step =>
            {
                lease.left -= 1;
                true
            }
            _ => false,
        }
    }

    /// Keeps `left` tokens of a chunk for the bucket's next calls, for [`LEASE`].
    fn lease(&self, digest: u128, left: u32, capacity: i64, step: i64) {
        let Some(leases) = &self.leases else { return };
        let mut leases = leases.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if leases.len() >= 1024 && leases.len().is_power_of_two() {
            leases.retain(|_, lease| lease.until > now && lease.left > 0);
        }
        let lease = leases.entry(digest).or_insert(Lease {
            left: 0,
            until: now,
            capacity,
            step,
        });
        if lease.until <= now || lease.capacity != capacity || lease.step != step {
            lease.left = 0;
        }
        // Two calls that found no token at once each took a chunk: both are kept.
        lease.left = lease.left.saturating_add(left);
        lease.until = now + LEASE;
        lease.capacity = capacity;
        lease.step = step;
    }
}

impl QuotaStore for PgQuotaStore {
    fn acquire<'a>(
        &'a self,
        key: QuotaKey<'a>,
        limit: RateLimit,
    ) -> registry_core::definition::BoxFuture<'a, Result<QuotaDecision, StoreError>> {
        Box::pin(async move {
            self.plane
                .timed("taking a quota token", self.take(key, limit))
                .await
                .map_err(StoreError::from)
        })
    }
}

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}
