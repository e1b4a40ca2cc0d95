//! Where approval requests are kept: in memory by default, or in a database.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use crate::approval::request::{ApprovalRequest, ApprovalState, StoreError};
use crate::shared::future::BoxFuture;

/// What the store did with a decision.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Transition {
    /// The request was pending and now has the new state: this caller won.
    Decided(Box<ApprovalRequest>),
    /// The request was decided before, as given: this caller lost.
    AlreadyDecided(ApprovalState),
    /// No request has that id.
    Unknown,
}

/// What [`ApprovalStore::insert_bounded`] did with a new request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Insertion {
    /// The request is kept, pending.
    Inserted,
    /// Not kept: its owner ([`ApprovalRequest::same_owner`]) has `pending` requests pending
    /// already, the most it may.
    TooManyPending {
        /// How many of the owner's requests are pending.
        pending: usize,
    },
    /// Not kept: the owner's share of the store is full (its requests, or the bytes of
    /// their arguments); other owners' requests are still kept. `detail` says which, for the
    /// log.
    ShareFull {
        /// What is full, and how to make room.
        detail: String,
    },
    /// Not kept: its arguments alone are larger than the store keeps for one request.
    TooLarge {
        /// The arguments' size as compact JSON.
        bytes: usize,
        /// The most the store keeps for one request.
        max: usize,
    },
}

/// Keeps approval requests and their states; the in-memory [`MemoryApprovalStore`] is the
/// default, and a database-backed store lets another process (a restarted server, another
/// replica) decide a request.
///
/// The guarantees a store must give:
///
/// - [`decide`](Self::decide) moves a request out of [`ApprovalState::Pending`] at most
///   once, even when called concurrently (one transaction, or one compare-and-set), so that
///   an approved call runs at most once;
/// - [`insert_bounded`](Self::insert_bounded) counts the owner's pending requests and keeps
///   the new one in one atomic step, so that concurrent calls of one principal never leave
///   more than the bound pending (the default implementation counts, then inserts: a store
///   shared by concurrent callers overrides it);
/// - [`get`](Self::get) gives the arguments back exactly as they were inserted (the registry
///   validates them again against the tool's schema before an approved call runs, and
///   refuses the call if they changed so that they no longer fit);
/// - a request denied, expired or revoked keeps its arguments' digest only
///   ([`ApprovalRequest::discard_arguments`]), not their values.
pub trait ApprovalStore: Send + Sync + 'static {
    /// Keeps a new pending request.
    fn insert<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Keeps a new pending request unless its owner ([`ApprovalRequest::same_owner`])
    /// already has `max_pending` requests pending and not expired, or the store's share for
    /// the owner is full; the count and the insertion are one atomic step (under a lock, in
    /// one transaction). What the registry calls, with
    /// [`max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals).
    ///
    /// The default counts with [`pending_count`](Self::pending_count), then keeps the request
    /// with [`insert`](Self::insert): two steps, so concurrent calls of one owner may pass
    /// `max_pending` together. A store that more than one caller writes to at once
    /// overrides it ([`MemoryApprovalStore`] and registry-postgres's store do).
    fn insert_bounded<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        max_pending: usize,
    ) -> BoxFuture<'a, Result<Insertion, StoreError>> {
        Box::pin(async move {
            let pending = self.pending_count(request).await?;
            if pending >= max_pending {
                return Ok(Insertion::TooManyPending { pending });
            }
            self.insert(request).await.map(|()| Insertion::Inserted)
        })
    }

    /// The request with id `id`, and its state.
    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>>;

    /// Moves the request from pending to `state`, atomically.
    fn decide<'a>(
        &'a self,
        id: &'a str,
        state: ApprovalState,
    ) -> BoxFuture<'a, Result<Transition, StoreError>>;

    /// Who approved pending request `id` outside any run (an operator's console writing to a
    /// shared store), if someone did. The request is still pending: the application whose
    /// caller waits on it applies the approval through its run
    /// ([`Run::decide`](crate::Run::decide)), which runs the call at most once.
    ///
    /// The default says no one ever does: a store only the application writes to.
    fn approved_outside<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let _ = id;
        Box::pin(std::future::ready(Ok(None)))
    }

    /// A wait for request `id` to change (decided, or approved outside), registered at once:
    /// a change made after this call resolves it. `None` when the store cannot tell (the
    /// default), or cannot now (too many waiting, its listener down): the caller then polls
    /// [`get`](Self::get) and [`approved_outside`](Self::approved_outside). The future may
    /// also resolve without a change (the store lost track): the caller checks again, and
    /// keeps a slow poll besides.
    ///
    /// ```
    /// use registry_core::approval::{ApprovalStore, MemoryApprovalStore};
    ///
    /// let store = MemoryApprovalStore::new();
    /// // A wait is registered before the state is read, so no change falls in between.
    /// assert!(store.watch("apr_1").is_some());
    /// ```
    fn watch(&self, id: &str) -> Option<BoxFuture<'static, ()>> {
        let _ = id;
        None
    }

    /// How many requests of the same owner as `request` are pending and not expired: of the
    /// same principal ([`ApprovalRequest::principal`]), or, when `request` has none, of the
    /// same tenant and agent without a principal ([`ApprovalRequest::same_owner`]).
    /// `request` itself is not stored yet. The default
    /// [`insert_bounded`](Self::insert_bounded) asks before storing a request, to keep
    /// [`max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals).
    ///
    /// The default cannot count, and says so: a call that needs approval is then refused
    /// (the gate fails closed). Every store must implement it.
    fn pending_count<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        let _ = request;
        Box::pin(std::future::ready(Err(StoreError::new(
            "this approval store cannot count pending requests (implement ApprovalStore::pending_count), so no approval can be asked for",
        ))))
    }
}

