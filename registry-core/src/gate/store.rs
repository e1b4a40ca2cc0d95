//! Where approval requests are kept: in memory by default, or in a database.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use crate::declare::declaration::BoxFuture;
use crate::gate::approval::{ApprovalRequest, ApprovalState, StoreError};

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

/// Keeps approval requests and their states; the in-memory [`MemoryApprovalStore`] is the
/// default, and a database-backed store lets another process (a restarted server, another
/// replica) decide a request.
///
/// The one guarantee a store must give: [`decide`](Self::decide) moves a request out of
/// [`ApprovalState::Pending`] at most once, even when called concurrently (one transaction, or
/// one compare-and-set), so that an approved call runs at most once.
pub trait ApprovalStore: Send + Sync + 'static {
    /// Keeps a new pending request.
    fn insert<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<(), StoreError>>;

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
    /// ([`Run::approve_by`](crate::Run::approve_by)), which runs the call at most once.
    ///
    /// The default says no one ever does: a store only the application writes to.
    fn approved_outside<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let _ = id;
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// The default [`ApprovalStore`]: in this process's memory, lost when it exits.
///
/// Share one (in an `Arc`) between registries built one after the other to let a rebuilt
/// registry decide requests made before. A request is kept until an hour after it expires
/// (decided or not), so that a late decision is told it expired or was decided; after that it
/// is forgotten (a decision then gets "unknown id"), and memory stays bounded by the requests
/// of the last hours.
#[derive(Debug, Default)]
pub struct MemoryApprovalStore {
    requests: Mutex<Requests>,
}

type Requests = HashMap<String, (ApprovalRequest, ApprovalState)>;

/// How long a request is kept after it expires.
const RETENTION: Duration = Duration::from_secs(3600);

impl MemoryApprovalStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryApprovalStore::default()
    }

    /// Every request and its state, in no particular order.
    pub fn requests(&self) -> Vec<(ApprovalRequest, ApprovalState)> {
        self.lock().values().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Requests> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the requests that expired more than [`RETENTION`] ago.
    fn prune(requests: &mut Requests) {
        let now = SystemTime::now();
        requests.retain(|_, (request, _)| request.expires_at + RETENTION > now);
    }
}

impl ApprovalStore for MemoryApprovalStore {
    fn insert<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut requests = self.lock();
        // Amortized: prune when the map has doubled since the last time.
        if requests.len() >= 1024 && requests.len().is_power_of_two() {
            Self::prune(&mut requests);
        }
        let result = match requests.entry(request.id.clone()) {
            std::collections::hash_map::Entry::Occupied(_) => Err(StoreError::new(format!(
                "an approval request with the id {:?} exists already",
                request.id
            ))),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert((request.clone(), ApprovalState::Pending));
                Ok(())
            }
        };
        Box::pin(std::future::ready(result))
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>> {
        let found = self.lock().get(id).cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        state: ApprovalState,
    ) -> BoxFuture<'a, Result<Transition, StoreError>> {
        let transition = match self.lock().get_mut(id) {
            None => Transition::Unknown,
            Some((request, current)) if current.is_pending() => {
                *current = state;
                Transition::Decided(Box::new(request.clone()))
            }
            Some((_, current)) => Transition::AlreadyDecided(current.clone()),
        };
        Box::pin(std::future::ready(Ok(transition)))
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

    fn approved_outside<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        (**self).approved_outside(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::fingerprint::Fingerprint;

    fn request(id: usize, expired_ago: Duration) -> ApprovalRequest {
        let expires_at = SystemTime::now() - expired_ago;
        ApprovalRequest {
            id: format!("apr_{id}"),
            run_id: "run".into(),
            tenant: "acme".into(),
            agent: None,
            call_id: format!("c{id}"),
            generated_id: false,
            tool_name: "deploy".into(),
            arguments: serde_json::json!({}),
            reason: "test".into(),
            allowed_set: Fingerprint::of_bytes(b"set"),
            definition: Fingerprint::of_bytes(b"definition"),
            requested_at: expires_at,
            expires_at,
        }
    }

    #[test]
    fn requests_long_expired_are_forgotten() {
        let store = MemoryApprovalStore::new();
        let long_ago = RETENTION + Duration::from_secs(60);
        for id in 0..1000 {
            pollster::block_on(store.insert(&request(id, long_ago))).unwrap();
        }
        // Recently expired ones are kept: a late decision is told they expired.
        for id in 1000..1100 {
            pollster::block_on(store.insert(&request(id, Duration::from_secs(60)))).unwrap();
        }
        let left = store.requests();
        assert!(left.len() < 200, "{}", left.len());
        assert!(left.iter().all(|(r, _)| r.id != "apr_0"));
        assert!(pollster::block_on(store.get("apr_1099")).unwrap().is_some());
        assert!(pollster::block_on(store.get("apr_1050")).unwrap().is_some());
    }
}
