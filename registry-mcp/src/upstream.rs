//! Upstream MCP servers federated into the registry: their tools become registry tools, seen
//! and called through the same runs, gate, approvals, quotas and audit as the application's
//! own, pinned against the rug pull and linted against poisoning.
//!
//! ```no_run
//! use registry_core::Registry;
//! use registry_mcp::upstream::{Federation, UpstreamLock, UpstreamsConfig};
//!
//! # async fn start() -> Result<(), Box<dyn std::error::Error>> {
//! let config = UpstreamsConfig::load("upstreams.toml")?;
//! let lock = UpstreamLock::load("upstreams.lock")?;
//! // Connects to every upstream, lists its tools, pins what it meets the first time.
//! let federation = Federation::connect(config, lock, &[]).await?;
//! let registry = federation.register(Registry::builder().declared()).build()?;
//! // Follows `notifications/tools/list_changed` and the upstreams' health from now on.
//! federation.attach(&registry);
//! registry.check_readiness().await;
//! # Ok(()) }
//! ```
//!
//! - **Names.** An upstream's tool `search` is the registry's `{prefix}_search`, the prefix
//!   being the upstream's name unless its `prefix` says otherwise. A name the tool-name rule
//!   refuses is left out (and logged); two upstreams' tools of one name fail the build, as any
//!   duplicate does.
//! - **Policy.** Each tool's scopes, tenants, `needs_approval`, rate limit and timeout are the
//!   file's ([`UpstreamsConfig`]): per tool, else per upstream. A tool without scopes needs
//!   the upstream's default scope `upstream:{name}`; only `public = true` makes one
//!   unrestricted. Upstream annotations are hints shown to clients and never grant anything:
//!   `readOnlyHint` is dropped (a read-only tool is visible in read-only runs, so only the
//!   file's `read_only = true` says so); `destructiveHint`, `idempotentHint` and
//!   `openWorldHint` are passed on.
//! - **Calls** are resolved, validated against the schema that was shown, gated and then
//!   forwarded with rmcp's client; progress comes back, cancellation and deadlines go
//!   forward (`notifications/cancelled`); the blocks of the answer come back as they were.
//!   An upstream that is unreachable, closes, or answers with a JSON-RPC error is
//!   `Unavailable`; its tool's own `isError` is `ExecutionFailed`.
//! - **Health.** Each upstream tool has a readiness check: a lost connection hides the tools
//!   of its upstream from new runs and makes calls in open runs `Unavailable`, until the
//!   connection is made again (tried with a growing pause).
//! - **Pinning** ([`UpstreamLock`]). The first time an upstream is met, its definitions are
//!   written to the lock (trust on first use). From then on a definition that differs from
//!   its pin, at start or after the upstream's `notifications/tools/list_changed`, is
//!   withheld: not listed and not callable in any run, [`Run::explain`] saying why with both
//!   digests, audited as a readiness event, until [`Federation::accept`] (or
//!   `mcp_server --accept-upstream NAME`). A tool new upstream is withheld the same way; one
//!   removed upstream is revoked. A tool new at run time cannot be added to a built registry:
//!   once accepted, it is served from the next start.
//! - **Lint.** Every text of an upstream tool (description, title, parameter descriptions, the
//!   strings of its schemas) passes `registry-lint`; a tool that fails is withheld, its rules
//!   named, and its texts never reach a model: the registry holds a placeholder in its place.
//!   So is a tool the registry's other checks refuse (a schema that does not compile, beyond
//!   the resource bounds, ...). A schema declaring draft-07 (`$schema`) is taken as 2020-12,
//!   MCP's dialect, when nothing in it reads differently there.
//!   The file's `allow_description = "reason"` exempts one tool, but never from the secret
//!   rules.
//!
//! [`Run::explain`]: registry_core::Run::explain

mod client;
mod config;
mod lock;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use registry_core::call::ToolError;
use registry_core::change::ReplaceOptions;
use registry_core::{BuildProblem, DynamicTool, Registry, RegistryBuilder};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

