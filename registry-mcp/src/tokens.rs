//! Bearer tokens for the HTTP transport, and the subjects they stand for.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use registry_core::{Subject, access::Access};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The shortest token accepted, in bytes: a shorter one is too easy to guess.
pub const MIN_TOKEN_LEN: usize = 16;

/// Who sent an HTTP request: the token entry it presented (by its id, never the token) and
/// the subject the token stands for.
///
/// The HTTP transport puts it into the request's extensions once the bearer token is known.
///
/// **The person.** The subject carries the principal's id
/// ([`Subject::principal`](registry_core::Subject::principal)), which decides whose approval
/// requests a run may decide, whose rate-limit buckets and share of pending approvals a call
/// counts against, and what audit events name:
///
/// - an OAuth access token's is `oauth:{n}:{issuer}#{sub}`, where `n` is the issuer's
///   length in bytes (in decimal): the length says
///   where the issuer ends, so no issuer and `sub` (each may hold any character, `#` and `:`
///   included) read as another pair, and two issuers' users never share one;
/// - a static token's is `token:{name}`, where the name is the token entry's id unless
///   [`with_principal_name`](Self::with_principal_name) (the token file's `"principal"`) gives
///   another; several tokens of one person may name the same principal and then share their
///   approvals and buckets. The prefixes keep the two kinds apart.
/// - the loopback principal ([`HttpConfig::with_loopback_principal`](crate::HttpConfig::with_loopback_principal))
///   is a static one: every local client acts as that one principal.
///
/// ```
/// use registry_core::Subject;
/// use registry_mcp::Principal;
///
/// let bot = Principal::new("release-bot", Subject::new("acme"));
/// assert_eq!(bot.subject().principal(), Some("token:release-bot"));
/// let laptop = Principal::new("alice-laptop", Subject::new("acme")).with_principal_name("alice");
/// assert_eq!(laptop.subject().principal(), Some("token:alice"));
/// let user = Principal::new("u1", Subject::new("acme")).with_issuer("https://idp.example.com");
/// assert_eq!(user.subject().principal(), Some("oauth:23:https://idp.example.com#u1"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Principal {
    id: Arc<str>,
    subject: Subject,
    issuer: Option<Arc<str>>,
    /// The issuer and id, unambiguously: see [`key`](Self::key).
    key: Arc<str>,
    /// A static token's principal name (default: the id).
    name: Arc<str>,
}

impl Principal {
    /// A principal named `id` acting as `subject`; the subject's principal becomes
    /// `token:{id}` (whatever it was).
    pub fn new(id: impl Into<Arc<str>>, subject: Subject) -> Self {
        let id: Arc<str> = id.into();
        Principal {
            key: id.clone(),
            name: id.clone(),
            subject: subject.with_principal(format!("token:{id}")),
            id,
            issuer: None,
        }
    }

    /// The same principal, vouched for by `issuer`: an OAuth access token's principal is its
    /// `sub` as the token's issuer names it, and two issuers' (or a static token's) principals
    /// with the same id are not the same one. The subject's principal becomes
    /// `oauth:{n}:{issuer}#{id}` (`n`: the issuer's length in bytes).
    #[must_use]
    pub fn with_issuer(mut self, issuer: impl Into<Arc<str>>) -> Self {
        let issuer: Arc<str> = issuer.into();
        self.key = Arc::from(format!("{}:{issuer}{}", issuer.len(), self.id));
        let principal = format!("oauth:{}:{issuer}#{}", issuer.len(), self.id);
        self.subject = self.subject.with_principal(principal);
        self.issuer = Some(issuer);
        self
    }

