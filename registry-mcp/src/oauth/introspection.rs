//! Opaque access tokens, checked with the authorization server (RFC 7662).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::OAuth;
use super::challenge::Refusal;

/// RFC 7662 token introspection, for access tokens that are not JWTs.
///
/// The server posts each new token to `endpoint`, authenticated as `client_id` with
/// `client_secret` (HTTP Basic), and accepts it if the answer is `"active": true` with `iss`
/// (when present) equal to the issuer, `aud` naming this server's resource, and `exp` in the
/// future; `scope`, `sub`, `client_id` and the tenant claim are read as a JWT's are. An
/// answer is cached, keyed by the token's SHA-256, until the token's `exp` and at most
/// [`with_max_cache`](Self::with_max_cache); a refusal for 10 s.
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
pub struct Introspection {
    pub(crate) endpoint: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
    pub(crate) max_cache: Duration,
    pub(crate) max_entries: usize,
}

impl std::fmt::Debug for Introspection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("Introspection")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("max_cache", &self.max_cache)
            .finish_non_exhaustive()
    }
}

impl Introspection {
    /// Introspection at `endpoint`, as the client `client_id` with `client_secret`. Answers are
    /// cached for at most 5 minutes, 10,000 tokens at most.
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
        }
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

/// The introspection client and its cache.
pub(crate) struct Introspector {
    config: Introspection,
    http: reqwest::Client,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}

struct Cached {
    until: SystemTime,
    answer: Result<Map<String, Value>, Refusal>,
}

impl Introspector {
    pub(crate) fn new(config: Introspection, http: reqwest::Client) -> Self {
        Introspector {
            config,
            http,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The claims of an active token for this server, or why it is refused.
    pub(crate) async fn claims(
        &self,
        token: &str,
        digest: [u8; 32],
        oauth: &OAuth,
    ) -> Result<Map<String, Value>, Refusal> {
        let now = SystemTime::now();
        if let Some(cached) = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&digest)
            .filter(|cached| cached.until > now)
        {
            return cached.answer.clone();
        }
        let answer = self.ask(token).await?;
        let checked = check(answer, oauth, now);
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
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= self.config.max_entries {
            cache.retain(|_, cached| cached.until > now);
            if cache.len() >= self.config.max_entries {
                cache.clear();
            }
        }
        cache.insert(
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
            tracing::warn!(endpoint = ?self.config.endpoint, %why, "token introspection failed");
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
            .map_err(|error| unavailable(error.to_string()))?;
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