pub use client::MAX_TOOLS_PER_UPSTREAM;
pub use config::{
    ConfigError, DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, MAX_UPSTREAMS, PolicyOverride,
    ToolPolicy, Transport, UpstreamConfig, UpstreamsConfig,
};
pub use lock::{LockError, MAX_PINS, Pin, UpstreamLock};

use client::{Events, Link};

/// The longest pause between two attempts to reconnect a lost upstream.
const MAX_RECONNECT_PAUSE: Duration = Duration::from_secs(30);

/// How often the upstreams' connections are looked at.
const HEALTH_INTERVAL: Duration = Duration::from_millis(250);

/// Upstream MCP servers, connected, their tools ready to be registered (see the
/// [module](self)). Cheap to clone.
#[derive(Clone)]
pub struct Federation {
    inner: Arc<Inner>,
}

impl fmt::Debug for Federation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .inner
            .upstreams
            .iter()
            .map(|upstream| upstream.config.name.as_str())
            .collect();
        f.debug_struct("Federation")
            .field("upstreams", &names)
            .finish_non_exhaustive()
    }
}

struct Inner {
    upstreams: Vec<Arc<Upstream>>,
    lock: Mutex<UpstreamLock>,
    registry: OnceLock<Registry>,
    /// Held while a refresh or an acceptance changes tools and rechecks readiness: one at a
    /// time, so that neither sees the other half done.
    changing: tokio::sync::Mutex<()>,
}

struct Upstream {
    config: UpstreamConfig,
    events: Events,
    link: RwLock<Option<Arc<Link>>>,
    /// The upstream's tools by the registry's name.
    tools: Mutex<BTreeMap<String, Entry>>,
    /// Pins of tools the upstream no longer lists, seen at start.
    removed_at_start: Vec<String>,
}

/// One upstream tool, as the federation knows it.
struct Entry {
    /// The upstream's name of it.
    upstream_tool: String,
    /// What the upstream offers now; `None` once it stopped listing it.
    current: Option<Offer>,
    /// Whether it has a place in the registry (tools met at start do).
    registered: bool,
    /// Why it is withheld from every run, if it is.
    withheld: Option<Withheld>,
}

/// A definition an upstream offers.
#[derive(Clone)]
struct Offer {
    /// As the upstream listed it.
    tool: rmcp::model::Tool,
    definition: String,
    annotations: String,
    /// The lint's findings and any other build problem: why the registry holds a placeholder.
    refused: Vec<String>,
}

/// Why an upstream tool is withheld.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Withheld {
    /// The upstream offers a tool its pins do not know.
    New {
        /// The digest of what it offers.
        now: String,
    },
    /// The upstream's definition differs from its pin.
    Changed {
        /// The pinned digest.
        pinned: String,
        /// The digest of what it offers now.
        now: String,
    },
    /// The upstream no longer lists it.
    Removed,
    /// Its texts fail the lint (or another check of the registry's); the problems.
    Refused(Vec<String>),
}

impl fmt::Display for Withheld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Withheld::New { now } => write!(
                f,
                "withheld: a tool new upstream, not pinned (now {now}); an operator must accept it"
            ),
            Withheld::Changed { pinned, now } => write!(
                f,
                "withheld: its upstream definition changed (pinned {pinned}, now {now}); an operator must accept it"
            ),
            Withheld::Removed => f.write_str("withheld: the upstream no longer lists it"),
            Withheld::Refused(problems) => {
                write!(f, "withheld: refused: {}", problems.join("; "))
            }
        }
    }
}

/// The state of one upstream tool, for operators.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolState {
    /// The registry's name of it.
    pub name: String,
    /// Its upstream.
    pub upstream: String,
    /// The upstream's name of it.
    pub upstream_tool: String,
    /// Whether the registry has it (a tool new at run time is served from the next start).
    pub registered: bool,
    /// Why it is withheld; `None` when it is served.
    pub withheld: Option<Withheld>,
}

