//! The server as an OAuth 2.1 resource server: access tokens from an organisation's identity
//! provider, validated for this server alone, their scopes becoming the subject's.

mod challenge;
mod claims;
mod introspection;
mod jwt;
mod keys;
mod lru;
mod metadata;
mod step_up;
mod validator;

use std::path::PathBuf;
use std::time::Duration;

pub(crate) use challenge::Refusal;
pub use introspection::Introspection;
pub use jsonwebtoken::Algorithm;
pub use keys::Jwks;

pub(crate) use metadata::metadata_router;
pub(crate) use step_up::{StepUp, step_up};
pub(crate) use validator::{Validator, is_loopback};

/// How the HTTP transport accepts access tokens issued by an identity provider (Okta, Entra
/// ID, Auth0, Keycloak...), as the MCP authorization spec asks of a server: an OAuth 2.1
/// resource server.
///
/// - **JWT access tokens** are checked against the issuer's keys ([`Jwks`]: a file, or the
///   issuer's `jwks_uri`, cached and fetched again when a token names an unknown `kid`, at most
///   once per [`refetch_interval`](Self::with_refetch_interval)): the signature, with an
///   algorithm of [`algorithms`](Self::with_algorithms) (asymmetric only: `none` and HMAC are
///   refused, so a public key can never be used as an HMAC secret); `iss` equal to the
///   issuer; `aud` naming this server's [`resource`](Self::resource) (RFC 8707), so that a
///   token minted for another service is refused here; `exp` and `nbf`, with
///   [`leeway`](Self::with_leeway); `sub`; and `typ`, when the token has one: `at+jwt`
///   (RFC 9068) or `JWT`, so that an ID token or another kind of JWT signed by the same
///   issuer is not taken for an access token.
/// - **Opaque tokens** go to RFC 7662 introspection, if configured ([`Introspection`]).
/// - **Claims to subject:** `scope` (space-separated; or `scp`, an array or a string) gives the
///   subject's scopes; the tenant comes from the claim named by
///   [`tenant_claim`](Self::with_tenant_claim) (default `tenant`); the agent from `azp`, else
///   `client_id`; read-only access from [`read_only_scope`](Self::with_read_only_scope) or
///   [`read_only_claim`](Self::with_read_only_claim). The principal's id is `sub`: a session
///   stays with the `sub` (and tenant) that opened it, whatever token of theirs comes next.
/// - **Metadata:** RFC 9728 protected-resource metadata at
///   `/.well-known/oauth-protected-resource` and its path-suffixed form, naming the
///   authorization servers and, as `scopes_supported`, every scope the registry's tools ask for
///   but the `upstream:{name}` scopes of federated upstreams, which would name each upstream
///   to anyone (see [`with_scopes_supported`](Self::with_scopes_supported)).
/// - **Fetches** of the keys and of introspection follow redirects within the URL's origin
///   only (scheme, host and port): a redirect to another origin fails the fetch, as keys that
///   cannot be fetched do.
/// - **Refusals** are RFC 6750's: 401 with `WWW-Authenticate: Bearer
///   resource_metadata="..."` (and `error="invalid_token"` when a token was presented), 400
///   for a token in the query string, 503 when the keys to check a token cannot be fetched
///   (it fails closed).
///
/// ```
/// use std::time::Duration;
/// use registry_mcp::{HttpConfig, Jwks, OAuth, Tokens};
///
/// let oauth = OAuth::new("https://mcp.example.com/mcp", "https://idp.example.com/")
///     .with_jwks(Jwks::uri("https://idp.example.com/.well-known/jwks.json"))
///     .with_tenant_claim("org")
///     .with_read_only_scope("tools:read-only")
///     .with_leeway(Duration::from_secs(30));
/// let config = HttpConfig::new(Tokens::new()).with_oauth(oauth);
/// assert_eq!(config.oauth.unwrap().resource(), "https://mcp.example.com/mcp");
/// ```
#[derive(Debug, Clone)]
#[must_use = "an OAuth configuration does nothing until it is given to `HttpConfig::with_oauth`"]
pub struct OAuth {
    pub(crate) resource: String,
    pub(crate) issuer: String,
    pub(crate) authorization_servers: Vec<String>,
    pub(crate) jwks: Option<Jwks>,
    pub(crate) introspection: Option<Introspection>,
    pub(crate) algorithms: Vec<Algorithm>,
    pub(crate) leeway: Duration,
    pub(crate) tenant_claim: String,
    pub(crate) default_tenant: Option<String>,
    pub(crate) read_only: Option<ReadOnly>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) refetch_interval: Duration,
    pub(crate) jwks_max_age: Duration,
    pub(crate) fetch_timeout: Duration,
    pub(crate) allow_insecure_http: bool,
}

/// What makes a token's subject read-only.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReadOnly {
    /// The token carries this scope.
    Scope(String),
    /// The token's claim `name` equals `value`.
    Claim {
        name: String,
        value: serde_json::Value,
    },
}

