//! The per-principal request rate: a token bucket per principal id.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use tokio::time::Instant;

use crate::tokens::Principal;

/// How many buckets are kept before full ones (principals that paused) are swept.
const SWEEP_AT: usize = 1024;

/// One bucket per principal id.
#[derive(Debug)]
pub(crate) struct Rates {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Rates {
    /// `per_second` on average, `burst` at once; `per_second == 0`: no limit.
    pub(crate) fn new(per_second: u32, burst: u32) -> Rates {
        Rates {
            per_second: f64::from(per_second),
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from `id`'s bucket; `Err` with how long until the next one may
    /// come when it is empty.
    pub(crate) fn take(&self, id: &str) -> Result<(), Duration> {
        if self.per_second <= 0.0 {
            return Ok(());
        }
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= SWEEP_AT && !buckets.contains_key(id) {
            let (per_second, burst) = (self.per_second, self.burst);
            buckets.retain(|_, bucket| bucket.refilled(now, per_second, burst) < burst);
        }
        let bucket = buckets.entry(id.to_owned()).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        bucket.tokens = bucket.refilled(now, self.per_second, self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - bucket.tokens) / self.per_second,
            ))
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.buckets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Bucket {
    fn refilled(&self, now: Instant, per_second: f64, burst: f64) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * per_second).min(burst)
    }
}

/// Refuses with 429 and `Retry-After` a request of a principal over its rate.
pub(crate) fn limit_rate(rates: &Rates, principal: &Principal) -> Option<Response> {
    let wait = rates.take(principal.key()).err()?;
    tracing::debug!(client = ?principal.id(), "refused a request over the rate limit");
    // Whole seconds, rounded up: at least 1.
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let mut response = super::rpc_error(
        StatusCode::TOO_MANY_REQUESTS,
        None,
        -32000,
        &format!(
            "too many requests: over {} per second for this token (EdgeLimits::requests_per_second); retry after {seconds} s",
            rates.per_second
        ),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_bucket_refills_and_full_ones_are_swept() {
        let rates = Rates::new(10, 3);
        for _ in 0..3 {
            assert!(rates.take("a").is_ok());
        }
        let wait = rates.take("a").unwrap_err();
        assert!(wait <= Duration::from_millis(100), "{wait:?}");
        assert!(rates.take("b").is_ok());
        tokio::time::advance(Duration::from_millis(150)).await;
        assert!(rates.take("a").is_ok());
        for i in 0..SWEEP_AT {
            assert!(rates.take(&format!("p{i}")).is_ok());
        }
        assert!(rates.len() <= SWEEP_AT + 2);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(rates.take("new").is_ok());
        assert_eq!(rates.len(), 1, "full buckets are swept");
    }
}
