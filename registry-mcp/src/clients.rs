//! The server's shared state: one client per subject, the runs each is served from, and the
//! watch over the registry's changes that announces them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

use registry_core::server::RegistryExt;
use registry_core::{
    Fingerprint, Profile, Registry, Run, Subject,
    approval::ApprovalRequest,
    deferred::{
        DeferredOptions, DeferredSession, EmbeddedQuery, QueryEmbedding, SearchAnswer, SearchCall,
    },
};
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::{Peer, RoleServer};
use tokio::sync::watch;

use crate::options::ServerOptions;

/// A client's key: who vouches for its principal (an issuer; none for a static token or
/// stdio), the principal's id, and the subject it acts as.
type ClientKey = (Option<Arc<str>>, Arc<str>, Subject);

/// Everything the transports and handlers of one server share.
pub(crate) struct Shared {
    pub(crate) registry: Registry,
    pub(crate) options: ServerOptions,
    /// Seals the `requestState` of `input_required` results.
    pub(crate) states: crate::RequestStates,
    /// One client per principal and subject (stdio: one for the process; HTTP: one per
    /// static token, one per `sub` and set of scopes for OAuth tokens).
    clients: Mutex<HashMap<ClientKey, Arc<Client>>>,
    /// The registry's change count as last checked.
    generation: AtomicU64,
    /// Serializes change checks, so that each change is announced once.
    checking: tokio::sync::Mutex<()>,
    runs_opened: AtomicU64,
    watching: AtomicBool,
    /// How many clients the map may hold before unused ones are forgotten.
    sweep_at: AtomicUsize,
    /// Permits for searches whose query the embedder is embedding, at most
    /// [`EMBEDDING_SEARCHES`] at once.
    embeddings: Arc<tokio::sync::Semaphore>,
}

/// The most searches whose embedding is made at once, across a server's clients, each on a
/// blocking thread of the runtime; a search past it waits (asynchronously) for one to end. A
/// slow embedder then holds at most this many blocking threads, and no async worker.
pub(crate) const EMBEDDING_SEARCHES: usize = 16;

/// The fewest clients at which unused ones are forgotten.
const CLIENTS_BEFORE_SWEEP: usize = 1024;

impl Shared {
    pub(crate) fn new(registry: Registry, options: ServerOptions) -> Arc<Shared> {
        let generation = registry_generation(&registry);
        let (ttl, capacity) = (options.request_state_ttl, options.request_state_capacity);
        let states = match &options.request_state_key {
            Some(key) => crate::RequestStates::with_key(key, ttl, capacity),
            None => crate::RequestStates::new(ttl, capacity),
        }
        .with_capacity_per_principal(options.request_state_capacity_per_principal);
        Arc::new(Shared {
            registry,
            options,
            states,
            clients: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(generation),
            checking: tokio::sync::Mutex::new(()),
            runs_opened: AtomicU64::new(0),
            watching: AtomicBool::new(false),
            sweep_at: AtomicUsize::new(CLIENTS_BEFORE_SWEEP),
            embeddings: Arc::new(tokio::sync::Semaphore::new(EMBEDDING_SEARCHES)),
        })
    }

    /// Makes a search's embedding on a blocking thread of the runtime, never on an async
    /// worker, at most [`EMBEDDING_SEARCHES`] at once (the permit is held until the embedder
    /// returns, even if the request is given up meanwhile). `None` if the runtime could not
    /// run it: the search is then lexical.
    pub(crate) async fn embed(&self, embedding: QueryEmbedding) -> Option<EmbeddedQuery> {
        let permit = self.embeddings.clone().acquire_owned().await.ok()?;
        let made = tokio::task::spawn_blocking(move || {
            let embedded = embedding.embed();
            drop(permit);
            embedded
        })
        .await;
        match made {
            Ok(embedded) => Some(embedded),
            Err(error) => {
                tracing::warn!(%error, "a search's embedding did not finish: the search is lexical");
                None
            }
        }
    }