/// Why the federation could not start, or an acceptance failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FederationError {
    /// An upstream could not be connected or listed.
    #[error("upstream {upstream:?}: {reason}")]
    Unreachable {
        /// The upstream.
        upstream: String,
        /// Why.
        reason: String,
    },
    /// No upstream has that name.
    #[error("there is no upstream named {0:?} in the upstreams file")]
    UnknownUpstream(String),
    /// The lock file cannot be written.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A change to the registry was refused.
    #[error("the registry refused a change: {0}")]
    Registry(#[from] registry_core::RegistryError),
}

impl Federation {
    /// Connects to every upstream of `config` (all at once, each within its connect
    /// timeout), lists its tools and compares them with `lock`: an upstream the lock does not
    /// know, or one named in `accept`, has its current definitions pinned and the lock file
    /// written. An upstream that cannot be reached fails the start, naming it.
    pub async fn connect(
        config: UpstreamsConfig,
        lock: UpstreamLock,
        accept: &[String],
    ) -> Result<Federation, FederationError> {
        if let Some(unknown) = accept
            .iter()
            .find(|name| !config.upstreams.iter().any(|u| &u.name == *name))
        {
            return Err(FederationError::UnknownUpstream(unknown.clone()));
        }
        let connecting = config.upstreams.into_iter().map(|config| async move {
            let events = Events::default();
            let connected = match Link::connect(&config, events.clone()).await {
                Ok(link) => match link.list(config.connect_timeout).await {
                    Ok(tools) => Ok((link, tools)),
                    Err(reason) => Err(reason),
                },
                Err(reason) => Err(reason),
            };
            match connected {
                Ok((link, tools)) => Ok((config, events, link, tools)),
                Err(reason) => Err(FederationError::Unreachable {
                    upstream: config.name,
                    reason,
                }),
            }
        });
        let connected = futures_join(connecting).await;
        let mut lock = lock;
        let mut upstreams = Vec::new();
        for result in connected {
            let (config, events, link, listed) = result?;
            let trust = accept.contains(&config.name) || !lock.knows(&config.name);
            let mut tools = BTreeMap::new();
            for tool in &listed {
                let Some((name, offer)) = offer_of(&config, tool) else {
                    continue;
                };
                if tools.contains_key(&name) {
                    tracing::warn!(upstream = %crate::logging::escape(&config.name), tool = %crate::logging::escape(&name), "the upstream lists a tool twice; the first is kept");
                    continue;
                }
                let withheld = if trust {
                    pin(&mut lock, &config.name, &name, tool.name.as_ref(), &offer);
                    None
                } else {
                    compare(&lock, &name, &offer)
                };
                let withheld = refused(&offer).or(withheld);
                tools.insert(
                    name,
                    Entry {
                        upstream_tool: tool.name.to_string(),
                        current: Some(offer),
                        registered: true,
                        withheld,
                    },
                );
            }
            let stale: Vec<String> = lock
                .pins()
                .iter()
                .filter(|(name, pin)| pin.upstream == config.name && !tools.contains_key(*name))
                .map(|(name, _)| name.clone())
                .collect();
            let removed_at_start = if trust {
                for name in &stale {
                    lock.remove(name);
                }
                Vec::new()
            } else {
                for name in &stale {
                    tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&config.name), tool = %crate::logging::escape(name), "a pinned upstream tool is no longer listed");
                }
                stale
            };
            for (name, entry) in &tools {
                if let Some(withheld) = &entry.withheld {
                    tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&config.name), tool = %crate::logging::escape(name), reason = %crate::logging::escape(&withheld.to_string()), "upstream tool withheld");
                }
            }
            upstreams.push(Arc::new(Upstream {
                config,
                events,
                link: RwLock::new(Some(Arc::new(link))),
                tools: Mutex::new(tools),
                removed_at_start,
            }));
        }
        lock.save()?;
        Ok(Federation {
            inner: Arc::new(Inner {
                upstreams,
                lock: Mutex::new(lock),
                registry: OnceLock::new(),
                changing: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// Adds every upstream tool to `builder`, each with the readiness check that withholds
    /// it (pin, lint) or hides it while its upstream is down.
    pub fn register(&self, mut builder: RegistryBuilder) -> RegistryBuilder {
        for upstream in &self.inner.upstreams {
            let tools = upstream
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for (name, entry) in tools.iter() {
                let Some(offer) = &entry.current else {
                    continue;
                };
                builder = builder.tool(self.tool(upstream, name, entry, offer));
                let (federation, upstream, name) = (self.clone(), upstream.clone(), name.clone());
                builder =
                    builder.readiness(name.clone(), move || federation.readiness(&upstream, &name));
            }
        }
        builder
    }

    /// Follows the upstreams from now on, with `registry` (built from
    /// [`register`](Self::register)): a `notifications/tools/list_changed` makes the tools
    /// listed again and compared with their pins; a lost connection hides its upstream's
    /// tools and is tried again. Needs a Tokio runtime; a second call does nothing.
    pub fn attach(&self, registry: &Registry) {
        if self.inner.registry.set(registry.clone()).is_err() {
            return;
        }
        for upstream in &self.inner.upstreams {
            let (federation, upstream) = (self.clone(), upstream.clone());
            tokio::spawn(async move { federation.follow(upstream).await });
        }
    }

    /// Accepts the current definitions of `upstream`'s tools: pins them, writes the lock
    /// file, and serves again the tools withheld for a change (not those the lint refuses).
    /// Tools it no longer lists lose their pins; tools new since the start are pinned and
    /// served from the next start. Returns the names accepted.
    pub async fn accept(&self, upstream: &str) -> Result<Vec<String>, FederationError> {
        let Some(up) = self
            .inner
            .upstreams
            .iter()
            .find(|u| u.config.name == upstream)
        else {
            return Err(FederationError::UnknownUpstream(upstream.to_owned()));
        };
        let _changing = self.inner.changing.lock().await;
        let mut accepted = Vec::new();
        {
            let mut lock = self.lock();
            let mut tools = up.tools.lock().unwrap_or_else(PoisonError::into_inner);
            for (name, entry) in tools.iter_mut() {
                match &entry.current {
                    Some(offer) => {
                        pin(
                            &mut lock,
                            &up.config.name,
                            name,
                            &entry.upstream_tool,
                            offer,
                        );
                        if matches!(
                            entry.withheld,
                            Some(Withheld::New { .. } | Withheld::Changed { .. })
                        ) {
                            entry.withheld = None;
                            tracing::info!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(upstream), tool = %crate::logging::escape(name), definition = %offer.definition, "upstream tool accepted");
                        }
                        entry.withheld = entry.withheld.take().or_else(|| refused(offer));
                        accepted.push(name.clone());
                    }
                    None => lock.remove(name),
                }
            }
            for name in &up.removed_at_start {
                lock.remove(name);
            }
            lock.save()?;
        }
        if let Some(registry) = self.inner.registry.get() {
            registry.check_readiness().await;
        }
        Ok(accepted)
    }

    /// Every upstream tool and its state, by upstream then name.
    pub fn tools(&self) -> Vec<ToolState> {
        let mut states = Vec::new();
        for upstream in &self.inner.upstreams {
            let tools = upstream
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for (name, entry) in tools.iter() {
                states.push(ToolState {
                    name: name.clone(),
                    upstream: upstream.config.name.clone(),
                    upstream_tool: entry.upstream_tool.clone(),
                    registered: entry.registered,
                    withheld: entry.withheld.clone(),
                });
            }
        }
        states
    }

    /// The lock as it is now.
    pub fn lock_text(&self) -> String {
        self.lock().text()
    }

    /// Whether every upstream is connected now.
    pub fn is_healthy(&self) -> bool {
        self.inner
            .upstreams
            .iter()
            .all(|upstream| upstream.live().is_some())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, UpstreamLock> {
        self.inner
            .lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The readiness of the registry's tool `name` of `upstream`.
    fn readiness(&self, upstream: &Upstream, name: &str) -> Result<(), String> {
        if upstream.live().is_none() {
            return Err(format!(
                "the upstream server {:?} is not connected",
                upstream.config.name
            ));
        }
        let tools = upstream
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match tools.get(name).and_then(|entry| entry.withheld.as_ref()) {
            Some(withheld) => Err(withheld.to_string()),
            None => Ok(()),
        }
    }

    /// The registry tool for `entry`: the upstream's definition, forwarding its calls, or a
    /// placeholder when the registry would refuse it.
    fn tool(
        &self,
        upstream: &Arc<Upstream>,
        name: &str,
        entry: &Entry,
        offer: &Offer,
    ) -> DynamicTool {
        let policy = upstream.config.policy_of(&entry.upstream_tool);
        let tool = if offer.refused.is_empty() {
            definition_of(name, &offer.tool, &policy)
        } else {
            placeholder(name, &policy)
        };
        let structured = offer.tool.output_schema.is_some();
        let (upstream, tool_name, digest) = (
            upstream.clone(),
            entry.upstream_tool.clone(),
            offer.definition.clone(),
        );
        let (name, refused) = (name.to_owned(), !offer.refused.is_empty());
        tool.async_result_handler(move |ctx, arguments| {
            let (upstream, tool_name, digest, name) = (
                upstream.clone(),
                tool_name.clone(),
                digest.clone(),
                name.clone(),
            );
            async move {
                if refused {
                    return Err(ToolError::unavailable("this upstream tool is withheld"));
                }
                // Checked again on every call: what was shown must still be what the
                // upstream offers, and not withheld since.
                let current = {
                    let tools = upstream
                        .tools
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    tools.get(&name).map(|entry| {
                        (
                            entry.withheld.clone(),
                            entry.current.as_ref().map(|offer| offer.definition.clone()),
                        )
                    })
                };
                match current {
                    Some((None, Some(now))) if now == digest => {}
                    Some((Some(withheld), _)) => return Err(ToolError::unavailable(withheld)),
                    _ => {
                        return Err(ToolError::unavailable(
                            "the upstream no longer offers the definition that was shown",
                        ));
                    }
                }
                let Some(link) = upstream.live() else {
                    return Err(ToolError::unavailable(format!(
                        "the upstream server {:?} is not connected",
                        upstream.config.name
                    )));
                };
                link.call(
                    &upstream.config.name,
                    &tool_name,
                    arguments,
                    ctx,
                    structured,
                )
                .await
            }
        })
    }

    /// Follows one upstream until the process ends: its list changes, its connection.
    async fn follow(self, upstream: Arc<Upstream>) {
        let mut pause = Duration::from_millis(500);
        let mut was_live = true;
        loop {
            let live = upstream.live().is_some();
            if live != was_live {
                was_live = live;
                if !live {
                    tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&upstream.config.name), "upstream connection lost; its tools are not ready");
                }
                self.check_readiness().await;
            }
            if live {
                tokio::select! {
                    () = upstream.events.changed.notified() => {
                        self.refresh(&upstream).await;
                    }
                    () = tokio::time::sleep(HEALTH_INTERVAL) => {}
                }
                continue;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_RECONNECT_PAUSE);
            match Link::connect(&upstream.config, upstream.events.clone()).await {
                Ok(link) => {
                    *upstream
                        .link
                        .write()
                        .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(link));
                    pause = Duration::from_millis(500);
                    tracing::info!(upstream = %crate::logging::escape(&upstream.config.name), "upstream connected again");
                    // Whatever it offers now is compared with the pins before anything is
                    // served again.
                    self.refresh(&upstream).await;
                }
                Err(reason) => {
                    tracing::debug!(upstream = %crate::logging::escape(&upstream.config.name), reason = %crate::logging::escape(&reason), "upstream still unreachable");
                }
            }
        }
    }

    async fn check_readiness(&self) {
        let _changing = self.inner.changing.lock().await;
        if let Some(registry) = self.inner.registry.get() {
            registry.check_readiness().await;
        }
    }

    /// Lists `upstream`'s tools again and applies what changed: a changed definition is
    /// withheld (before the registry holds it), a removed tool revoked, a new one noted.
    async fn refresh(&self, upstream: &Arc<Upstream>) {
        let Some(registry) = self.inner.registry.get() else {
            return;
        };
        let _changing = self.inner.changing.lock().await;
        let Some(link) = upstream.live() else {
            return;
        };
        let listed = match link.list(upstream.config.connect_timeout).await {
            Ok(listed) => listed,
            Err(reason) => {
                tracing::warn!(upstream = %crate::logging::escape(&upstream.config.name), reason = %crate::logging::escape(&reason), "cannot list the upstream's tools again");
                return;
            }
        };
        let mut offers = BTreeMap::new();
        for tool in &listed {
            if let Some((name, offer)) = offer_of(&upstream.config, tool) {
                offers.entry(name).or_insert(offer);
            }
        }
        // What to do in the registry, decided under the lock, done after it.
        let mut replace = Vec::new();
        let mut revoke = Vec::new();
        {
            let lock = self.lock();
            let mut tools = upstream
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for (name, entry) in tools.iter_mut() {
                let now = offers.remove(name);
                let same = match (&entry.current, &now) {
                    (Some(old), Some(new)) => {
                        old.definition == new.definition && old.annotations == new.annotations
                    }
                    (None, None) => true,
                    _ => false,
                };
                if same {
                    continue;
                }
                match now {
                    Some(offer) => {
                        let withheld = refused(&offer).or_else(|| compare(&lock, name, &offer));
                        audit_change(
                            &upstream.config.name,
                            name,
                            entry,
                            &offer,
                            withheld.as_ref(),
                        );
                        entry.withheld = withheld;
                        if entry.registered {
                            replace.push((name.clone(), entry.current.is_none()));
                        }
                        entry.current = Some(offer);
                    }
                    None => {
                        tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&upstream.config.name), tool = %crate::logging::escape(name), "the upstream no longer lists this tool; revoked");
                        entry.withheld = Some(Withheld::Removed);
                        entry.current = None;
                        if entry.registered {
                            revoke.push(name.clone());
                        }
                    }
                }
            }
            for (name, offer) in offers {
                let withheld = refused(&offer).or_else(|| compare(&lock, &name, &offer));
                let withheld = withheld.or(Some(Withheld::New {
                    now: offer.definition.clone(),
                }));
                tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&upstream.config.name), tool = %crate::logging::escape(&name), definition = %offer.definition, "a tool new upstream; served from the next start once accepted");
                tools.insert(
                    name,
                    Entry {
                        upstream_tool: offer.tool.name.to_string(),
                        current: Some(offer),
                        registered: false,
                        withheld,
                    },
                );
            }
        }
        // Withheld first, so that no run opened from now on is shown the new definition
        // before it is accepted; then the registry holds it, old runs revoked.
        registry.check_readiness().await;
        for name in revoke {
            if let Err(error) = registry.revoke(&name, "the upstream no longer lists this tool") {
                tracing::error!(%error, "cannot revoke a removed upstream tool");
            }
        }
        for (name, was_removed) in replace {
            let tool = {
                let tools = upstream
                    .tools
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                let Some(entry) = tools.get(&name) else {
                    continue;
                };
                let Some(offer) = &entry.current else {
                    continue;
                };
                self.tool(upstream, &name, entry, offer)
            };
            if was_removed {
                let _ = registry.restore(&name, "the upstream lists this tool again");
            }
            let options = ReplaceOptions::revoke_old_runs(format!(
                "the upstream {:?} changed this tool",
                upstream.config.name
            ));
            if let Err(error) = registry.replace(tool, options) {
                tracing::error!(%error, "cannot install a changed upstream tool");
            }
        }
        registry.check_readiness().await;
    }
}