/// The default [`ApprovalStore`]: in this process's memory, lost when it exits.
///
/// Share one (in an `Arc`) between registries built one after the other to let a rebuilt
/// registry decide requests made before.
///
/// **Bounded, in total and per principal.** A decided request is kept for one minute after
/// its decision, and an expired one for one minute after it expired ([`GRACE`](Self::GRACE)),
/// so that a late decision is told it was decided or expired; after that it is forgotten (a
/// decision then gets "unknown id"). A request denied, expired or revoked keeps its
/// arguments' digest only, from that moment ([`ApprovalRequest::discard_arguments`]): its
/// bytes are free at once.
///
/// - In total, the store holds at most [`DEFAULT_MAX_REQUESTS`](Self::DEFAULT_MAX_REQUESTS)
///   requests whose arguments take at most [`DEFAULT_MAX_BYTES`](Self::DEFAULT_MAX_BYTES)
///   as JSON, pending and recently decided together ([`with_limits`](Self::with_limits) sets
///   others); a request beyond either is refused with a [`StoreError`], and the call that
///   asked is refused ([`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable)).
/// - Each owner (a principal, or a tenant and agent without one:
///   [`ApprovalRequest::same_owner`]) has a share of it:
///   [`DEFAULT_MAX_REQUESTS_PER_PRINCIPAL`](Self::DEFAULT_MAX_REQUESTS_PER_PRINCIPAL)
///   requests and [`DEFAULT_MAX_BYTES_PER_PRINCIPAL`](Self::DEFAULT_MAX_BYTES_PER_PRINCIPAL)
///   of arguments ([`with_shares`](Self::with_shares)). Beyond its share, the owner's call
///   is refused ([`ErrorKind::RateLimited`](crate::ErrorKind::RateLimited)), and other
///   owners' requests are still kept.
/// - One request's arguments take at most
///   [`DEFAULT_MAX_REQUEST_BYTES`](Self::DEFAULT_MAX_REQUEST_BYTES) as JSON (arguments for a
///   person to read; [`with_max_request_bytes`](Self::with_max_request_bytes)); a larger
///   request is refused ([`ErrorKind::Denied`](crate::ErrorKind::Denied), saying so).
///
/// The owner's pending requests are counted and the request kept under one lock
/// ([`ApprovalStore::insert_bounded`]): concurrent calls never pass the bound together.
///
/// ```
/// use registry_core::approval::MemoryApprovalStore;
///
/// let store = MemoryApprovalStore::new()
///     .with_limits(1000, 16 << 20)
///     .with_shares(100, 1 << 20)
///     .with_max_request_bytes(64 << 10);
/// assert_eq!(store.len(), 0);
/// ```
#[derive(Debug)]
pub struct MemoryApprovalStore {
    requests: Mutex<Requests>,
    max_requests: usize,
    max_bytes: usize,
    watchers: ApprovalWatchers,
    max_requests_per_owner: usize,
    max_bytes_per_owner: usize,
    max_request_bytes: usize,
}

