//! Opaque access tokens, checked with the authorization server (RFC 7662).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::OAuth;
use super::challenge::Refusal;
use super::lru::Lru;
use crate::edge::Source;

/// RFC 7662 token introspection, for access tokens that are not JWTs.
///
/// The server posts each new token to `endpoint`, authenticated as `client_id` with
/// `client_secret` (HTTP Basic), and accepts it if the answer is `"active": true` with `iss`
/// (when present) equal to the issuer, `aud` naming this server's resource, and `exp` in the
/// future; `scope`, `sub`, `client_id` and the tenant claim are read as a JWT's are. An
/// answer is cached, keyed by the token's SHA-256, until the token's `exp` and at most
/// [`with_max_cache`](Self::with_max_cache); a refusal for 10 s. The cache holds
/// [`with_max_entries`](Self::with_max_entries) answers and, full, forgets the least recently
/// used one: tokens in use stay, however many others are tried.
///
/// Every unknown token costs a request to the endpoint, so refusals (and failed
/// introspections) are limited per source (the client's IP address; an IPv6 /64 counts as
/// one):
/// [`with_max_refusals_per_source`](Self::with_max_refusals_per_source), default 30 a
/// minute. A source over it gets 429 with `Retry-After` for any token not already cached, and
/// the endpoint is not asked.
///
/// ```
/// use registry_mcp::{Introspection, OAuth};
///
/// let oauth = OAuth::new("https://mcp.example.com/mcp", "https://idp.example.com")
///     .with_introspection(Introspection::new(
///         "https://idp.example.com/oauth2/introspect",
///         "mcp-server",
///         "its secret",
///     ));
/// # let _ = oauth;
/// ```
#[derive(Clone)]
#[must_use = "an introspection endpoint does nothing until it is given to `OAuth::with_introspection`"]
pub struct Introspection {
    pub(crate) endpoint: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
    pub(crate) max_cache: Duration,
    pub(crate) max_entries: usize,
    pub(crate) max_refusals: u32,
    pub(crate) refusal_window: Duration,
}

impl std::fmt::Debug for Introspection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("Introspection")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("max_cache", &self.max_cache)
            .field("max_entries", &self.max_entries)
            .field("max_refusals", &self.max_refusals)
            .field("refusal_window", &self.refusal_window)
            .finish_non_exhaustive()
    }
}

impl Introspection {
    /// Introspection at `endpoint`, as the client `client_id` with `client_secret`. Answers are
    /// cached for at most 5 minutes, 10,000 tokens at most; 30 refusals a minute per source.
    pub fn new(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        Introspection {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            max_cache: Duration::from_secs(5 * 60),
            max_entries: 10_000,
            max_refusals: 30,
            refusal_window: Duration::from_secs(60),
        }
    }

    /// How many answers are cached at most. Default 10,000. Full, the cache forgets the
    /// least recently used answer.
    pub fn with_max_entries(mut self, max_entries: usize) -> Self {
        self.max_entries = max_entries.max(1);
        self
    }

    /// How many tokens from one source (IP address, IPv6 /64) the endpoint may refuse in
    /// `per` (and at once, after a pause). Default 30 a minute. Over it, the source's uncached
    /// tokens are refused with 429 and `Retry-After`, without asking the endpoint, until the
    /// allowance refills. `count` 0 turns the limit off.
    ///
    /// ```
    /// use std::time::Duration;
    /// use registry_mcp::Introspection;
    ///
    /// let introspection = Introspection::new("https://idp.example.com/introspect", "mcp", "secret")
    ///     .with_max_refusals_per_source(10, Duration::from_secs(60));
    /// # let _ = introspection;
    /// ```
    pub fn with_max_refusals_per_source(mut self, count: u32, per: Duration) -> Self {
        self.max_refusals = count;
        self.refusal_window = per;
        self
    }

    /// How long an active token's answer is kept at most (never past the token's `exp`): a
    /// token revoked at the authorization server is accepted here until then. Default 5 min.
    pub fn with_max_cache(mut self, max_cache: Duration) -> Self {
        self.max_cache = max_cache;
        self
    }
}

/// How long a refusal is remembered, so that a bad token does not reach the endpoint on
/// every request.
const REFUSAL_CACHE: Duration = Duration::from_secs(10);

/// How many sources' refusal allowances are kept; full, the least recently used is forgotten.
const MAX_SOURCES: usize = 4096;

/// The introspection client and its cache.
pub(crate) struct Introspector {
    config: Introspection,
    http: reqwest::Client,
    cache: Mutex<Lru<[u8; 32], Cached>>,
    /// Each source's allowance of refusals: a token bucket.
    refusals: Mutex<Lru<Source, Allowance>>,
}

#[derive(Clone, Copy)]
struct Allowance {
    left: f64,
    at: Instant,
}

struct Cached {
    until: SystemTime,
    answer: Result<Map<String, Value>, Refusal>,
}

impl Introspector {
    pub(crate) fn new(config: Introspection, http: reqwest::Client) -> Self {
        Introspector {
            cache: Mutex::new(Lru::new(config.max_entries)),
            refusals: Mutex::new(Lru::new(MAX_SOURCES)),
            config,
            http,
        }
    }

    /// The refusals a source may still have now, refilled since it was last looked at.
    fn allowance(&self, source: Source) -> Allowance {
        let burst = f64::from(self.config.max_refusals);
        let now = Instant::now();
        let mut refusals = self.refusals.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(allowance) = refusals.get_mut(&source) else {
            return Allowance {
                left: burst,
                at: now,
            };
        };
        let per_second = burst / self.config.refusal_window.as_secs_f64().max(0.001);
        let elapsed = now.saturating_duration_since(allowance.at).as_secs_f64();
        allowance.left = (allowance.left + elapsed * per_second).min(burst);
        allowance.at = now;
        *allowance
    }