    /// For a static token: names the person it stands for, `name`, instead of the entry's id,
    /// so that several tokens of one person share their approvals, rate-limit buckets and
    /// bound on pending approvals; the subject's principal becomes `token:{name}`.
    /// [`Tokens::insert`] refuses an empty name. A principal with an issuer keeps its
    /// issuer's `sub` as it is: this changes nothing there.
    #[must_use]
    pub fn with_principal_name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        if self.issuer.is_none() {
            self.subject = self.subject.with_principal(format!("token:{}", self.name));
        }
        self
    }

    /// Who vouches for the principal: the issuer of its access token; `None` for a static
    /// token.
    pub fn issuer(&self) -> Option<&str> {
        self.issuer.as_deref()
    }

    /// A key naming the principal alone (its issuer and id, unambiguously), for the edge's
    /// per-principal limits and session ownership.
    pub(crate) fn key(&self) -> &Arc<str> {
        &self.key
    }

    /// Whether `other` is the same principal (same issuer and id; the scopes may differ).
    pub fn same_as(&self, other: &Principal) -> bool {
        self.id == other.id && self.issuer == other.issuer
    }

    /// The id of the token entry: what the logs and run ids name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The subject the token stands for, its principal set (see the type's docs).
    pub fn subject(&self) -> &Subject {
        &self.subject
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("id", &self.id)
            .field("subject", &self.subject)
            .field("issuer", &self.issuer)
            .field("name", &self.name)
            .finish()
    }
}

/// The accepted bearer tokens, each standing for a [`Principal`].
///
/// Tokens are kept only as SHA-256 digests, so a token file may list digests instead of the
/// tokens themselves (`token_sha256`), and is then no secret. The file is JSON:
///
/// ```json
/// {
///   "tokens": [
///     {
///       "id": "support-bot",
///       "token": "a long random string, at least 16 bytes",
///       "tenant": "acme",
///       "scopes": ["build:read"],
///       "access": "read_only",
///       "agent": "support-bot",
///       "principal": "support-team"
///     },
///     {
///       "id": "release-bot",
///       "token_sha256": "64 hex digits: sha256 of the token",
///       "tenant": "acme",
///       "scopes": ["build:read", "build:write", "deploy:write"]
///     }
///   ]
/// }
/// ```
///
/// `id` (unique) names the entry in logs and run ids; exactly one of `token` and
/// `token_sha256`; `tenant` is required; `scopes` defaults to none, `access` to
/// `"read_write"` (or `"read_only"`), `agent` to the id, `principal` (the person the token
/// stands for, [`Principal::with_principal_name`]; never empty) to the id. Unknown keys are
/// errors.
///
/// ```
/// use registry_mcp::Tokens;
///
/// let tokens = Tokens::from_json(r#"{"tokens": [
///     {"id": "bot", "token": "0123456789abcdef-bot", "tenant": "acme", "scopes": ["build:read"]}
/// ]}"#).unwrap();
/// let principal = tokens.resolve("0123456789abcdef-bot").unwrap();
/// assert_eq!(principal.id(), "bot");
/// assert!(principal.subject().has_scope("build:read"));
/// assert!(tokens.resolve("0123456789abcdef-bo").is_none());
/// ```
#[derive(Clone, Default)]
pub struct Tokens {
    by_digest: HashMap<[u8; 32], Principal>,
}