    /// The client named `id` acting as `subject`, created (with its first run) the first
    /// time it is asked for. The same principal with other scopes (a new token after a
    /// step-up, say) is another client, with a run of its own.
    pub(crate) fn client(
        self: &Arc<Self>,
        issuer: Option<&str>,
        id: &str,
        subject: &Subject,
    ) -> Arc<Client> {
        let mut clients = lock(&self.clients);
        let key = (issuer.map(Arc::from), Arc::<str>::from(id), subject.clone());
        if let Some(client) = clients.get(&key) {
            return client.clone();
        }
        if clients.len() >= self.sweep_at.load(Ordering::Relaxed) {
            // Forget the clients nothing uses any more (no session, no connection, no request
            // in flight): a principal that comes back gets a new run. Done when the map has
            // doubled since the last sweep, so its cost is spread over the insertions.
            clients.retain(|_, client| {
                Arc::strong_count(client) > 1
                    || lock(&client.peers)
                        .iter()
                        .any(|peer| !peer.is_transport_closed())
            });
            self.sweep_at.store(
                (clients.len() * 2).max(CLIENTS_BEFORE_SWEEP),
                Ordering::Relaxed,
            );
        }
        let client = Arc::new(Client::new(
            self,
            key.0.clone(),
            key.1.clone(),
            subject.clone(),
        ));
        clients.insert(key, client.clone());
        client
    }

    /// Starts the task that polls the registry for changes, once, if a Tokio runtime is
    /// running. It ends when the last handle on this state is gone.
    pub(crate) fn watch(self: &Arc<Self>) {
        if self.watching.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.watching.store(false, Ordering::Release);
            return;
        };
        if let Some(interval) = self.options.readiness_interval {
            let shared = Arc::downgrade(self);
            runtime.spawn(async move {
                let mut ticker = tokio::time::interval(interval);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                ticker.tick().await; // the registry checked at build
                loop {
                    ticker.tick().await;
                    let Some(shared) = shared.upgrade() else {
                        break;
                    };
                    // A change counts in the registry's generation: the change poll below
                    // announces it.
                    shared.registry.check_readiness().await;
                }
            });
        }
        let shared = Arc::downgrade(self);
        let interval = self.options.poll_interval;
        runtime.spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                let Some(shared) = shared.upgrade() else {
                    break;
                };
                shared.check_changes().await;
            }
        });
    }

    /// Checks the registry for revocations and replacements since the last check; for each
    /// client whose visible tools changed, opens the run it will be served from once it lists
    /// again, and announces the change to its connections.
    pub(crate) async fn check_changes(self: &Arc<Self>) {
        let _checking = self.checking.lock().await;
        let generation = registry_generation(&self.registry);
        if self.generation.swap(generation, Ordering::AcqRel) == generation {
            return;
        }
        let clients: Vec<Arc<Client>> = lock(&self.clients).values().cloned().collect();
        for client in clients {
            if client.prepare(self, generation) {
                tracing::info!(client = ?client.id, "the tools this client may see changed; announcing it");
                client.announce().await;
            }
        }
    }

    fn open(self: &Arc<Self>, client: &str, subject: &Subject, generation: u64) -> Arc<RunSlot> {
        let seq = self.runs_opened.fetch_add(1, Ordering::Relaxed) + 1;
        let mut run = self
            .registry
            .open_run(format!("mcp-{client}-{seq}"), subject);
        if let Some(timeout) = self.options.call_timeout {
            run = run.with_call_timeout(timeout);
        }
        Arc::new(RunSlot {
            fingerprint: run.allowed().fingerprint(),
            run,
            generation,
            seq,
            cursor_id: cursor_id(seq),
            tools: OnceLock::new(),
            deferred: OnceLock::new(),
        })
    }
}

