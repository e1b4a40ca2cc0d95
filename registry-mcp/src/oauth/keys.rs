//! The issuer's signing keys: where they come from, and the cache that holds them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};

use super::{OAuthError, read_jwks_file};

/// Where the keys that sign JWT access tokens come from: a JSON Web Key Set (RFC 7517).
///
/// Keys for encryption (`"use": "enc"`) and symmetric keys (`"kty": "oct"`) are ignored;
/// so are keys of a type this crate cannot check.
///
/// ```
/// use registry_mcp::Jwks;
///
/// let from_issuer = Jwks::uri("https://idp.example.com/.well-known/jwks.json");
/// let from_file = Jwks::file("/etc/mcp/jwks.json");
/// let inline = Jwks::json(r#"{"keys": []}"#).unwrap();
/// # let _ = (from_issuer, from_file, inline);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Jwks {
    /// A JWKS file, read at startup and again when a token names a `kid` it lacks.
    File(PathBuf),
    /// The issuer's `jwks_uri`, fetched at startup, when a token names an unknown `kid`, and
    /// when the keys are older than their maximum age. `https://` needs the crate's `tls`
    /// feature.
    Uri(String),
    /// A fixed set of keys.
    Set(JwkSet),
}

impl Jwks {
    /// The keys of a JWKS file.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Jwks::File(path.into())
    }

    /// The keys at a `jwks_uri`.
    pub fn uri(uri: impl Into<String>) -> Self {
        Jwks::Uri(uri.into())
    }

    /// The keys of a JWKS document.
    pub fn json(text: &str) -> Result<Self, OAuthError> {
        parse_set(text).map(Jwks::Set)
    }
}

fn parse_set(text: &str) -> Result<JwkSet, OAuthError> {
    serde_json::from_str(text)
        .map_err(|error| OAuthError::Keys(format!("not a JSON Web Key Set: {error}")))
}

/// One usable key.
pub(crate) struct Key {
    pub(crate) decoding: DecodingKey,
    /// The algorithm the JWK is restricted to, if it says.
    pub(crate) algorithm: Option<Algorithm>,
}

impl Key {
    /// Whether this key may check a signature made with `algorithm`.
    pub(crate) fn fits(&self, algorithm: Algorithm) -> bool {
        self.decoding.family() == algorithm.family()
            && self.algorithm.is_none_or(|own| own == algorithm)
    }
}

#[derive(Default)]
struct Keys {
    by_kid: HashMap<String, Arc<Key>>,
    without_kid: Vec<Arc<Key>>,
    loaded: Option<Instant>,
}

/// Why no key can check a token.
pub(crate) enum KeyError {
    /// No key has the token's `kid` (or, without a `kid`, none fits its algorithm).
    Unknown,
    /// The keys could not be fetched, and none known fits: whether the token is good cannot
    /// be known (why is logged).
    Unavailable,
}

/// The keys, and how to get them again.
pub(crate) struct KeyStore {
    source: Jwks,
    http: reqwest::Client,
    keys: RwLock<Keys>,
    /// When the keys were last fetched or read (successfully or not): refetches are spaced.
    last_attempt: tokio::sync::Mutex<Option<Instant>>,
    refetch_interval: Duration,
    max_age: Duration,
}

impl KeyStore {
    /// The keys of `source`, not loaded yet: the first token loads them.
    pub(crate) fn new(
        source: Jwks,
        http: reqwest::Client,
        refetch_interval: Duration,
        max_age: Duration,
    ) -> KeyStore {
        KeyStore {
            source,
            http,
            keys: RwLock::new(Keys::default()),
            last_attempt: tokio::sync::Mutex::new(None),
            refetch_interval,
            max_age,
        }
    }

    /// Loads the keys now: a bad file, an unreachable `jwks_uri` or a set without a usable key
    /// is an error.
    pub(crate) async fn load(&self) -> Result<(), OAuthError> {
        let keys = self.fetch().await?;
        if keys.by_kid.is_empty() && keys.without_kid.is_empty() {
            return Err(OAuthError::Keys(
                "the key set has no key that can check a signature (RSA, EC P-256/P-384 or \
                 Ed25519, for signing)"
                    .to_owned(),
            ));
        }
        *self.keys.write().unwrap_or_else(PoisonError::into_inner) = keys;
        *self.last_attempt.lock().await = Some(Instant::now());
        Ok(())
    }

