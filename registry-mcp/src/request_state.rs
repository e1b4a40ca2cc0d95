//! The `requestState` of an `input_required` result (SEP-2322, protocol 2026-07-28), sealed:
//! [`RequestStates`].
//!
//! On 2026-07-28 a server that needs something from the client (an approval, an answer)
//! does not ask mid-call: it answers `resultType: "input_required"` with `inputRequests` and
//! an opaque `requestState`, and the client retries the request with `inputResponses` and the
//! state as it got it. Whatever the client sends back is untrusted, so the state is sealed:
//!
//! - **tamper-evident**: an HMAC-SHA256 tag, under a key of this server's (random at start, or
//!   one that replicas share), over everything in it;
//! - **bound to the principal** that the request acted for and **to the originating request**
//!   (a SHA-256 digest of its method, name and arguments): both enter the tag without being
//!   written into the state, so the state of one user's call does not verify for another user,
//!   nor for another tool or other arguments;
//! - **short-lived**: it carries its expiry (a TTL from when it was sealed);
//! - **used at most once**: each state has a random nonce, and an opened state's nonce is
//!   remembered until the state expires, in a store of bounded size, in which each principal
//!   has a share; a second retry with the same state is refused. When the store, or the
//!   principal's share of it, is full of live nonces, states are refused (that principal's
//!   only, for a full share) until some expire: the server fails closed rather than
//!   forgetting, and one principal cannot fill the store for the others.
//!
//! A refused state is answered with JSON-RPC error -32602 and a message saying what to do:
//! call again without it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The largest sealed state opened, in bytes: a longer one is refused unread.
const MAX_STATE_LEN: usize = 16 * 1024;

/// Seals and opens the `requestState` of `input_required` results: tamper-evident, bound to
/// a principal and to the originating request, expiring, and used at most once.
///
/// Cheap to clone (the key and the store of used states are shared). Every server has one
/// ([`ServerOptions::request_state_ttl`](crate::ServerOptions::request_state_ttl) and
/// [`ServerOptions::request_state_capacity`](crate::ServerOptions::request_state_capacity)
/// set its TTL and bound); an application that answers `input_required` itself (a prompt
/// that asks the user first, say) can seal its own states with one.
///
/// ```
/// use std::time::Duration;
/// use registry_mcp::{RequestDigest, RequestStateError, RequestStates};
/// use serde_json::json;
///
/// let states = RequestStates::new(Duration::from_secs(60), 1000);
/// let call = RequestDigest::of("tools/call", "deploy", &json!({"env": "prod"}));
/// let state = states.seal("alice", &call, "approval-7");
///
/// // Another user, or other arguments: the state does not verify.
/// assert_eq!(states.open(&state, "bob", &call), Err(RequestStateError::Invalid));
/// let other = RequestDigest::of("tools/call", "deploy", &json!({"env": "dev"}));
/// assert_eq!(states.open(&state, "alice", &other), Err(RequestStateError::Invalid));
///
/// // The same user and request: its payload, once.
/// assert_eq!(states.open(&state, "alice", &call).as_deref(), Ok("approval-7"));
/// assert_eq!(states.open(&state, "alice", &call), Err(RequestStateError::Used));
///
/// // One changed character anywhere: refused.
/// let mut forged = states.seal("alice", &call, "approval-8");
/// forged.insert(3, 'x');
/// assert_eq!(states.open(&forged, "alice", &call), Err(RequestStateError::Invalid));
/// ```
#[derive(Clone)]
pub struct RequestStates {
    inner: Arc<Inner>,
}

struct Inner {
    /// HMAC-SHA256 keyed with the server's key, cloned for each state.
    keyed: HmacSha256,
    ttl: Duration,
    capacity: usize,
    /// How many of the `capacity` one principal may hold.
    per_principal: AtomicUsize,
    used: Mutex<Used>,
}

/// The nonces of opened states, and how many each principal holds: changed together, under
/// one lock, so that checking and remembering a nonce is one step.
#[derive(Default)]
struct Used {
    /// Each nonce, with when its state expires (milliseconds since the epoch) and whose it is.
    nonces: HashMap<[u8; 16], (u64, Owner)>,
    /// How many nonces each principal holds (none: no entry).
    per_principal: HashMap<Owner, usize>,
}