impl Default for MemoryApprovalStore {
    fn default() -> Self {
        MemoryApprovalStore {
            requests: Mutex::default(),
            max_requests: MemoryApprovalStore::DEFAULT_MAX_REQUESTS,
            max_bytes: MemoryApprovalStore::DEFAULT_MAX_BYTES,
            watchers: ApprovalWatchers::default(),
            max_requests_per_owner: MemoryApprovalStore::DEFAULT_MAX_REQUESTS_PER_PRINCIPAL,
            max_bytes_per_owner: MemoryApprovalStore::DEFAULT_MAX_BYTES_PER_PRINCIPAL,
            max_request_bytes: MemoryApprovalStore::DEFAULT_MAX_REQUEST_BYTES,
        }
    }
}

/// The waits on approval requests of a store ([`ApprovalStore::watch`]), bounded: at most
/// [`MAX_WATCHERS`](Self::MAX_WATCHERS) at once (beyond, [`watch`](Self::watch) answers
/// `None` and the caller polls). A store that learns of changes (its own decisions, a
/// database's notifications) calls [`wake`](Self::wake); one that lost track of them (a
/// listener's connection dropped) calls [`wake_all`](Self::wake_all).
///
/// ```
/// use registry_core::approval::ApprovalWatchers;
///
/// let watchers = ApprovalWatchers::default();
/// let wait = watchers.watch("apr_1").unwrap();
/// watchers.wake("apr_1");
/// pollster::block_on(wait); // resolved
/// assert_eq!(watchers.len(), 0);
/// ```
#[derive(Debug, Default)]
pub struct ApprovalWatchers {
    waiting: Mutex<HashMap<String, Vec<futures_channel::oneshot::Sender<()>>>>,
}

impl ApprovalWatchers {
    /// The most waits kept at once.
    pub const MAX_WATCHERS: usize = 4096;

    /// A wait for [`wake`](Self::wake) of `id` (or [`wake_all`](Self::wake_all)); `None` at
    /// [`MAX_WATCHERS`](Self::MAX_WATCHERS) waits (abandoned ones are forgotten first).
    pub fn watch(&self, id: &str) -> Option<BoxFuture<'static, ()>> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        if waiting.values().map(Vec::len).sum::<usize>() >= Self::MAX_WATCHERS {
            waiting.retain(|_, senders| {
                senders.retain(|sender| !sender.is_canceled());
                !senders.is_empty()
            });
            if waiting.values().map(Vec::len).sum::<usize>() >= Self::MAX_WATCHERS {
                return None;
            }
        }
        let (sender, receiver) = futures_channel::oneshot::channel();
        waiting.entry(id.to_owned()).or_default().push(sender);
        Some(Box::pin(async move {
            let _ = receiver.await;
        }))
    }

    /// Resolves every wait on `id`.
    pub fn wake(&self, id: &str) {
        let senders = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        for sender in senders.into_iter().flatten() {
            let _ = sender.send(());
        }
    }

    /// Resolves every wait.
    pub fn wake_all(&self) {
        let waiting =
            std::mem::take(&mut *self.waiting.lock().unwrap_or_else(PoisonError::into_inner));
        for sender in waiting.into_values().flatten() {
            let _ = sender.send(());
        }
    }

    /// How many waits are kept (abandoned ones included, until they are forgotten).
    pub fn len(&self) -> usize {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(Vec::len)
            .sum()
    }

    /// Whether no wait is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Debug, Default)]