impl Upstream {
    /// The connection, while it is open.
    fn live(&self) -> Option<Arc<Link>> {
        let link = self.link.read().unwrap_or_else(PoisonError::into_inner);
        link.as_ref().filter(|link| !link.is_closed()).cloned()
    }
}

/// Logs and audits a changed upstream definition, with both digests.
fn audit_change(
    upstream: &str,
    name: &str,
    entry: &Entry,
    offer: &Offer,
    withheld: Option<&Withheld>,
) {
    let old = entry
        .current
        .as_ref()
        .map_or("(none)", |old| old.definition.as_str());
    tracing::warn!(
        target: registry_core::audit::AUDIT_TARGET,
        upstream = %crate::logging::escape(upstream),
        tool = %crate::logging::escape(name),
        old_definition = %old,
        new_definition = %offer.definition,
        withheld = %withheld.map(ToString::to_string).unwrap_or_else(|| "no: it matches its pin".into()),
        "upstream tool definition changed"
    );
}

/// Runs `futures` at once, their results in their order.
async fn futures_join<F, T>(futures: impl IntoIterator<Item = F>) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut results = Vec::with_capacity(handles.len());
    for handle in handles {
        match handle.await {
            Ok(result) => results.push(result),
            Err(error) => std::panic::resume_unwind(error.into_panic()),
        }
    }
    results
}