/// A principal, as the store counts it: a digest of its text (fixed size, whatever the text).
type Owner = [u8; 16];

impl Used {
    /// Forgets the nonces of states expired at `now`.
    fn forget_expired(&mut self, now: u64) {
        let per_principal = &mut self.per_principal;
        self.nonces.retain(|_, (expires, owner)| {
            let live = *expires > now;
            if !live && let Some(count) = per_principal.get_mut(owner) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    per_principal.remove(owner);
                }
            }
            live
        });
    }

    fn held_by(&self, owner: &Owner) -> usize {
        self.per_principal.get(owner).copied().unwrap_or(0)
    }
}

/// The default share of one principal in the store of used states (at most the store's size).
pub const DEFAULT_REQUEST_STATES_PER_PRINCIPAL: usize = 250;

impl std::fmt::Debug for RequestStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("RequestStates")
            .field("ttl", &self.inner.ttl)
            .field("capacity", &self.inner.capacity)
            .field(
                "per_principal",
                &self.inner.per_principal.load(Ordering::Relaxed),
            )
            .finish_non_exhaustive()
    }
}

/// The key that seals `requestState`s: 32 bytes, shared by the replicas of one service (so
/// that a call retried on another replica verifies there) and kept secret like a token.
/// Its `Debug` shows no byte of it.
///
/// ```
/// use registry_mcp::RequestStateKey;
///
/// let key: RequestStateKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
///     .parse()
///     .unwrap();
/// assert_eq!(format!("{key:?}"), "RequestStateKey(..)");
/// let error = "abc".parse::<RequestStateKey>().unwrap_err();
/// assert!(error.contains("64 hexadecimal digits"), "{error}");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RequestStateKey([u8; 32]);

impl RequestStateKey {
    /// The key of these 32 bytes.
    pub fn new(bytes: [u8; 32]) -> RequestStateKey {
        RequestStateKey(bytes)
    }
}

impl std::fmt::Debug for RequestStateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestStateKey(..)")
    }
}

impl std::str::FromStr for RequestStateKey {
    type Err = String;

    /// 64 hexadecimal digits (surrounding whitespace ignored), e.g. the output of
    /// `openssl rand -hex 32`.
    fn from_str(text: &str) -> Result<RequestStateKey, String> {
        let text = text.trim();
        let invalid = || {
            format!(
                "a requestState key is 64 hexadecimal digits (32 bytes; make one with `openssl rand -hex 32`), not {} characters",
                text.chars().count()
            )
        };
        if text.len() != 64 || !text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(invalid());
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| invalid())?;
        }
        Ok(RequestStateKey(bytes))
    }
}

/// Why a `requestState` was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestStateError {
    /// Not a state this server sealed, altered, or sealed for another principal or another
    /// request.
    #[error(
        "the requestState does not verify: it was altered, or was made for another user or another request; call again without it"
    )]
    Invalid,
    /// Past its expiry.
    #[error("the requestState expired; call again without it")]
    Expired,
    /// Opened once already.
    #[error("the requestState was used already; call again without it")]
    Used,
    /// The store of used states is full of live ones: refused rather than forgotten.
    #[error(
        "too many requestStates are in use on this server; try again shortly, calling again without it"
    )]
    Busy,
    /// The principal's share of the store of used states is full of live ones (see
    /// [`RequestStates::with_capacity_per_principal`]): refused rather than forgotten, and
    /// other principals' states still open.
    #[error(
        "too many requestStates of this user are in use; try again when some expire, calling again without it"
    )]
    PrincipalBusy,
}

/// The digest of the request a state was made for: its method, its name (a tool's, a
/// prompt's; empty if none) and its arguments, the arguments' object keys in sorted order,
/// so that a client that reorders them retries the same request.
///
/// ```
/// use registry_mcp::RequestDigest;
/// use serde_json::json;
///
/// let a = RequestDigest::of("tools/call", "deploy", &json!({"env": "prod", "dry": false}));
/// let b = RequestDigest::of("tools/call", "deploy", &json!({"dry": false, "env": "prod"}));
/// assert_eq!(a, b);
/// assert_ne!(a, RequestDigest::of("tools/call", "deploy", &json!({"env": "dev", "dry": false})));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestDigest([u8; 32]);