/// A run's random name in its page cursors. Without an operating-system random source, a
/// digest of the run's number, the time and an address: unguessable enough for a name that
/// guards nothing (a cursor of another run is refused as stale either way), and no counter.
fn cursor_id(seq: u64) -> u128 {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(format!("{seq}{:?}{:p}", SystemTime::now(), &bytes));
        bytes.copy_from_slice(&digest[..16]);
    }
    u128::from_le_bytes(bytes)
}

/// How many revocations and replacements the registry has seen.
fn registry_generation(registry: &Registry) -> u64 {
    registry.generation()
}

/// One subject's connections and the runs they are served from.
pub(crate) struct Client {
    pub(crate) id: Arc<str>,
    /// The issuer of the client's access token; `None` for a static token.
    pub(crate) issuer: Option<Arc<str>>,
    pub(crate) subject: Subject,
    runs: Mutex<Runs>,
    /// Connections that went through `initialize` (protocol versions before 2026-07-28):
    /// they get `notifications/tools/list_changed` unscoped.
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Bumped whenever what this client may see changed; `subscriptions/listen` streams
    /// (2026-07-28) wait on it.
    visible: watch::Sender<u64>,
    /// Approval questions sent as input requests of an `input_required` result (protocol
    /// 2026-07-28), by approval id, until the client retries the call with the answer.
    asked: Mutex<HashMap<String, Asked>>,
}

/// A search call as [`Client::search`] read it.
pub(crate) enum Search {
    /// Answered already: the search needed no embedder.
    Answered(SearchAnswer),
    /// To answer with [`Client::finish_search`] once its query is embedded
    /// ([`Shared::embed`]).
    Embed(PendingSearch, QueryEmbedding),
}

/// A search waiting for its query's embedding.
pub(crate) struct PendingSearch {
    /// The run whose session the embedding is made for.
    slot: Arc<RunSlot>,
    call: SearchCall,
}

/// An approval question waiting for the client's answer in a retried call.
pub(crate) struct Asked {
    /// The run that made the call, which decides it.
    pub(crate) slot: Arc<RunSlot>,
    /// What the person was asked about.
    pub(crate) request: ApprovalRequest,
}

struct Runs {
    /// The run calls go to: the one whose tools the client was last shown.
    current: Arc<RunSlot>,
    /// Opened after a change, and made current when the client lists its tools again.
    next: Option<Arc<RunSlot>>,
}

/// A run and what is kept with it.
pub(crate) struct RunSlot {
    pub(crate) run: Run,
    fingerprint: Fingerprint,
    /// The registry's change count when it was opened.
    generation: u64,
    /// The number of the run in this server (never shown to a client).
    pub(crate) seq: u64,
    /// The run's name in its page cursors: random, so that a cursor tells nothing of how
    /// many runs the server opened, nor of any other run.
    pub(crate) cursor_id: u128,
    /// The run's MCP tool list, made once (without deferred loading).
    tools: OnceLock<Result<Arc<[Tool]>, String>>,
    /// With deferred loading, the client's session of this run: what it loaded.
    deferred: OnceLock<DeferredSession>,
}

impl RunSlot {
    /// The tools `tools/list` serves, in order: with deferred loading, the session's export
    /// as it is now (it grows as searches load tools); otherwise the run's MCP export, in
    /// name order, converted once.
    pub(crate) fn tools(&self, options: &ServerOptions) -> Result<Arc<[Tool]>, String> {
        if let Some(session) = self.deferred(options) {
            let export = session.export().map_err(|error| error.to_string())?;
            return mcp_tools(export);
        }
        self.tools
            .get_or_init(|| {
                let export = self
                    .run
                    .export(Profile::Mcp)
                    .map_err(|error| error.to_string())?;
                mcp_tools(export)
            })
            .clone()
    }

    /// The run's deferred session, if the server loads tools on demand; started with
    /// `options` alone unless [`start_deferred`](Self::start_deferred) started it first.
    pub(crate) fn deferred(&self, options: &ServerOptions) -> Option<&DeferredSession> {
        let deferred = options.deferred_loading.as_ref()?;
        Some(
            self.deferred
                .get_or_init(|| self.run.deferred(Profile::Mcp, deferred.clone())),
        )
    }