/// A token file or entry that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The file could not be read.
    #[error("cannot read the tokens file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not the expected JSON.
    #[error("the tokens file is not valid: {0}")]
    Syntax(String),
    /// An entry is wrong.
    #[error("token entry {id:?}: {problem}")]
    Entry {
        /// The entry's id.
        id: String,
        /// What is wrong with it.
        problem: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFile {
    tokens: Vec<TokenEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenEntry {
    id: String,
    token: Option<String>,
    token_sha256: Option<String>,
    tenant: String,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    access: AccessLevel,
    agent: Option<String>,
    principal: Option<String>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum AccessLevel {
    #[default]
    ReadWrite,
    ReadOnly,
}

impl Tokens {
    /// No tokens: every request is refused.
    pub fn new() -> Self {
        Tokens::default()
    }

    /// Reads a JSON token file (see the type's docs for its format).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, TokenError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Tokens::from_json(&text)
    }

    /// Parses the JSON of a token file.
    pub fn from_json(text: &str) -> Result<Self, TokenError> {
        let file: TokenFile =
            serde_json::from_str(text).map_err(|error| TokenError::Syntax(error.to_string()))?;
        let mut tokens = Tokens::new();
        for entry in file.tokens {
            let problem = |problem: &str| TokenError::Entry {
                id: entry.id.clone(),
                problem: problem.to_owned(),
            };
            let digest = match (&entry.token, &entry.token_sha256) {
                (Some(token), None) => {
                    check_token(token).map_err(|p| problem(&p))?;
                    digest(token)
                }
                (None, Some(hex)) => parse_digest(hex)
                    .ok_or_else(|| problem("token_sha256 must be 64 hexadecimal digits"))?,
                _ => {
                    return Err(problem(
                        "give exactly one of \"token\" and \"token_sha256\"",
                    ));
                }
            };
            let mut subject = Subject::new(entry.tenant.as_str()).with_scopes(entry.scopes);
            if let AccessLevel::ReadOnly = entry.access {
                subject = subject.with_access(Access::ReadOnly);
            }
            let agent = entry.agent.unwrap_or_else(|| entry.id.clone());
            let mut principal = Principal::new(entry.id.as_str(), subject.with_agent(agent));
            if let Some(name) = entry.principal {
                principal = principal.with_principal_name(name);
            }
            tokens.insert_digest(digest, principal)?;
        }
        Ok(tokens)
    }

    /// Accepts `token` for `principal`.
    pub fn insert(&mut self, token: &str, principal: Principal) -> Result<(), TokenError> {
        check_token(token).map_err(|problem| TokenError::Entry {
            id: principal.id().to_owned(),
            problem,
        })?;
        self.insert_digest(digest(token), principal)
    }

    fn insert_digest(&mut self, digest: [u8; 32], principal: Principal) -> Result<(), TokenError> {
        let duplicate = |problem: &str| TokenError::Entry {
            id: principal.id().to_owned(),
            problem: problem.to_owned(),
        };
        if principal.id().is_empty() {
            return Err(duplicate("the id is empty"));
        }
        if principal.name.is_empty() {
            return Err(duplicate(
                "the principal is empty; name the person the token stands for, or leave it out to use the id",
            ));
        }
        if self.by_digest.values().any(|p| p.id() == principal.id()) {
            return Err(duplicate("another entry has the same id"));
        }
        if self.by_digest.contains_key(&digest) {
            return Err(duplicate("another entry has the same token"));
        }
        self.by_digest.insert(digest, principal);
        Ok(())
    }

    /// The principal `token` stands for, if it is accepted.
    pub fn resolve(&self, token: &str) -> Option<&Principal> {
        self.resolve_digest(&digest(token))
    }

    /// The principal of the token whose SHA-256 is `digest` ([`token_digest`]).
    pub(crate) fn resolve_digest(&self, digest: &[u8; 32]) -> Option<&Principal> {
        self.by_digest.get(digest)
    }

    /// How many tokens are accepted.
    pub fn len(&self) -> usize {
        self.by_digest.len()
    }

    /// Whether no token is accepted.
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }

    /// The accepted principals, by id.
    pub fn principals(&self) -> impl Iterator<Item = &Principal> + '_ {
        let mut principals: Vec<&Principal> = self.by_digest.values().collect();
        principals.sort_by(|a, b| a.id().cmp(b.id()));
        principals.into_iter()
    }
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the digests: only who may connect.
        f.debug_list().entries(self.principals()).finish()
    }
}

fn check_token(token: &str) -> Result<(), String> {
    if token.len() < MIN_TOKEN_LEN {
        return Err(format!(
            "the token is shorter than {MIN_TOKEN_LEN} bytes; use a long random string"
        ));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("the token must be printable ASCII without spaces".to_owned());
    }
    Ok(())
}