impl RequestDigest {
    /// The digest of `method` with `name` and `arguments`.
    pub fn of(method: &str, name: &str, arguments: &Value) -> RequestDigest {
        let mut hasher = Sha256::new();
        for part in [method, name] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part.as_bytes());
        }
        hasher.update(canonical(arguments).as_bytes());
        RequestDigest(hasher.finalize().into())
    }
}

/// `value` as JSON text with every object's keys in sorted order.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    // Key order survives `to_string` whether or not serde_json preserves insertion order.
    sorted(value).to_string()
}

/// What a sealed state carries (in the clear: it holds nothing secret, only the tag makes it
/// trustworthy).
#[derive(Serialize, Deserialize)]
struct Body {
    /// Format version.
    v: u8,
    /// Expiry, milliseconds since the Unix epoch.
    exp: u64,
    /// Random, hex: what makes the state usable once.
    n: String,
    /// The sealer's payload.
    p: String,
}

impl RequestStates {
    /// States that live `ttl`, with at most `capacity` used ones remembered (at most
    /// [`DEFAULT_REQUEST_STATES_PER_PRINCIPAL`] of them one principal's, or `capacity` if
    /// less: see [`with_capacity_per_principal`](Self::with_capacity_per_principal)), under a
    /// random key (states sealed by one process do not open in another).
    pub fn new(ttl: Duration, capacity: usize) -> RequestStates {
        let mut key = [0u8; 32];
        // Without an operating-system random source, no state can be trusted: fail closed
        // with a key nobody can know, that also differs per process (the address and time).
        if getrandom::fill(&mut key).is_err() {
            let fallback = Sha256::digest(format!("{:p}{:?}", &key, SystemTime::now()));
            key.copy_from_slice(&fallback);
            tracing::error!("no random source for the requestState key; using a fallback");
        }
        RequestStates::with_key(&RequestStateKey(key), ttl, capacity)
    }

    /// States sealed under `key`: replicas that share it open each other's states (the
    /// used-once store stays per process; an approval is still decided once, by the store
    /// the replicas share).
    pub fn with_key(key: &RequestStateKey, ttl: Duration, capacity: usize) -> RequestStates {
        RequestStates {
            inner: Arc::new(Inner {
                keyed: match <HmacSha256 as KeyInit>::new_from_slice(&key.0) {
                    Ok(keyed) => keyed,
                    Err(_) => unreachable!("HMAC takes a key of any length"),
                },
                ttl,
                capacity: capacity.max(1),
                per_principal: AtomicUsize::new(
                    DEFAULT_REQUEST_STATES_PER_PRINCIPAL.min(capacity).max(1),
                ),
                used: Mutex::new(Used::default()),
            }),
        }
    }

    /// Sets how many of the used states remembered may be one principal's (at least 1, at
    /// most the capacity): a principal whose share is full of live states has its next ones
    /// refused ([`RequestStateError::PrincipalBusy`]) until some expire, while other
    /// principals' still open. It applies to every clone.
    ///
    /// ```
    /// use std::time::Duration;
    /// use registry_mcp::{RequestDigest, RequestStateError, RequestStates};
    /// use serde_json::json;
    ///
    /// let states = RequestStates::new(Duration::from_secs(60), 100).with_capacity_per_principal(1);
    /// let call = RequestDigest::of("tools/call", "deploy", &json!({}));
    /// let first = states.seal("alice", &call, "1");
    /// assert!(states.open(&first, "alice", &call).is_ok());
    /// let second = states.seal("alice", &call, "2");
    /// assert_eq!(states.open(&second, "alice", &call), Err(RequestStateError::PrincipalBusy));
    /// // Bob's share is his own.
    /// let bobs = states.seal("bob", &call, "3");
    /// assert!(states.open(&bobs, "bob", &call).is_ok());
    /// ```
    #[must_use]
    pub fn with_capacity_per_principal(self, share: usize) -> RequestStates {
        self.inner
            .per_principal
            .store(share.clamp(1, self.inner.capacity), Ordering::Relaxed);
        self
    }