struct Requests {
    map: HashMap<String, Kept>,
    /// The arguments' size as JSON, summed over `map`.
    bytes: usize,
}

#[derive(Debug)]
struct Kept {
    request: ApprovalRequest,
    state: ApprovalState,
    /// When it left pending.
    decided_at: Option<SystemTime>,
    /// Its arguments' size as JSON (0 once discarded).
    bytes: usize,
}

impl Kept {
    /// Whether it may be forgotten at `now`.
    fn stale(&self, now: SystemTime) -> bool {
        let since = self.decided_at.unwrap_or(self.request.expires_at);
        since + MemoryApprovalStore::GRACE <= now
    }
}

impl Requests {
    /// Replaces the arguments of `id` by their digest, and frees their bytes.
    fn discard(&mut self, id: &str) {
        if let Some(kept) = self.map.get_mut(id) {
            kept.request.discard_arguments();
            self.bytes = self.bytes.saturating_sub(kept.bytes);
            kept.bytes = 0;
        }
    }
}

impl MemoryApprovalStore {
    /// How long a request is kept after its decision, or after it expired undecided: one
    /// minute.
    pub const GRACE: Duration = Duration::from_secs(60);
    /// How many requests the store holds at most by default: 10 000.
    pub const DEFAULT_MAX_REQUESTS: usize = 10_000;
    /// How many bytes of arguments (as JSON) the store holds at most by default: 64 MiB.
    pub const DEFAULT_MAX_BYTES: usize = 64 << 20;
    /// How many requests (pending, and decided or expired within [`GRACE`](Self::GRACE)) one
    /// principal holds at most by default: 500, a twentieth of the store.
    pub const DEFAULT_MAX_REQUESTS_PER_PRINCIPAL: usize = 500;
    /// How many bytes of arguments (as JSON) one principal's requests hold at most by
    /// default: 4 MiB, a sixteenth of the store.
    pub const DEFAULT_MAX_BYTES_PER_PRINCIPAL: usize = 4 << 20;
    /// How many bytes of arguments (as JSON) one request holds at most by default: 256 KiB,
    /// more than a person reads.
    pub const DEFAULT_MAX_REQUEST_BYTES: usize = 256 << 10;

    /// An empty store, with the default limits.
    pub fn new() -> Self {
        MemoryApprovalStore::default()
    }

    /// Holds at most `max_requests` requests, whose arguments take at most `max_bytes` as
    /// JSON.
    #[must_use]
    pub fn with_limits(mut self, max_requests: usize, max_bytes: usize) -> Self {
        self.max_requests = max_requests;
        self.max_bytes = max_bytes;
        self
    }

    /// Holds at most `max_requests` requests of one principal (or of one tenant and agent
    /// without a principal: [`ApprovalRequest::same_owner`]), whose arguments take at most
    /// `max_bytes` as JSON: one principal cannot fill the store for the others.
    #[must_use]
    pub fn with_shares(mut self, max_requests: usize, max_bytes: usize) -> Self {
        self.max_requests_per_owner = max_requests;
        self.max_bytes_per_owner = max_bytes;
        self
    }

    /// Holds no request whose arguments take more than `max_bytes` as JSON.
    #[must_use]
    pub fn with_max_request_bytes(mut self, max_bytes: usize) -> Self {
        self.max_request_bytes = max_bytes;
        self
    }

