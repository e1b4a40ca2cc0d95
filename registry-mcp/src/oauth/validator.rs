//! One access token in, the principal it stands for (or why not) out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use registry_core::Registry;

use super::challenge::Refusal;
use super::introspection::Introspector;
use super::keys::{Jwks, KeyStore};
use super::metadata::Metadata;
use super::{OAuth, OAuthError, claims, jwt};
use crate::tokens::Principal;

/// An [`OAuth`] configuration made ready: keys loaded, metadata written.
pub(crate) struct Validator {
    oauth: OAuth,
    keys: Option<KeyStore>,
    introspector: Option<Introspector>,
    pub(crate) metadata: Arc<Metadata>,
    /// JWTs already checked, by SHA-256: the same bytes verify the same way, so a client
    /// that sends its token with every request pays for the signature once a minute.
    checked: Mutex<HashMap<[u8; 32], Checked>>,
}

/// A JWT that passed every check, until when it may be taken as checked.
struct Checked {
    principal: Principal,
    until: SystemTime,
}

/// How long a checked JWT is taken as checked at most (never past its `exp`): a key the
/// issuer withdraws stops accepting its tokens within this time.
const CHECKED_FOR: Duration = Duration::from_secs(60);
/// How many checked JWTs are remembered at most.
const CHECKED_MAX: usize = 10_000;

impl Validator {
    /// Checks `oauth` and loads its keys: an unusable setting, or keys that cannot be read or
    /// fetched, is an error now rather than a refusal of every token later.
    pub(crate) async fn new(
        oauth: OAuth,
        registry: &Registry,
        endpoint: &str,
    ) -> Result<Validator, OAuthError> {
        let validator = Validator::lazy(oauth, registry, endpoint)?;
        if let Some(keys) = &validator.keys {
            keys.load().await?;
        }
        Ok(validator)
    }

    /// Checks `oauth`; its keys are loaded when the first token needs them.
    pub(crate) fn lazy(
        oauth: OAuth,
        registry: &Registry,
        endpoint: &str,
    ) -> Result<Validator, OAuthError> {
        let config = |problem: &str| Err(OAuthError::Config(problem.to_owned()));
        if oauth.jwks.is_none() && oauth.introspection.is_none() {
            return config(
                "give the issuer's keys (`with_jwks`) or an introspection endpoint \
                 (`with_introspection`): without either no token can be checked",
            );
        }
        if oauth.algorithms.is_empty() {
            return config("no signature algorithm is accepted: give at least one");
        }
        if let Some(hmac) = oauth
            .algorithms
            .iter()
            .find(|algorithm| algorithm.family() == jsonwebtoken::AlgorithmFamily::Hmac)
        {
            return Err(OAuthError::Config(format!(
                "{hmac:?} is an HMAC algorithm: a resource server checks an identity provider's \
                 tokens with its public keys, so only asymmetric algorithms (RS*, PS*, ES*, \
                 EdDSA) are accepted"
            )));
        }
        if oauth.issuer.is_empty() {
            return config("the issuer is empty");
        }
        if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
            return config(
                "jsonwebtoken has no crypto provider: another crate enabled both its \
                 `rust_crypto` and `aws_lc_rs` features; install one with \
                 `CryptoProvider::install_default` before serving",
            );
        }
        let metadata = Arc::new(Metadata::new(&oauth, registry, endpoint)?);
        for url in fetched_urls(&oauth) {
            if url.starts_with("https://") && !cfg!(feature = "tls") {
                return Err(OAuthError::Config(format!(
                    "{url} is https://: enable registry-mcp's `tls` feature to fetch it"
                )));
            }
        }
        let http = reqwest::Client::builder()
            .timeout(oauth.fetch_timeout)
            .build()
            .map_err(|error| OAuthError::Config(format!("cannot make an HTTP client: {error}")))?;
        let keys = oauth.jwks.clone().map(|jwks| {
            KeyStore::new(
                jwks,
                http.clone(),
                oauth.refetch_interval,
                oauth.jwks_max_age,
            )
        });
        let introspector = oauth
            .introspection
            .clone()
            .map(|config| Introspector::new(config, http));
        Ok(Validator {
            oauth,
            keys,
            introspector,
            metadata,
            checked: Mutex::new(HashMap::new()),
        })
    }

    /// The principal `token` stands for: a JWT checked with the keys, anything else (or any
    /// token, without keys) introspected.
    /// `digest` is the token's SHA-256 (`tokens::token_digest`), computed once per request.
    pub(crate) async fn principal(
        &self,
        token: &str,
        digest: [u8; 32],
    ) -> Result<Principal, Refusal> {
        // A JWT checked before: its principal, without parsing or verifying it again.
        let now = SystemTime::now();
        if let Some(checked) = self
            .checked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&digest)
            .filter(|checked| checked.until > now)
        {
            return Ok(checked.principal.clone());
        }
        let claims = match (&self.keys, &self.introspector) {
            (Some(keys), _) if jwt::looks_like_jwt(token) => {
                let claims = jwt::validate(token, &self.oauth, keys).await?;
                let principal = claims::principal(&claims, &self.oauth)?;
                self.remember(digest, &principal, &claims, now);
                return Ok(principal);
            }
            (_, Some(introspector)) => introspector.claims(token, digest, &self.oauth).await?,
            (Some(_), None) => {
                return Err(Refusal::InvalidToken(
                    "the token is not a JWT, and this server accepts only JWT access tokens".into(),
                ));
            }
            (None, None) => {
                return Err(Refusal::InvalidToken("no token is accepted".into()));
            }
        };
        claims::principal(&claims, &self.oauth)
    }
}

impl Validator {
    /// Remembers a checked JWT until its `exp` (less the leeway's slack: `exp` itself), and
    /// [`CHECKED_FOR`] at most.
    fn remember(
        &self,
        digest: [u8; 32],
        principal: &Principal,
        claims: &serde_json::Map<String, Value>,
        now: SystemTime,
    ) {
        let Some(exp) = claims.get("exp").and_then(Value::as_u64) else {
            return;
        };
        let until = (UNIX_EPOCH + Duration::from_secs(exp)).min(now + CHECKED_FOR);
        let mut checked = self.checked.lock().unwrap_or_else(PoisonError::into_inner);
        if checked.len() >= CHECKED_MAX {
            checked.retain(|_, entry| entry.until > now);
            if checked.len() >= CHECKED_MAX {
                checked.clear();
            }
        }
        checked.insert(
            digest,
            Checked {
                principal: principal.clone(),
                until,
            },
        );
    }
}

/// The URLs the server fetches: the `jwks_uri`, the introspection endpoint.
fn fetched_urls(oauth: &OAuth) -> Vec<&str> {
    let mut urls = Vec::new();
    if let Some(Jwks::Uri(uri)) = &oauth.jwks {
        urls.push(uri.as_str());
    }
    if let Some(introspection) = &oauth.introspection {
        urls.push(introspection.endpoint.as_str());
    }
    urls
}
