//! One access token in, the principal it stands for (or why not) out.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use registry_core::Registry;

use super::challenge::Refusal;
use super::introspection::Introspector;
use super::keys::{Jwks, KeyStore};
use super::lru::Lru;
use super::metadata::Metadata;
use super::{OAuth, OAuthError, claims, jwt};
use crate::edge::Source;
use crate::tokens::Principal;

/// An [`OAuth`] configuration made ready: keys loaded, metadata written.
pub(crate) struct Validator {
    oauth: OAuth,
    keys: Option<KeyStore>,
    introspector: Option<Introspector>,
    pub(crate) metadata: Arc<Metadata>,
    /// JWTs already checked, by SHA-256: the same bytes verify the same way, so a client
    /// that sends its token with every request pays for the signature once a minute. Full,
    /// it forgets the least recently used.
    checked: Mutex<Lru<[u8; 32], Checked>>,
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
        for (what, url) in fetched_urls(&oauth) {
            check_url(what, url, oauth.allow_insecure_http)?;
            if url.starts_with("https://") && !cfg!(feature = "tls") {
                return Err(OAuthError::Config(format!(
                    "{url} is https://: enable registry-mcp's `tls` feature to fetch it"
                )));
            }
        }
        let http = reqwest::Client::builder()
            .timeout(oauth.fetch_timeout)
            .redirect(same_origin_redirects())
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
            checked: Mutex::new(Lru::new(CHECKED_MAX)),
        })
    }

    /// The principal `token` stands for: a JWT checked with the keys, anything else (or any
    /// token, without keys) introspected.
    /// `digest` is the token's SHA-256 (`tokens::token_digest`), computed once per request;
    /// `peer` the address the request came from, whose introspection refusals are limited.
    pub(crate) async fn principal(
        &self,
        token: &str,
        digest: [u8; 32],
        peer: Option<IpAddr>,
    ) -> Result<Principal, Refusal> {
        // A JWT checked before: its principal, without parsing or verifying it again.
        let now = SystemTime::now();
        {
            let mut checked = self.checked.lock().unwrap_or_else(PoisonError::into_inner);
            match checked.get_mut(&digest) {
                Some(entry) if entry.until > now => return Ok(entry.principal.clone()),
                Some(_) => checked.remove(&digest),
                None => {}
            }
        }
        let claims = match (&self.keys, &self.introspector) {
            (Some(keys), _) if jwt::looks_like_jwt(token) => {
                let claims = jwt::validate(token, &self.oauth, keys).await?;
                let principal = claims::principal(&claims, &self.oauth)?;
                self.remember(digest, &principal, &claims, now);
                return Ok(principal);
            }
            (_, Some(introspector)) => {
                introspector
                    .claims(token, digest, &self.oauth, Source::of(peer))
                    .await?
            }
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
        self.checked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                digest,
                Checked {
                    principal: principal.clone(),
                    until,
                },
            );
    }
}

/// The URLs the server fetches, and what each is: the `jwks_uri`, the introspection endpoint.
fn fetched_urls(oauth: &OAuth) -> Vec<(&'static str, &str)> {
    let mut urls = Vec::new();
    if let Some(Jwks::Uri(uri)) = &oauth.jwks {
        urls.push(("the JWKS URL", uri.as_str()));
    }
    if let Some(introspection) = &oauth.introspection {
        urls.push((
            "the introspection endpoint",
            introspection.endpoint.as_str(),
        ));
    }
    urls
}

/// How many redirects a fetch of the keys or an introspection follows at most.
const MAX_REDIRECTS: usize = 5;

/// The redirects a fetch of the keys or an introspection follows: within the origin (scheme,
/// host and port) of the URL configured, [`MAX_REDIRECTS`] at most. A redirect to another
/// origin is an error, so the request fails (503 for the token, as for keys that cannot be
/// fetched): keys from wherever the issuer's server points would be keys from a server
/// nobody configured (nor checked with [`check_url`]), and an introspection request carries
/// the token and the server's own credentials.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let from = attempt.previous().first().map(reqwest::Url::origin);
        let to = attempt.url().origin();
        if from.as_ref() != Some(&to) {
            attempt.error(format!(
                "redirected to another origin, {}, which is not followed: configure the URL \
                 that answers itself",
                to.ascii_serialization()
            ))
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// An HTTP client's error with its causes (reqwest's own text leaves them out: a refused
/// redirect reads "error following redirect" without saying why), for the log.
pub(crate) fn with_causes(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        text.push_str(": ");
        text.push_str(&error.to_string());
        cause = error.source();
    }
    text
}

/// Whether `url`'s host is this machine: `localhost`, or a loopback address (127.0.0.0/8,
/// `[::1]`). The one rule for every URL a token or a key may reach in the clear (JWKS,
/// introspection, an upstream's `token_env`).
pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    url.host_str().is_some_and(registry_lint::is_loopback_host)
}

/// Refuses a URL that is not `https://`, unless it is `http://` to a loopback host (the
/// identity provider on this machine, or a sidecar) or `allow_insecure_http` says the path is
/// trusted: keys or introspection answers fetched in the clear can be forged on the way.
fn check_url(what: &str, url: &str, allow_insecure_http: bool) -> Result<(), OAuthError> {
    let shown = crate::logging::escape(url);
    let parsed = reqwest::Url::parse(url)
        .map_err(|error| OAuthError::Config(format!("{what} {shown:?} is not a URL ({error})")))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" => {
            if is_loopback(&parsed) || allow_insecure_http {
                Ok(())
            } else {
                Err(OAuthError::Config(format!(
                    "{what} {shown} is plain http:// to a host that is not loopback: what it \
                     answers could be forged on the way; use https:// (with registry-mcp's \
                     `tls` feature), or, if the network path is trusted, say so with \
                     `OAuth::allow_insecure_http`"
                )))
            }
        }
        other => Err(OAuthError::Config(format!(
            "{what} {shown} has the scheme {other:?}: give an https:// URL (or http:// to \
             loopback, or http:// with `OAuth::allow_insecure_http`)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http_unless_allowed() {
        for good in [
            "https://idp.example.com/jwks",
            "http://127.0.0.1:9000/jwks",
            "http://127.1.2.3/introspect",
            "http://localhost:8080/jwks",
            "http://[::1]:8080/jwks",
        ] {
            assert!(check_url("the JWKS URL", good, false).is_ok(), "{good}");
        }
        let error = check_url("the JWKS URL", "http://idp.internal:9000/jwks", false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("the JWKS URL http://idp.internal:9000/jwks is plain http://"));
        assert!(error.contains("https://") && error.contains("OAuth::allow_insecure_http"));
        assert!(check_url("x", "http://idp.internal:9000/jwks", true).is_ok());
        assert!(check_url("x", "http://localhost.evil.com/jwks", false).is_err());
        assert!(check_url("x", "ftp://idp.example.com/jwks", true).is_err());
        assert!(check_url("x", "not a url", true).is_err());
    }
}