    /// Every request and its state, in no particular order.
    pub fn requests(&self) -> Vec<(ApprovalRequest, ApprovalState)> {
        self.lock()
            .map
            .values()
            .map(|kept| (kept.request.clone(), kept.state.clone()))
            .collect()
    }

    /// How many requests it holds (pending, and decided or expired within [`GRACE`](Self::GRACE)).
    pub fn len(&self) -> usize {
        let mut requests = self.lock();
        Self::prune(&mut requests);
        requests.map.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Requests> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the requests decided, or expired, more than [`GRACE`](Self::GRACE) ago, and
    /// discards the arguments of those expired undecided.
    fn prune(requests: &mut Requests) {
        let now = SystemTime::now();
        let mut freed = 0;
        requests.map.retain(|_, kept| {
            let stale = kept.stale(now);
            if stale || (kept.state.is_pending() && kept.request.expires_at <= now) {
                freed += kept.bytes;
                kept.bytes = 0;
                kept.request.discard_arguments();
            }
            !stale
        });
        requests.bytes = requests.bytes.saturating_sub(freed);
    }

    /// Keeps `request`, within the store's limits and its owner's share, and, given
    /// `max_pending`, under its owner's bound of pending requests: counted and kept under one
    /// lock.
    fn insert_now(
        &self,
        request: &ApprovalRequest,
        max_pending: Option<usize>,
    ) -> Result<Insertion, StoreError> {
        let bytes = json_size(&request.arguments);
        if bytes > self.max_request_bytes {
            return Ok(Insertion::TooLarge {
                bytes,
                max: self.max_request_bytes,
            });
        }
        let mut requests = self.lock();
        // Amortized: prune when the map has doubled since the last time, and when full.
        let len = requests.map.len();
        let full = len >= self.max_requests || requests.bytes + bytes > self.max_bytes;
        if full || (len >= 1024 && len.is_power_of_two()) {
            Self::prune(&mut requests);
        }
        if requests.map.contains_key(&request.id) {
            return Err(StoreError::new(format!(
                "an approval request with the id {:?} exists already",
                request.id
            )));
        }
        // The owner's share, and its pending requests: one pass, under the lock.
        let now = SystemTime::now();
        let (mut kept, mut kept_bytes, mut pending) = (0, 0, 0);
        for other in requests.map.values() {
            // Forgotten already, as far as anyone can tell, though not yet pruned.
            if !other.stale(now) && other.request.same_owner(request) {
                kept += 1;
                kept_bytes += other.bytes;
                if other.state.is_pending() && other.request.expires_at > now {
                    pending += 1;
                }
            }
        }
        if let Some(max_pending) = max_pending
            && pending >= max_pending
        {
            return Ok(Insertion::TooManyPending { pending });
        }
        if kept >= self.max_requests_per_owner {
            return Ok(Insertion::ShareFull {
                detail: format!(
                    "this principal holds {kept} approval requests waiting or just decided, its share of the in-memory store (MemoryApprovalStore::with_shares); decide or let expire the waiting ones"
                ),
            });
        }
        if kept_bytes + bytes > self.max_bytes_per_owner {
            return Ok(Insertion::ShareFull {
                detail: format!(
                    "this principal's approval requests hold {kept_bytes} bytes of arguments, {bytes} more asked, its share is {} (MemoryApprovalStore::with_shares); decide or let expire the waiting ones",
                    self.max_bytes_per_owner
                ),
            });
        }
        if requests.map.len() >= self.max_requests {
            return Err(StoreError::new(format!(
                "the in-memory approval store is full ({} requests waiting or just decided); decide or let expire the waiting ones, or give the store a higher limit (MemoryApprovalStore::with_limits)",
                requests.map.len()
            )));
        }
        if requests.bytes + bytes > self.max_bytes {
            return Err(StoreError::new(format!(
                "the in-memory approval store is full ({} bytes of arguments kept, {} more asked, at most {}); decide or let expire the waiting requests, or give the store a higher limit (MemoryApprovalStore::with_limits)",
                requests.bytes, bytes, self.max_bytes
            )));
        }
        requests.bytes += bytes;
        requests.map.insert(
            request.id.clone(),
            Kept {
                request: request.clone(),
                state: ApprovalState::Pending,
                decided_at: None,
                bytes,
            },
        );
        Ok(Insertion::Inserted)
    }
}

/// The size of `value` as compact JSON, without writing it out.
fn json_size(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        // Cannot happen for a `Value`; counted as too big rather than as nothing.
        Err(_) => usize::MAX / 2,
    }
}