/// The registry's name of `tool` and what it offers; `None` (logged) for a name the
/// registry's rule refuses.
fn offer_of(config: &UpstreamConfig, tool: &rmcp::model::Tool) -> Option<(String, Offer)> {
    let name = config.tool_name(&tool.name);
    if let Err(error) = registry_core::definition::check_tool_name(&name) {
        tracing::warn!(upstream = %crate::logging::escape(&config.name), tool = %crate::logging::escape(&tool.name), %error, "an upstream tool whose name the registry refuses is left out");
        return None;
    }
    let policy = config.policy_of(&tool.name);
    let definition = definition_of(&name, tool, &policy);
    let refused = definition
        .problems()
        .iter()
        .filter(|problem| !matches!(problem, BuildProblem::MissingHandler { .. }))
        .map(problem_text)
        .collect();
    let annotations = serde_json::to_value(&tool.annotations).unwrap_or_default();
    Some((
        name,
        Offer {
            tool: tool.clone(),
            definition: definition.definition_digest(),
            annotations: digest(&annotations),
            refused,
        },
    ))
}

/// A build problem as the reason of a withheld tool: the lint's rule first.
fn problem_text(problem: &BuildProblem) -> String {
    match problem {
        BuildProblem::UnsafeDescription {
            field,
            pointer,
            rule,
            finding,
            ..
        } => match pointer {
            Some(pointer) => format!("lint {rule} in the {field} at {pointer}: {finding}"),
            None => format!("lint {rule} in the {field}: {finding}"),
        },
        other => other.to_string(),
    }
}