    /// The key for a token with header `kid` and `algorithm`: from the cache, or after
    /// fetching the keys again (when the `kid` is unknown or the keys are old, at most once
    /// per refetch interval).
    pub(crate) async fn key(
        &self,
        kid: Option<&str>,
        algorithm: Algorithm,
    ) -> Result<Arc<Key>, KeyError> {
        let (found, stale) = self.lookup(kid, algorithm);
        match (found, stale) {
            (Some(key), false) => return Ok(key),
            (found, _) => {
                if self.refresh().await.is_err() {
                    return found.ok_or(KeyError::Unavailable);
                }
            }
        }
        self.lookup(kid, algorithm).0.ok_or(KeyError::Unknown)
    }

    fn lookup(&self, kid: Option<&str>, algorithm: Algorithm) -> (Option<Arc<Key>>, bool) {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        let stale = !matches!(self.source, Jwks::Set(_))
            && keys.loaded.is_none_or(|at| at.elapsed() > self.max_age);
        let found = match kid {
            Some(kid) => keys.by_kid.get(kid).filter(|key| key.fits(algorithm)),
            None => {
                // Without a `kid`, only an unambiguous key: exactly one that fits.
                let mut fitting = keys
                    .without_kid
                    .iter()
                    .chain(keys.by_kid.values())
                    .filter(|key| key.fits(algorithm));
                match (fitting.next(), fitting.next()) {
                    (Some(key), None) => Some(key),
                    _ => None,
                }
            }
        };
        (found.cloned(), stale)
    }

    /// Fetches or reads the keys again, unless that was tried less than the refetch interval
    /// ago (then the keys stay as they are, and this is not an error).
    async fn refresh(&self) -> Result<(), ()> {
        let mut last = self.last_attempt.lock().await;
        if last.is_some_and(|at| at.elapsed() < self.refetch_interval) {
            return Ok(());
        }
        *last = Some(Instant::now());
        match self.fetch().await {
            Ok(keys) => {
                let count = keys.by_kid.len() + keys.without_kid.len();
                tracing::info!(keys = count, "fetched the token signing keys");
                *self.keys.write().unwrap_or_else(PoisonError::into_inner) = keys;
                Ok(())
            }
            Err(error) => {
                let error = error.to_string();
                tracing::warn!(
                    error = %crate::logging::escape(&error),
                    "could not fetch the token signing keys"
                );
                Err(())
            }
        }
    }

    async fn fetch(&self) -> Result<Keys, OAuthError> {
        let set = match &self.source {
            Jwks::Set(set) => set.clone(),
            Jwks::File(path) => parse_set(&read_jwks_file(path)?)?,
            Jwks::Uri(uri) => {
                let fetched = async {
                    let response = self.http.get(uri).send().await?.error_for_status()?;
                    response.bytes().await
                }
                .await
                .map_err(|error| {
                    OAuthError::Keys(format!(
                        "cannot fetch the JWKS at {uri}: {}",
                        super::validator::with_causes(&error)
                    ))
                })?;
                let text = std::str::from_utf8(&fetched).map_err(|_| {
                    OAuthError::Keys(format!("the JWKS at {uri} is not UTF-8 text"))
                })?;
                parse_set(text)?
            }
        };
        let mut keys = Keys {
            loaded: Some(Instant::now()),
            ..Keys::default()
        };
        for jwk in &set.keys {
            let Some(key) = usable(jwk) else {
                continue;
            };
            match &jwk.common.key_id {
                Some(kid) => {
                    keys.by_kid.insert(kid.clone(), Arc::new(key));
                }
                None => keys.without_kid.push(Arc::new(key)),
            }
        }
        Ok(keys)
    }
}

/// The key a JWK stands for, if it is a signing key this crate can check signatures with.
fn usable(jwk: &Jwk) -> Option<Key> {
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return None;
    }
    let decoding = DecodingKey::from_jwk(jwk).ok()?;
    if decoding.family() == AlgorithmFamily::Hmac {
        // A symmetric key is a shared secret: never accepted from a key set.
        return None;
    }
    let algorithm = match jwk.common.key_algorithm {
        None => None,
        Some(algorithm) => Some(signing_algorithm(algorithm)?),
    };
    Some(Key {
        decoding,
        algorithm,
    })
}

/// The signature algorithm a JWK's `alg` names; `None` for an encryption algorithm.
fn signing_algorithm(algorithm: KeyAlgorithm) -> Option<Algorithm> {
    Some(match algorithm {
        KeyAlgorithm::HS256 => Algorithm::HS256,
        KeyAlgorithm::HS384 => Algorithm::HS384,
        KeyAlgorithm::HS512 => Algorithm::HS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}