impl ApprovalStore for MemoryApprovalStore {
    fn insert<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<(), StoreError>> {
        let inserted = self
            .insert_now(request, None)
            .and_then(|insertion| match insertion {
                Insertion::Inserted => Ok(()),
                Insertion::ShareFull { detail } => Err(StoreError::new(detail)),
                Insertion::TooLarge { bytes, max } => Err(StoreError::new(format!(
                    "the approval request's arguments take {bytes} bytes, more than the {max} one request may hold (MemoryApprovalStore::with_max_request_bytes)"
                ))),
                Insertion::TooManyPending { pending } => Err(StoreError::new(format!(
                    "{pending} approval requests of this principal are pending"
                ))),
            });
        Box::pin(std::future::ready(inserted))
    }

    fn insert_bounded<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        max_pending: usize,
    ) -> BoxFuture<'a, Result<Insertion, StoreError>> {
        Box::pin(std::future::ready(
            self.insert_now(request, Some(max_pending)),
        ))
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>> {
        let now = SystemTime::now();
        let found = self
            .lock()
            .map
            .get(id)
            .filter(|kept| !kept.stale(now))
            .map(|kept| (kept.request.clone(), kept.state.clone()));
        Box::pin(std::future::ready(Ok(found)))
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        state: ApprovalState,
    ) -> BoxFuture<'a, Result<Transition, StoreError>> {
        let now = SystemTime::now();
        let mut requests = self.lock();
        let discard = state.discards_arguments();
        let transition = match requests.map.get_mut(id) {
            Some(kept) if kept.stale(now) => Transition::Unknown,
            None => Transition::Unknown,
            Some(kept) if kept.state.is_pending() => {
                kept.state = state;
                kept.decided_at = Some(now);
                Transition::Decided(Box::new(kept.request.clone()))
            }
            Some(kept) => Transition::AlreadyDecided(kept.state.clone()),
        };
        // Nothing will run with the arguments of a request denied, expired or revoked: only
        // their digest is kept, and their bytes are free at once.
        if discard && matches!(transition, Transition::Decided(_)) {
            requests.discard(id);
        }
        drop(requests);
        if matches!(transition, Transition::Decided(_)) {
            self.watchers.wake(id);
        }
        Box::pin(std::future::ready(Ok(transition)))
    }

    fn watch(&self, id: &str) -> Option<BoxFuture<'static, ()>> {
        self.watchers.watch(id)
    }

    fn pending_count<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        let now = SystemTime::now();
        let count = self
            .lock()
            .map
            .values()
            .filter(|kept| {
                kept.state.is_pending()
                    && kept.request.expires_at > now
                    && kept.request.same_owner(request)
            })
            .count();
        Box::pin(std::future::ready(Ok(count)))
    }
}