/// The registry tool of an upstream's definition and the file's policy, without a handler.
fn definition_of(name: &str, tool: &rmcp::model::Tool, policy: &ToolPolicy) -> DynamicTool {
    let description = tool.description.as_deref().unwrap_or_default();
    let mut definition = DynamicTool::new(name, description)
        .parameters(as_2020_12(Value::Object((*tool.input_schema).clone())));
    if let Some(title) = tool
        .title
        .as_ref()
        .or_else(|| tool.annotations.as_ref()?.title.as_ref())
    {
        definition = definition.title(title.as_str());
    }
    if let Some(output) = &tool.output_schema {
        definition = definition.output_schema(as_2020_12(Value::Object((**output).clone())));
    }
    if let Some(annotations) = &tool.annotations {
        // Hints, never grants: `readOnlyHint` would make the tool visible in read-only runs.
        if annotations.destructive_hint == Some(true) && !policy.read_only {
            definition = definition.destructive();
        }
        if annotations.idempotent_hint == Some(true) {
            definition = definition.idempotent();
        }
        if annotations.open_world_hint == Some(true) {
            definition = definition.open_world();
        }
    }
    if let Some(reason) = &policy.allow_description {
        definition = definition.allow_description(reason.as_str());
    }
    with_policy(definition, policy)
}