    /// `Err` (429) when `source` has no refusal left: the endpoint is not asked.
    fn admit(&self, source: Source) -> Result<(), Refusal> {
        if self.config.max_refusals == 0 {
            return Ok(());
        }
        let allowance = self.allowance(source);
        if allowance.left >= 1.0 {
            return Ok(());
        }
        let per_second = f64::from(self.config.max_refusals)
            / self.config.refusal_window.as_secs_f64().max(0.001);
        let wait = ((1.0 - allowance.left) / per_second).ceil().max(1.0);
        tracing::debug!(source = %source, "refused a token unchecked: too many refusals from its source");
        // Whole seconds; a window of days is still a number of seconds.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Err(Refusal::Throttled(wait.min(86_400.0) as u64))
    }

    /// Takes one refusal from `source`'s allowance.
    fn refused(&self, source: Source) {
        if self.config.max_refusals == 0 {
            return;
        }
        let mut allowance = self.allowance(source);
        allowance.left = (allowance.left - 1.0).max(0.0);
        self.refusals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(source, allowance);
    }

    /// The claims of an active token for this server, or why it is refused.
    /// `source` is where the request came from, whose refusals are limited.
    pub(crate) async fn claims(
        &self,
        token: &str,
        digest: [u8; 32],
        oauth: &OAuth,
        source: Source,
    ) -> Result<Map<String, Value>, Refusal> {
        let now = SystemTime::now();
        {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            match cache.get_mut(&digest) {
                Some(cached) if cached.until > now => return cached.answer.clone(),
                Some(_) => cache.remove(&digest),
                None => {}
            }
        }
        self.admit(source)?;
        // A failed introspection costs the endpoint as much as a refusal: it counts as one.
        let answer = self
            .ask(token)
            .await
            .inspect_err(|_| self.refused(source))?;
        let checked = check(answer, oauth, now);
        if checked.is_err() {
            self.refused(source);
        }
        let until = match &checked {
            Ok(claims) => {
                let exp = claims
                    .get("exp")
                    .and_then(Value::as_u64)
                    .map_or(now, |exp| UNIX_EPOCH + Duration::from_secs(exp));
                exp.min(now + self.config.max_cache)
            }
            Err(_) => now + REFUSAL_CACHE,
        };
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                digest,
                Cached {
                    until,
                    answer: checked.clone(),
                },
            );
        checked
    }

    /// The endpoint's answer; an endpoint that cannot be reached or answers an error makes
    /// the token's standing unknown, and the request is refused (503).
    async fn ask(&self, token: &str) -> Result<Map<String, Value>, Refusal> {
        let unavailable = |why: String| {
            // The endpoint and why in the log only: the caller learns nothing of either.
            tracing::warn!(
                endpoint = %crate::logging::escape(&self.config.endpoint),
                why = %crate::logging::escape(&why),
                "token introspection failed"
            );
            Refusal::Unavailable(
                "the token cannot be checked now (introspection failed); try again later".into(),
            )
        };
        let response = self
            .http
            .post(&self.config.endpoint)
            .basic_auth(&self.config.client_id, Some(&self.config.client_secret))
            .header("accept", "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|error| unavailable(super::validator::with_causes(&error)))?;
        let bytes = response
            .bytes()
            .await
            .map_err(|error| unavailable(error.to_string()))?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(answer)) => Ok(answer),
            _ => Err(unavailable("the answer is not a JSON object".into())),
        }
    }
}

/// The claims of an introspection answer, if it is active, for this server and not expired.
fn check(
    answer: Map<String, Value>,
    oauth: &OAuth,
    now: SystemTime,
) -> Result<Map<String, Value>, Refusal> {
    if answer.get("active") != Some(&Value::Bool(true)) {
        return Err(Refusal::InvalidToken("the token is not active".into()));
    }
    if let Some(iss) = answer.get("iss")
        && iss.as_str() != Some(oauth.issuer.as_str())
    {
        return Err(Refusal::InvalidToken(format!(
            "the token was not issued by {} (`iss`)",
            oauth.issuer
        )));
    }
    let for_us = match answer.get("aud") {
        Some(Value::String(aud)) => *aud == oauth.resource,
        Some(Value::Array(auds)) => auds
            .iter()
            .any(|aud| aud.as_str() == Some(oauth.resource.as_str())),
        _ => false,
    };
    if !for_us {
        return Err(Refusal::InvalidToken(format!(
            "the token is not for this server: its `aud` must name {}",
            oauth.resource
        )));
    }
    let leeway = oauth.leeway;
    match answer.get("exp").and_then(Value::as_u64) {
        Some(exp) if UNIX_EPOCH + Duration::from_secs(exp) + leeway > now => {}
        Some(_) => return Err(Refusal::InvalidToken("the token has expired".into())),
        None => {
            return Err(Refusal::InvalidToken(
                "the introspection answer has no `exp`".into(),
            ));
        }
    }
    if let Some(nbf) = answer.get("nbf").and_then(Value::as_u64)
        && UNIX_EPOCH + Duration::from_secs(nbf) > now + leeway
    {
        return Err(Refusal::InvalidToken(
            "the token is not valid yet (`nbf`)".into(),
        ));
    }
    Ok(answer)
}