impl<S: ApprovalStore> ApprovalStore for std::sync::Arc<S> {
    fn insert<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).insert(request)
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>> {
        (**self).get(id)
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        state: ApprovalState,
    ) -> BoxFuture<'a, Result<Transition, StoreError>> {
        (**self).decide(id, state)
    }

    fn insert_bounded<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        max_pending: usize,
    ) -> BoxFuture<'a, Result<Insertion, StoreError>> {
        (**self).insert_bounded(request, max_pending)
    }

    fn approved_outside<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        (**self).approved_outside(id)
    }

    fn watch(&self, id: &str) -> Option<BoxFuture<'static, ()>> {
        (**self).watch(id)
    }

    fn pending_count<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        (**self).pending_count(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::fingerprint::Fingerprint;

    fn request(id: usize, expired_ago: Duration) -> ApprovalRequest {
        let expires_at = SystemTime::now() - expired_ago;
        ApprovalRequest {
            id: format!("apr_{id}"),
            run_id: "run".into(),
            tenant: "acme".into(),
            agent: None,
            principal: None,
            call_id: format!("c{id}"),
            generated_id: false,
            tool_name: "deploy".into(),
            arguments: serde_json::json!({}),
            discarded: None,
            digest: None,
            reason: "test".into(),
            allowed_set: Fingerprint::of_bytes(b"set"),
            definition: Fingerprint::of_bytes(b"definition"),
            requested_at: expires_at,
            expires_at,
            caller: crate::shared::caller::Caller::Model,
            task: false,
        }
    }

    fn pending(id: usize) -> ApprovalRequest {
        let mut request = request(id, Duration::ZERO);
        request.expires_at = SystemTime::now() + Duration::from_secs(900);
        request
    }

    fn block<T>(future: BoxFuture<'_, T>) -> T {
        pollster::block_on(future)
    }

    #[test]
    fn a_decision_wakes_the_waits_on_its_request_and_the_waits_are_bounded() {
        use std::task::{Context, Waker};
        let ready = |future: &mut BoxFuture<'static, ()>| {
            future
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_ready()
        };
        let store = MemoryApprovalStore::new();
        block(store.insert(&pending(1))).unwrap();
        block(store.insert(&pending(2))).unwrap();
        let mut one = store.watch("apr_1").unwrap();
        let mut two = store.watch("apr_2").unwrap();
        assert!(!ready(&mut one) && !ready(&mut two));
        block(store.decide("apr_1", ApprovalState::Expired)).unwrap();
        assert!(ready(&mut one), "the decision woke the wait on its request");
        assert!(!ready(&mut two), "and no other");
        // The bound holds; abandoned waits are forgotten first.
        drop(two);
        let mut kept = Vec::new();
        while let Some(wait) = store.watch("apr_2") {
            kept.push(wait);
            assert!(kept.len() <= ApprovalWatchers::MAX_WATCHERS);
        }
        assert_eq!(kept.len(), ApprovalWatchers::MAX_WATCHERS);
        drop(kept.pop());
        assert!(
            store.watch("apr_2").is_some(),
            "an abandoned wait makes room"
        );
    }

    #[test]
    fn requests_expired_past_the_grace_are_forgotten() {
        let store = MemoryApprovalStore::new();
        let long_ago = MemoryApprovalStore::GRACE + Duration::from_secs(5);
        for id in 0..1000 {
            block(store.insert(&request(id, long_ago))).unwrap();
        }
        // Recently expired ones are kept: a late decision is told they expired.
        for id in 1000..1100 {
            block(store.insert(&request(id, Duration::from_secs(10)))).unwrap();
        }
        let left = store.requests();
        assert!(left.len() < 200, "{}", left.len());
        assert!(left.iter().all(|(r, _)| r.id != "apr_0"));
        assert!(block(store.get("apr_0")).unwrap().is_none());
        assert!(block(store.get("apr_1099")).unwrap().is_some());
        assert!(block(store.get("apr_1050")).unwrap().is_some());
        assert_eq!(store.len(), 100);
    }

    #[test]
    fn a_denied_request_is_forgotten_after_the_grace_not_the_ttl() {
        let store = MemoryApprovalStore::new();
        let request = pending(1);
        block(store.insert(&request)).unwrap();
        let denied = ApprovalState::Denied {
            by: None,
            reason: "no".into(),
        };
        assert!(matches!(
            block(store.decide("apr_1", denied.clone())).unwrap(),
            Transition::Decided(_)
        ));
        // Within the grace: still told it was decided.
        assert_eq!(
            block(store.decide("apr_1", ApprovalState::Expired)).unwrap(),
            Transition::AlreadyDecided(denied)
        );
        // Past it (its decision moved back in time): forgotten, though its TTL runs 15 more
        // minutes.
        {
            let mut requests = store.lock();
            let kept = requests.map.get_mut("apr_1").unwrap();
            kept.decided_at = Some(SystemTime::now() - MemoryApprovalStore::GRACE);
        }
        assert!(block(store.get("apr_1")).unwrap().is_none());
        assert_eq!(
            block(store.decide("apr_1", ApprovalState::Expired)).unwrap(),
            Transition::Unknown
        );
        assert_eq!(store.len(), 0);
    }

    #[test]
    fn a_full_store_refuses_with_a_clear_error_and_takes_again_once_pruned() {
        let store = MemoryApprovalStore::new().with_limits(3, 1 << 20);
        for id in 0..3 {
            block(store.insert(&pending(id))).unwrap();
        }
        let error = block(store.insert(&pending(3))).unwrap_err().to_string();
        assert!(error.contains("full (3 requests"), "{error}");
        assert!(error.contains("with_limits"), "{error}");
        assert_eq!(store.len(), 3);
        // A decided request past its grace makes room.
        block(store.decide("apr_0", ApprovalState::Expired)).unwrap();
        store.lock().map.get_mut("apr_0").unwrap().decided_at =
            Some(SystemTime::now() - MemoryApprovalStore::GRACE);
        block(store.insert(&pending(3))).unwrap();
        assert_eq!(store.len(), 3);
    }

    #[test]
    fn a_store_bounds_the_bytes_of_arguments() {
        let store = MemoryApprovalStore::new().with_limits(100, 100);
        let mut big = pending(1);
        big.arguments = serde_json::json!({ "text": "x".repeat(60) });
        block(store.insert(&big)).unwrap();
        let mut second = pending(2);
        second.arguments = big.arguments.clone();
        let error = block(store.insert(&second)).unwrap_err().to_string();
        assert!(error.contains("bytes of arguments"), "{error}");
        // A small one still fits.
        block(store.insert(&pending(3))).unwrap();
    }

    #[test]
    fn pending_requests_are_counted_per_owner() {
        let store = MemoryApprovalStore::new();
        let owned = |id: usize, principal: Option<&str>, agent: Option<&str>| {
            let mut request = pending(id);
            request.principal = principal.map(str::to_owned);
            request.agent = agent.map(str::to_owned);
            request
        };
        for (id, principal) in [(0, "alice"), (1, "alice"), (2, "bob")] {
            block(store.insert(&owned(id, Some(principal), Some("cli")))).unwrap();
        }
        block(store.insert(&owned(3, None, Some("cli")))).unwrap();
        block(store.insert(&owned(4, None, None))).unwrap();
        block(store.insert(&request(5, Duration::from_secs(1)))).unwrap(); // expired
        let count = |probe: &ApprovalRequest| block(store.pending_count(probe)).unwrap();
        // A principal counts across agents; one without counts per tenant and agent.
        assert_eq!(count(&owned(9, Some("alice"), None)), 2);
        assert_eq!(count(&owned(9, Some("bob"), Some("cli"))), 1);
        assert_eq!(count(&owned(9, Some("carol"), Some("cli"))), 0);
        assert_eq!(count(&owned(9, None, Some("cli"))), 1);
        assert_eq!(count(&owned(9, None, None)), 1);
        block(store.decide("apr_0", ApprovalState::Expired)).unwrap();
        assert_eq!(count(&owned(9, Some("alice"), None)), 1);
    }
}