/// The draft-07 dialect, which many servers still declare (zod-to-json-schema writes it).
const DRAFT_07: &str = "http://json-schema.org/draft-07/schema";

/// `schema` in MCP's dialect, JSON Schema 2020-12: a root `$schema` naming draft-07 is
/// dropped when nothing in the schema reads differently in 2020-12 (an array `items`,
/// `additionalItems`, `dependencies`); otherwise it stays, and the registry refuses the tool,
/// naming the dialect.
fn as_2020_12(mut schema: Value) -> Value {
    fn differs(value: &Value) -> bool {
        match value {
            Value::Object(object) => object.iter().any(|(key, value)| {
                matches!(key.as_str(), "additionalItems" | "dependencies")
                    || (key == "items" && value.is_array())
                    || differs(value)
            }),
            Value::Array(items) => items.iter().any(differs),
            _ => false,
        }
    }
    let draft_07 = schema
        .get("$schema")
        .and_then(Value::as_str)
        .is_some_and(|dialect| dialect.trim_end_matches('#') == DRAFT_07);
    if draft_07
        && !differs(&schema)
        && let Value::Object(object) = &mut schema
    {
        object.remove("$schema");
    }
    schema
}

/// What the registry holds in place of a tool it would refuse: nothing of the upstream's
/// texts, the same policy, never callable.
fn placeholder(name: &str, policy: &ToolPolicy) -> DynamicTool {
    with_policy(
        DynamicTool::new(
            name,
            "Withheld: this upstream tool's definition was refused; see the server's explanation.",
        ),
        policy,
    )
}