    /// Starts the deferred session (if the server loads tools on demand and it has not
    /// started), with `carried` loaded besides what the options load: the tools the client
    /// had loaded in the run this one takes over from.
    fn start_deferred(&self, options: &ServerOptions, carried: Vec<String>) {
        if let Some(deferred) = &options.deferred_loading {
            let deferred: DeferredOptions = deferred.clone().load(carried);
            self.deferred
                .get_or_init(|| self.run.deferred(Profile::Mcp, deferred));
        }
    }
}

/// An MCP export as rmcp's tools.
fn mcp_tools(export: serde_json::Value) -> Result<Arc<[Tool]>, String> {
    let serde_json::Value::Array(items) = export else {
        return Err("the MCP export is not a list".to_owned());
    };
    items
        .into_iter()
        .map(|item| {
            serde_json::from_value::<Tool>(item)
                .map_err(|error| format!("an exported tool is not an MCP tool: {error}"))
        })
        .collect::<Result<Vec<Tool>, String>>()
        .map(Arc::from)
}

impl Client {
    fn new(
        shared: &Arc<Shared>,
        issuer: Option<Arc<str>>,
        id: Arc<str>,
        subject: Subject,
    ) -> Client {
        let current = shared.open(&id, &subject, registry_generation(&shared.registry));
        Client {
            id,
            issuer,
            subject,
            runs: Mutex::new(Runs {
                current,
                next: None,
            }),
            peers: Mutex::new(Vec::new()),
            visible: watch::channel(0).0,
            asked: Mutex::new(HashMap::new()),
        }
    }

    /// Who approves or denies when this client's user answers an approval question, as the
    /// request's state and the audit log record it: `{issuer}#{id}` for an access token (two
    /// issuers' same subject are two approvers), the token entry's id for a static token.
    pub(crate) fn approver(&self) -> String {
        match &self.issuer {
            Some(issuer) => format!("{issuer}#{}", self.id),
            None => self.id.as_ref().to_owned(),
        }
    }

    /// Remembers an approval question the client was sent, to decide it when the client
    /// retries the call with the answer; forgets questions whose requests expired.
    pub(crate) fn remember_question(&self, slot: Arc<RunSlot>, request: ApprovalRequest) {
        let now = SystemTime::now();
        let mut asked = lock(&self.asked);
        asked.retain(|_, asked| asked.request.expires_at() > now);
        asked.insert(request.id().to_owned(), Asked { slot, request });
    }

    /// The approval question `id` this client was sent, taken: it is answered once.
    pub(crate) fn take_question(&self, id: &str) -> Option<Asked> {
        lock(&self.asked).remove(id)
    }

    /// The run calls are served from.
    pub(crate) fn current(&self) -> Arc<RunSlot> {
        lock(&self.runs).current.clone()
    }

    /// If the server loads tools on demand and `request` calls the search tool: its answer by
    /// the deferred session of the run calls are served from, `id` its call id, or, if the
    /// search needs the embedder, what to embed before it is answered
    /// ([`finish_search`](Self::finish_search)). Read under the lock that
    /// [`relist`](Self::relist) takes to carry the loaded tools over to a new run, which is
    /// held only for that: never while the embedder works. A call of another tool is told to
    /// the session, so a search that led to it is not audited as one that found nothing used.
    pub(crate) fn search(
        &self,
        options: &ServerOptions,
        id: String,
        request: &CallToolRequestParams,
    ) -> Option<Search> {
        let runs = lock(&self.runs);
        let session = runs.current.deferred(options)?;
        if request.name != session.search_tool_name() {
            // A call of a tool: a search that found it led somewhere (audited otherwise).
            session.called(&request.name);
            return None;
        }
        let arguments = serde_json::Value::Object(request.arguments.clone().unwrap_or_default());
        let call = SearchCall::new(id, arguments);
        Some(match session.embedding(&call) {
            None => Search::Answered(session.search_embedded(&call, None)),
            Some(embedding) => Search::Embed(
                PendingSearch {
                    slot: runs.current.clone(),
                    call,
                },
                embedding,
            ),
        })
    }