    /// How long a sealed state stays valid.
    pub fn ttl(&self) -> Duration {
        self.inner.ttl
    }

    /// A state carrying `payload`, for `principal`'s `request`.
    pub fn seal(&self, principal: &str, request: &RequestDigest, payload: &str) -> String {
        let mut nonce = [0u8; 16];
        if getrandom::fill(&mut nonce).is_err() {
            // Unique enough to keep the used-once check meaningful within this process.
            let fallback = Sha256::digest(format!("{:?}{payload}", SystemTime::now()));
            nonce.copy_from_slice(&fallback[..16]);
        }
        let body = Body {
            v: 1,
            exp: millis(SystemTime::now() + self.inner.ttl),
            n: hex(&nonce),
            p: payload.to_owned(),
        };
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&body).unwrap_or_default());
        let tag = self.tag(principal, request, &body);
        format!("{body}.{}", URL_SAFE_NO_PAD.encode(tag))
    }

    /// The payload of `state`, if it verifies for `principal`'s `request`, has not expired
    /// and was not opened before; it cannot be opened again.
    pub fn open(
        &self,
        state: &str,
        principal: &str,
        request: &RequestDigest,
    ) -> Result<String, RequestStateError> {
        if state.len() > MAX_STATE_LEN {
            return Err(RequestStateError::Invalid);
        }
        let (body, tag) = state.split_once('.').ok_or(RequestStateError::Invalid)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| RequestStateError::Invalid)?;
        let mut mac = self.mac(principal, request);
        mac.update(body.as_bytes());
        mac.verify_slice(&tag)
            .map_err(|_| RequestStateError::Invalid)?;
        let body: Body = URL_SAFE_NO_PAD
            .decode(body)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or(RequestStateError::Invalid)?;
        let nonce = unhex(&body.n).ok_or(RequestStateError::Invalid)?;
        let now = millis(SystemTime::now());
        if body.v != 1 {
            return Err(RequestStateError::Invalid);
        }
        if body.exp <= now {
            return Err(RequestStateError::Expired);
        }
        let owner = owner_of(principal);
        let share = self.inner.per_principal.load(Ordering::Relaxed);
        // Checked and remembered under one lock: two retries with one state cannot both pass,
        // nor can a principal's retries at once pass its share.
        let mut used = self
            .inner
            .used
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if used.nonces.contains_key(&nonce) {
            return Err(RequestStateError::Used);
        }
        if used.nonces.len() >= self.inner.capacity || used.held_by(&owner) >= share {
            used.forget_expired(now);
        }
        if used.nonces.len() >= self.inner.capacity {
            tracing::warn!(
                capacity = self.inner.capacity,
                "the store of used requestStates is full; refusing states until some expire"
            );
            return Err(RequestStateError::Busy);
        }
        if used.held_by(&owner) >= share {
            // The principal is not named: its text is the caller's.
            tracing::info!(
                per_principal = share,
                "a principal's share of used requestStates is full; refusing its states until some expire"
            );
            return Err(RequestStateError::PrincipalBusy);
        }
        used.nonces.insert(nonce, (body.exp, owner));
        *used.per_principal.entry(owner).or_insert(0) += 1;
        Ok(body.p)
    }

    fn mac(&self, principal: &str, request: &RequestDigest) -> HmacSha256 {
        let mut mac = self.inner.keyed.clone();
        mac.update(b"registry-mcp requestState v1\0");
        mac.update(&(principal.len() as u64).to_be_bytes());
        mac.update(principal.as_bytes());
        mac.update(&request.0);
        mac
    }

    fn tag(&self, principal: &str, request: &RequestDigest, body: &str) -> Vec<u8> {
        let mut mac = self.mac(principal, request);
        mac.update(body.as_bytes());
        mac.finalize().into_bytes().to_vec()
    }
}