fn with_policy(mut tool: DynamicTool, policy: &ToolPolicy) -> DynamicTool {
    if policy.public {
        tool = tool.public();
    }
    tool = tool
        .scopes(policy.scopes.iter().cloned())
        .tenants(policy.tenants.iter().cloned())
        .needs_approval(policy.needs_approval)
        .timeout(policy.timeout);
    if policy.read_only {
        tool = tool.read_only();
    }
    if let Some(limit) = &policy.rate_limit {
        tool = tool.rate_limit(limit.as_str());
    }
    tool
}

/// Pins `offer` as the registry's tool `name` of `upstream`.
fn pin(lock: &mut UpstreamLock, upstream: &str, name: &str, tool: &str, offer: &Offer) {
    let pinned = Pin {
        upstream: upstream.to_owned(),
        tool: tool.to_owned(),
        definition: offer.definition.clone(),
        annotations: offer.annotations.clone(),
    };
    if let Err(error) = lock.set(name.to_owned(), pinned) {
        tracing::error!(%error, "cannot pin an upstream tool");
    }
}

/// Why `offer` is withheld by its pin, if it is.
fn compare(lock: &UpstreamLock, name: &str, offer: &Offer) -> Option<Withheld> {
    match lock.pin(name) {
        None => Some(Withheld::New {
            now: offer.definition.clone(),
        }),
        Some(pin) if pin.definition != offer.definition => Some(Withheld::Changed {
            pinned: pin.definition.clone(),
            now: offer.definition.clone(),
        }),
        Some(pin) if pin.annotations != offer.annotations => Some(Withheld::Changed {
            pinned: format!("annotations {}", pin.annotations),
            now: format!("annotations {}", offer.annotations),
        }),
        Some(_) => None,
    }
}

/// Why `offer` is withheld by the lint or the registry's checks, if it is.
fn refused(offer: &Offer) -> Option<Withheld> {
    (!offer.refused.is_empty()).then(|| Withheld::Refused(offer.refused.clone()))
}

/// `sha256:` and the hex digest of `value`'s JSON with its keys sorted.
fn digest(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(object) => {
                let sorted: BTreeMap<&String, Value> =
                    object.iter().map(|(k, v)| (k, sorted(v))).collect();
                Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let text = serde_json::to_string(&sorted(value)).unwrap_or_default();
    let hash = Sha256::digest(text.as_bytes());
    let mut out = String::from("sha256:");
    for byte in hash {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::as_2020_12;

    #[test]
    fn a_draft_07_schema_is_taken_as_2020_12_only_when_it_reads_the_same() {
        let same = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": {"a": {"type": "array", "items": {"type": "string"}}}});
        assert_eq!(as_2020_12(same)["$schema"], serde_json::Value::Null);
        let tuple = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}});
        assert_eq!(
            as_2020_12(tuple)["$schema"],
            "http://json-schema.org/draft-07/schema#"
        );
        let other = json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"});
        assert_eq!(
            as_2020_12(other)["$schema"],
            "http://json-schema.org/draft-04/schema#"
        );
    }
}