/// A token's SHA-256: how static tokens are kept, and how checked OAuth tokens are
/// remembered. Computed once per request.
pub(crate) fn token_digest(token: &str) -> [u8; 32] {
    digest(token)
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut digest = [0u8; 32];
    for (byte, pair) in digest.iter_mut().zip(hex.chunks(2)) {
        let high = (pair[0] as char).to_digit(16)?;
        let low = (pair[1] as char).to_digit(16)?;
        *byte = u8::try_from(high * 16 + low).ok()?;
    }
    Some(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_and_plain_tokens_resolve_alike() {
        let hex: String = digest("0123456789abcdef-xyz")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let text = format!(
            r#"{{"tokens": [{{"id": "a", "token_sha256": "{hex}", "tenant": "t", "access": "read_only"}}]}}"#
        );
        let tokens = Tokens::from_json(&text).unwrap();
        let principal = tokens.resolve("0123456789abcdef-xyz").unwrap();
        assert_eq!(principal.subject().access(), Access::ReadOnly);
        assert_eq!(principal.subject().agent(), Some("a"));
        assert_eq!(principal.subject().principal(), Some("token:a"));
    }

    #[test]
    fn a_token_names_its_principal_never_empty() {
        let tokens = Tokens::from_json(
            r#"{"tokens": [
                {"id": "alice-laptop", "token": "0123456789abcdef-1", "tenant": "t", "principal": "alice"},
                {"id": "alice-ci", "token": "0123456789abcdef-2", "tenant": "t", "principal": "alice"},
                {"id": "bob", "token": "0123456789abcdef-3", "tenant": "t"}
            ]}"#,
        )
        .unwrap();
        let of = |token: &str| tokens.resolve(token).unwrap().subject().principal();
        assert_eq!(of("0123456789abcdef-1"), Some("token:alice"));
        assert_eq!(of("0123456789abcdef-2"), Some("token:alice"));
        assert_eq!(of("0123456789abcdef-3"), Some("token:bob"));
        let error = Tokens::from_json(
            r#"{"tokens": [{"id": "a", "token": "0123456789abcdef", "tenant": "t", "principal": ""}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("principal is empty"), "{error}");
        // Whatever the application put in the subject, the token's principal is the token's.
        let forged = Principal::new("bot", Subject::new("t").with_principal("token:alice"));
        assert_eq!(forged.subject().principal(), Some("token:bot"));
    }

    #[test]
    fn issuer_and_sub_are_encoded_injectively() {
        let principal = |issuer: &str, sub: &str| {
            Principal::new(sub, Subject::new("t"))
                .with_issuer(issuer)
                .subject()
                .principal()
                .unwrap()
                .to_owned()
        };
        // Moving a `#` (or any text) between issuer and sub makes another principal.
        let pairs = [
            ("https://a.example", "x#y"),
            ("https://a.example#x", "y"),
            ("https://a.example#", "x#y"),
            ("https://a.example", "#x#y"),
            ("https://a.exampl", "e#x#y"),
            ("https://a.example", "x\0y"),
            ("https://a.example", "x\u{202e}y"),
        ];
        let encoded: Vec<String> = pairs.iter().map(|(i, s)| principal(i, s)).collect();
        for (i, a) in encoded.iter().enumerate() {
            for b in &encoded[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(encoded[0], "oauth:17:https://a.example#x#y");
        // A static token with the text of an OAuth principal is still another one.
        let static_one = Principal::new("oauth:17:https://a.example#x#y", Subject::new("t"));
        assert!(!encoded.contains(&static_one.subject().principal().unwrap().to_owned()));
    }

    #[test]
    fn bad_entries_are_refused() {
        for (text, expected) in [
            (
                r#"{"tokens": [{"id": "a", "token": "short", "tenant": "t"}]}"#,
                "shorter",
            ),
            (r#"{"tokens": [{"id": "a", "tenant": "t"}]}"#, "exactly one"),
            (
                r#"{"tokens": [{"id": "a", "token_sha256": "zz", "tenant": "t"}]}"#,
                "64",
            ),
            (
                r#"{"tokens": [{"id": "a", "token": "0123456789abcdef", "tenant": "t", "scope": []}]}"#,
                "unknown field",
            ),
            (
                r#"{"tokens": [{"id": "a", "token": "0123456789abcdef", "tenant": "t"},
                               {"id": "a", "token": "0123456789abcdefg", "tenant": "t"}]}"#,
                "same id",
            ),
            (
                r#"{"tokens": [{"id": "a", "token": "0123456789abcdef", "tenant": "t"},
                               {"id": "b", "token": "0123456789abcdef", "tenant": "t"}]}"#,
                "same token",
            ),
        ] {
            let error = Tokens::from_json(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }
}