/// The digest the store counts `principal` under.
fn owner_of(principal: &str) -> Owner {
    let digest = Sha256::digest(principal.as_bytes());
    let mut owner = [0u8; 16];
    owner.copy_from_slice(&digest[..16]);
    owner
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 16]> {
    let mut out = [0u8; 16];
    if text.len() != 32 || !text.is_ascii() {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call() -> RequestDigest {
        RequestDigest::of("tools/call", "deploy", &json!({"env": "prod"}))
    }

    #[test]
    fn an_expired_state_is_refused() {
        let states = RequestStates::new(Duration::ZERO, 10);
        let state = states.seal("alice", &call(), "x");
        assert_eq!(
            states.open(&state, "alice", &call()),
            Err(RequestStateError::Expired)
        );
    }

    #[test]
    fn a_state_of_another_server_is_refused() {
        let ours = RequestStates::new(Duration::from_secs(60), 10);
        let theirs = RequestStates::new(Duration::from_secs(60), 10);
        let state = theirs.seal("alice", &call(), "x");
        assert_eq!(
            ours.open(&state, "alice", &call()),
            Err(RequestStateError::Invalid)
        );
    }

    #[test]
    fn replicas_sharing_a_key_open_each_others_states() {
        let key = RequestStateKey::new([7; 32]);
        let a = RequestStates::with_key(&key, Duration::from_secs(60), 10);
        let b = RequestStates::with_key(&key, Duration::from_secs(60), 10);
        let state = a.seal("alice", &call(), "x");
        assert_eq!(b.open(&state, "alice", &call()).as_deref(), Ok("x"));
    }

    #[test]
    fn a_full_store_of_live_states_refuses_more() {
        let states = RequestStates::new(Duration::from_secs(60), 2);
        for _ in 0..2 {
            let state = states.seal("alice", &call(), "x");
            assert!(states.open(&state, "alice", &call()).is_ok());
        }
        let third = states.seal("alice", &call(), "x");
        assert_eq!(
            states.open(&third, "alice", &call()),
            Err(RequestStateError::Busy)
        );
    }

    #[test]
    fn one_principal_fills_its_share_and_not_the_store() {
        let states = RequestStates::new(Duration::from_secs(60), 4).with_capacity_per_principal(2);
        for _ in 0..2 {
            let state = states.seal("alice", &call(), "x");
            assert!(states.open(&state, "alice", &call()).is_ok());
        }
        let over = states.seal("alice", &call(), "x");
        assert_eq!(
            states.open(&over, "alice", &call()),
            Err(RequestStateError::PrincipalBusy)
        );
        // Other principals' states still open.
        for who in ["bob", "carol"] {
            let state = states.seal(who, &call(), "x");
            assert!(states.open(&state, who, &call()).is_ok(), "{who}");
        }
        // The store is full now (4): anyone is refused, as before.
        let state = states.seal("dave", &call(), "x");
        assert_eq!(
            states.open(&state, "dave", &call()),
            Err(RequestStateError::Busy)
        );
    }

    #[test]
    fn expired_states_give_their_principals_share_back() {
        let states =
            RequestStates::new(Duration::from_millis(50), 10).with_capacity_per_principal(1);
        let first = states.seal("alice", &call(), "x");
        assert!(states.open(&first, "alice", &call()).is_ok());
        std::thread::sleep(Duration::from_millis(80));
        let second = states.seal("alice", &call(), "x");
        assert!(states.open(&second, "alice", &call()).is_ok());
        let used = states.inner.used.lock().unwrap();
        assert_eq!(used.nonces.len(), 1);
        assert_eq!(
            used.per_principal.values().copied().collect::<Vec<_>>(),
            [1]
        );
    }

    #[test]
    fn garbage_is_refused_without_a_panic() {
        let states = RequestStates::new(Duration::from_secs(60), 2);
        for garbage in ["", ".", "a.b", "{}", &"x".repeat(MAX_STATE_LEN + 1), "é.é"] {
            assert_eq!(
                states.open(garbage, "alice", &call()),
                Err(RequestStateError::Invalid)
            );
        }
    }
}