    /// The answer to `pending`, whose query is `embedded` now, by the deferred session of
    /// the run calls are served from, under the lock [`relist`](Self::relist) takes: the
    /// lock is held only to load what the search found. If that run is no longer the one the
    /// embedding was made for (the client listed its tools again meanwhile), `pending` is
    /// given back to be embedded for the new run's snapshot, unless `last`: then it is
    /// answered by the new run (lexically if that snapshot's tools are not embedded yet).
    pub(crate) fn finish_search(
        &self,
        options: &ServerOptions,
        pending: PendingSearch,
        embedded: Option<&EmbeddedQuery>,
        last: bool,
    ) -> Result<Option<SearchAnswer>, (PendingSearch, QueryEmbedding)> {
        let runs = lock(&self.runs);
        if !last && !Arc::ptr_eq(&runs.current, &pending.slot) {
            let Some(session) = runs.current.deferred(options) else {
                return Ok(None);
            };
            return match session.embedding(&pending.call) {
                Some(embedding) => Err((
                    PendingSearch {
                        slot: runs.current.clone(),
                        call: pending.call,
                    },
                    embedding,
                )),
                None => Ok(Some(session.search_embedded(&pending.call, None))),
            };
        }
        Ok(runs
            .current
            .deferred(options)
            .map(|session| session.search_embedded(&pending.call, embedded)))
    }

    /// The run a fresh `tools/list` is served from: after a change in the registry, a new run
    /// (refreshing permissions means opening a new run); otherwise the current one.
    pub(crate) fn relist(&self, shared: &Arc<Shared>) -> Arc<RunSlot> {
        let generation = registry_generation(&shared.registry);
        let mut runs = lock(&self.runs);
        if runs.current.generation != generation {
            let next = match runs.next.take() {
                Some(next) if next.generation == generation => next,
                _ => shared.open(&self.id, &self.subject, generation),
            };
            // What the client loaded stays loaded (what it may still see of it).
            let carried = runs
                .current
                .deferred(&shared.options)
                .map(DeferredSession::loaded)
                .unwrap_or_default();
            next.start_deferred(&shared.options, carried);
            runs.current = next;
        }
        runs.current.clone()
    }

    /// Opens the run for registry state `generation`, to be made current at the next list;
    /// true if its tools differ from what the client was last shown or told about.
    fn prepare(&self, shared: &Arc<Shared>, generation: u64) -> bool {
        let mut runs = lock(&self.runs);
        if runs.current.generation >= generation {
            return false;
        }
        let known = runs.next.as_ref().unwrap_or(&runs.current).fingerprint;
        let next = match &runs.next {
            Some(next) if next.generation == generation => next.clone(),
            _ => shared.open(&self.id, &self.subject, generation),
        };
        let changed = next.fingerprint != known;
        runs.next = Some(next);
        changed
    }

    /// Sends `notifications/tools/list_changed` to every connection of this client: those
    /// that went through `initialize`, and its `subscriptions/listen` streams.
    pub(crate) async fn announce(&self) {
        self.visible.send_modify(|version| *version += 1);
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = lock(&self.peers);
            peers.retain(|peer| !peer.is_transport_closed());
            peers.clone()
        };
        for peer in peers {
            if let Err(error) = peer.notify_tool_list_changed().await {
                tracing::debug!(client = ?self.id, %error, "could not send tools/list_changed");
            }
        }
    }

    /// Remembers a connection that went through `initialize`, to announce changes to it.
    pub(crate) fn add_peer(&self, peer: Peer<RoleServer>) {
        let mut peers = lock(&self.peers);
        peers.retain(|peer| !peer.is_transport_closed());
        peers.push(peer);
    }

    /// A receiver that sees every change of what this client may see.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.visible.subscribe()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
