//! Token buckets in `registry_quota_buckets`, shared by every replica.

use std::time::Duration;

use registry_core::{QuotaDecision, QuotaKey, QuotaStore, RateLimit, StoreError};

use crate::error::Error;
use crate::plane::ControlPlane;

/// The [`QuotaStore`] of the control plane: one token bucket per subject (tenant and agent)
/// and tool for all replicas together, so a limit of 10 calls a minute is 10 across the
/// fleet, not 10 per replica.
///
/// Each call takes its token in one round trip: a SQL function whose upsert locks the bucket's
/// row, refills it by the time elapsed on the database's clock (so replicas' clocks do not
/// matter), and takes a token or says how long until one comes back. When the database
/// cannot answer in time, the call is refused (the gate fails closed). Nothing is cached
/// locally: every call is counted where every replica sees it.
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
}

impl ControlPlane {
    /// The quota store on this plane.
    pub fn quota_store(&self) -> PgQuotaStore {
        PgQuotaStore {
            plane: self.clone(),
        }
    }
}

impl PgQuotaStore {
    async fn take(&self, key: QuotaKey<'_>, limit: RateLimit) -> Result<QuotaDecision, Error> {
        let step = micros(limit.refill_interval()).max(1);
        let capacity = step.saturating_mul(i64::from(limit.calls()));
        let digest = key.digest().to_be_bytes();
        let client = self.plane.client().await?;
        let statement = client
            .prepare_cached("SELECT registry_take_token($1, $2, $3)")
            .await
            .map_err(Error::db("preparing the quota statement"))?;
        let row = client
            .query_one(&statement, &[&&digest[..], &capacity, &step])
            .await
            .map_err(Error::db("taking a quota token"))?;
        let wait: i64 = row.get(0);
        Ok(if wait <= 0 {
            QuotaDecision::Granted
        } else {
            QuotaDecision::Exhausted {
                retry_after: Duration::from_micros(wait.unsigned_abs()),
            }
        })
    }
}

impl QuotaStore for PgQuotaStore {
    fn acquire<'a>(
        &'a self,
        key: QuotaKey<'a>,
        limit: RateLimit,
    ) -> registry_core::BoxFuture<'a, Result<QuotaDecision, StoreError>> {
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