impl OAuth {
    /// Tokens issued by `issuer` (its `iss`, exactly) for `resource`: this server's canonical
    /// URI (say `https://mcp.example.com/mcp`), which every token's `aud` must name.
    ///
    /// Give the keys with [`with_jwks`](Self::with_jwks) and/or opaque tokens' introspection
    /// with [`with_introspection`](Self::with_introspection). Defaults: the issuer as the only
    /// authorization server; algorithms RS256, RS384, RS512, PS256, PS384, PS512, ES256,
    /// ES384 and EdDSA; 60 s of leeway; the tenant from claim `tenant`, no default tenant; no
    /// read-only rule; keys fetched again at most every 10 s for an unknown `kid`, and after
    /// an hour in any case; 5 s to fetch.
    pub fn new(resource: impl Into<String>, issuer: impl Into<String>) -> Self {
        let issuer = issuer.into();
        OAuth {
            resource: resource.into(),
            authorization_servers: vec![issuer.clone()],
            issuer,
            jwks: None,
            introspection: None,
            algorithms: vec![
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
                Algorithm::ES256,
                Algorithm::ES384,
                Algorithm::EdDSA,
            ],
            leeway: Duration::from_secs(60),
            tenant_claim: "tenant".to_owned(),
            default_tenant: None,
            read_only: None,
            scopes_supported: None,
            refetch_interval: Duration::from_secs(10),
            jwks_max_age: Duration::from_secs(60 * 60),
            fetch_timeout: Duration::from_secs(5),
            allow_insecure_http: false,
        }
    }

    /// The keys JWT access tokens are signed with.
    pub fn with_jwks(mut self, jwks: Jwks) -> Self {
        self.jwks = Some(jwks);
        self
    }

    /// Opaque tokens (those that are not JWTs) are checked with RFC 7662 introspection.
    pub fn with_introspection(mut self, introspection: Introspection) -> Self {
        self.introspection = Some(introspection);
        self
    }

    /// The authorization servers the metadata names (default: the issuer).
    pub fn with_authorization_servers<I, S>(mut self, servers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.authorization_servers = servers.into_iter().map(Into::into).collect();
        self
    }

    /// The signature algorithms accepted. Only asymmetric ones: an HMAC algorithm (`HS*`) is
    /// refused when the server starts, since a resource server checks an identity provider's
    /// tokens with its public keys, and a public key must never serve as an HMAC secret.
    pub fn with_algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// How far `exp` and `nbf` may be off, for clocks that drift. Default 60 s.
    pub fn with_leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The claim that names the subject's tenant (a string). Default `tenant`.
    pub fn with_tenant_claim(mut self, claim: impl Into<String>) -> Self {
        self.tenant_claim = claim.into();
        self
    }

    /// The tenant of a token without the tenant claim. Without it (the default), such a token
    /// is refused.
    pub fn with_default_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.default_tenant = Some(tenant.into());
        self
    }

    /// A token carrying this scope acts read-only: it sees only tools marked `read_only`.
    pub fn with_read_only_scope(mut self, scope: impl Into<String>) -> Self {
        self.read_only = Some(ReadOnly::Scope(scope.into()));
        self
    }

    /// A token whose claim `name` equals `value` acts read-only.
    pub fn with_read_only_claim(
        mut self,
        name: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        self.read_only = Some(ReadOnly::Claim {
            name: name.into(),
            value: value.into(),
        });
        self
    }

    /// The scopes the metadata lists as `scopes_supported`, exactly. Default: every scope the
    /// registry's tools ask for, but the `upstream:{name}` scopes of federated upstreams
    /// ([`UpstreamConfig::default_scope`](crate::upstream::UpstreamConfig::default_scope)):
    /// the metadata is open to anyone, and those name the upstreams. List them here if
    /// clients must learn them.
    ///
    /// ```
    /// use registry_mcp::OAuth;
    ///
    /// let oauth = OAuth::new("https://mcp.example.com/mcp", "https://idp.example.com/")
    ///     .with_scopes_supported(["build:read", "deploy:write"]);
    /// # let _ = oauth;
    /// ```
    pub fn with_scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The least time between two fetches of the keys for an unknown `kid` (key rotation),
    /// so that tokens with made-up `kid`s cannot make the server hammer the identity
    /// provider. Default 10 s.
    pub fn with_refetch_interval(mut self, interval: Duration) -> Self {
        self.refetch_interval = interval;
        self
    }

    /// How long fetched keys are used before they are fetched again. Default 1 hour.
    pub fn with_jwks_max_age(mut self, max_age: Duration) -> Self {
        self.jwks_max_age = max_age;
        self
    }

    /// How long a fetch of the keys or an introspection may take. Default 5 s.
    pub fn with_fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// Lets the JWKS URL and the introspection endpoint be plain `http://` to a host that is
    /// not loopback. Without it (the default) such a URL fails the configuration: keys or
    /// introspection answers fetched in the clear can be forged by anyone on the path, and so
    /// can every token. `https://` is always accepted, and `http://` to loopback
    /// (`localhost`, `127.0.0.0/8`, `::1`: an identity provider or sidecar on this machine).
    /// Say it only when the network path is trusted (a private link, a service mesh that
    /// encrypts).
    ///
    /// ```
    /// use registry_mcp::{Jwks, OAuth};
    ///
    /// let oauth = OAuth::new("https://mcp.example.com/mcp", "https://idp.example.com/")
    ///     .with_jwks(Jwks::uri("http://idp.internal:9000/jwks.json"))
    ///     .allow_insecure_http();
    /// # let _ = oauth;
    /// ```
    pub fn allow_insecure_http(mut self) -> Self {
        self.allow_insecure_http = true;
        self
    }

    /// This server's canonical URI, which tokens' `aud` must name.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The issuer tokens' `iss` must equal.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }
}

/// Why an [`OAuth`] configuration cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// A setting is wrong.
    #[error("OAuth configuration: {0}")]
    Config(String),
    /// The keys could not be read or fetched.
    #[error("OAuth keys: {0}")]
    Keys(String),
}

/// A file of keys, read as a JSON Web Key Set.
pub(crate) fn read_jwks_file(path: &PathBuf) -> Result<String, OAuthError> {
    std::fs::read_to_string(path).map_err(|error| {
        OAuthError::Keys(format!(
            "cannot read the JWKS file {}: {error}",
            path.display()
        ))
    })
}
