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
//!   refuses is left out (and logged). A name already taken (by the deferred search tool's
//!   `search_tools`, by a tool of an upstream earlier in the file, or by a tool of the
//!   application already in the builder given to [`Federation::register`]) is refused,
//!   logged and audited: the tool that had it is untouched, and the build never fails for a
//!   name an upstream chose.
//! - **Places.** A built registry's set of names is fixed, so the federation gives a place
//!   at start to every tool it can name: each tool the upstream lists, each tool its pins
//!   name, and each tool the file has a `[upstream.tools.NAME]` table for. A place holds a
//!   placeholder (never callable, none of the upstream's texts) until its definition has
//!   been seen, linted and compared with its pin; then it is installed with
//!   [`Registry::replace`] (recorded in [`Registry::changes`]) and served without a restart.
//!   A tool without a place (a name nobody gave at start) is withheld and, once accepted,
//!   served from the next start.
//! - **Settings.** Each tool's scopes, tenants, `needs_approval`, rate limit and timeout are the
//!   file's ([`UpstreamsConfig`]): per tool, else per upstream. A tool without scopes needs
//!   the upstream's default scope `upstream:{name}`; only `public = true` makes one
//!   unrestricted. Upstream annotations are hints shown to clients and never grant anything:
//!   `readOnlyHint` is dropped (a read-only tool is visible in read-only runs, so only the
//!   file's `read_only = true` says so); `destructiveHint`, `idempotentHint` and
//!   `openWorldHint` are passed on.
//! - **Calls** are resolved, validated against the schema that was shown, gated and then
//!   forwarded with rmcp's client; progress comes back (at most one every 100 ms a call, the
//!   others coalesced; its message cut, escaped and linted), cancellation and deadlines go forward
//!   (`notifications/cancelled`); the blocks of the answer come back as they were. An
//!   upstream that is unreachable, closes, or answers with a JSON-RPC error is `Unavailable`,
//!   with a text of ours (the upstream's text, cut and escaped, goes to the log only); its
//!   tool's own `isError` is `ExecutionFailed`, its text cut and escaped.
//! - **Bounds.** A listing is refused past [`MAX_LIST_PAGES`] pages,
//!   [`MAX_TOOLS_PER_UPSTREAM`] tools or [`MAX_LISTING_BYTES`] bytes; a tool larger than
//!   [`MAX_TOOL_BYTES`] is left out; `list_changed` makes a listing at most once every
//!   [`MIN_REFRESH_INTERVAL`].
//! - **Health.** Each upstream tool has a readiness check: an upstream that cannot be reached
//!   (at start or later) has its tools hidden from new runs and its calls `Unavailable` in
//!   open ones, and is tried again with a growing pause (0.5 s, doubled up to 30 s). An
//!   upstream unreachable at start does not fail the start; what it offers once reached is
//!   linted and compared with its pins before anything of it is served.
//! - **Pinning** ([`UpstreamLock`]), by upstream and the upstream's name of the tool. The
//!   first time an upstream is listed while the lock does not name it, its definitions are
//!   written to the lock with its `[upstream]` block (trust on first use, logged and
//!   audited). An upstream the lock names is never trusted anew, even with no pin left, nor
//!   is one met before that a lock read again no longer names. From then on a
//!   definition that differs from its pin, at start or after the upstream's
//!   `notifications/tools/list_changed`, is withheld: not listed and not callable in any run,
//!   [`Run::explain`] saying why with both digests, audited as a readiness event, until
//!   [`Federation::accept`] (or `mcp_server --accept-upstream NAME`, or the lock file read
//!   again with [`Federation::reload_lock`]). A tool new upstream is withheld the same way;
//!   one removed upstream is revoked. A change of the annotations alone is a new version:
//!   withheld the same way and, once accepted, installed (its `destructive` hint with it).
//! - **Lint.** Every text of an upstream tool (description, title, parameter descriptions, the
//!   strings of its schemas) passes `registry-lint`; a tool that fails is withheld, its rules
//!   named, and its texts never reach a model: the registry holds a placeholder in its place.
//!   So is a tool the registry's other checks refuse (a schema that does not compile, beyond
//!   the resource bounds, ...), and a new definition whose [`Registry::replace`] is refused (a
//!   policy set that would lose an argument it reads): its problems are logged and shown
//!   as why it is withheld, and the registry keeps the version it had. A schema declaring draft-07 (`$schema`) is taken as 2020-12,
//!   MCP's dialect, when nothing in it reads differently there.
//!   The file's `allow_description = "reason"` exempts one tool, but never from the secret
//!   rules.
//!
//! [`Run::explain`]: registry_core::Run::explain

mod child;
mod client;
mod config;
mod lock;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use registry_core::call::ToolError;
use registry_core::change::ReplaceOptions;
use registry_core::deferred::SEARCH_TOOL_NAME;
use registry_core::server::RegistryExt as _;
use registry_core::{BuildProblem, DynamicTool, Registry, RegistryBuilder};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

pub use client::{MAX_LIST_PAGES, MAX_LISTING_BYTES, MAX_TOOL_BYTES, MAX_TOOLS_PER_UPSTREAM};
pub(crate) use config::UPSTREAM_SCOPE_PREFIX;
pub use config::{BASE_ENV, MAX_ENV_VARIABLES};
pub use config::{
    ConfigError, DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, MAX_UPSTREAMS, SettingsOverride,
    ToolSettings, Transport, UpstreamConfig, UpstreamsConfig,
};
#[allow(deprecated)]
pub use config::{PolicyOverride, ToolPolicy};
pub use lock::{LockError, MAX_PINS, Pin, UpstreamLock};

use client::{Events, Link};

/// The first pause before connecting again to an upstream that cannot be reached.
const FIRST_RECONNECT_PAUSE: Duration = Duration::from_millis(500);

/// The longest pause between two attempts to reconnect a lost upstream.
const MAX_RECONNECT_PAUSE: Duration = Duration::from_secs(30);

/// How often the upstreams' connections are looked at.
const HEALTH_INTERVAL: Duration = Duration::from_millis(250);

/// The least time between two listings of one upstream after its
/// `notifications/tools/list_changed`: the notifications in between are taken as one.
pub const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(1);

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
    /// Why the last attempt to connect failed, while it is not connected.
    last_error: Mutex<Option<String>>,
    /// Whether what it lists next is pinned as it is: it was named in `accept` at start, or
    /// no pin named it when it was met (trust on first use), and it has not been listed yet.
    trust_next: AtomicBool,
    /// The upstream's tools by the registry's name.
    tools: Mutex<BTreeMap<String, Entry>>,
    /// The registry names this upstream may not have, and who has each (a tool of the
    /// application, an upstream earlier in the file, the deferred search tool): its tools of
    /// these names are refused and logged, never given a place.
    taken: Mutex<BTreeMap<String, String>>,
}

/// One upstream tool, as the federation knows it.
struct Entry {
    /// The upstream's name of it.
    upstream_tool: String,
    /// What the upstream offers now; `None` while it does not list it (or was not listed yet).
    current: Option<Offer>,
    /// Whether it has a place in the registry (tools named at start do).
    registered: bool,
    /// Why it is withheld from every run, if it is.
    withheld: Option<Withheld>,
    /// The digests of the definition and of the annotations the registry holds in its
    /// place; `None` while it holds a placeholder.
    installed: Option<(String, String)>,
}

impl Entry {
    /// A place for a tool named at start (by a pin or the file) that is not offered yet.
    fn reserved(upstream_tool: &str) -> Entry {
        Entry {
            upstream_tool: upstream_tool.to_owned(),
            current: None,
            registered: true,
            withheld: Some(Withheld::Unseen),
            installed: None,
        }
    }

    /// What the upstream offers, if the tool may be served.
    fn served(&self) -> Option<&Offer> {
        self.current.as_ref().filter(|_| self.withheld.is_none())
    }

    /// Whether the registry holds `offer` in its place: its definition and its annotations
    /// (an annotation-only change, once accepted, is installed too).
    fn holds(&self, offer: &Offer) -> bool {
        self.installed
            .as_ref()
            .is_some_and(|(definition, annotations)| {
                *definition == offer.definition && *annotations == offer.annotations
            })
    }
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
    /// A tool named at start (by its pin or the upstreams file) that its upstream has not
    /// offered since: its definition was never seen, so it cannot be served.
    Unseen,
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
            Withheld::Unseen => f.write_str(
                "withheld: its upstream has not offered it yet; it is served once offered, linted and matching its pin",
            ),
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
    /// Whether the registry has a place for it (a tool new at run time whose name was not
    /// given at start is served from the next start).
    pub registered: bool,
    /// Why it is withheld; `None` when it may be served.
    pub withheld: Option<Withheld>,
    /// The digest of the definition its upstream offers now, if it offers one: what an
    /// acceptance is bound to ([`Federation::accept_offer`]).
    pub definition: Option<String>,
    /// The digest of the annotations its upstream offers now.
    pub annotations: Option<String>,
    /// What its upstream offers now, as the upstream listed it (the tool's JSON): what an
    /// operator reviews before accepting [`definition`](Self::definition). Untrusted text:
    /// escape it before printing.
    pub offered: Option<String>,
}

/// The state of one upstream's connection, for operators.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamStatus {
    /// The upstream.
    pub name: String,
    /// Whether it is connected now.
    pub connected: bool,
    /// Why the last attempt to connect failed, while it is not connected.
    pub last_error: Option<String>,
}

/// Why an acceptance or a change of pins failed.
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
    /// An upstream's configuration cannot work in this process (its `token_env` is not
    /// set): the start fails, naming it, rather than trying it again for ever.
    #[error("upstream {upstream:?}: {reason}")]
    Misconfigured {
        /// The upstream.
        upstream: String,
        /// What is wrong, and how to fix it.
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

/// Connects to `config`'s upstream and lists its tools.
async fn reach(
    config: &UpstreamConfig,
    events: Events,
) -> Result<(Link, Vec<rmcp::model::Tool>), String> {
    let link = Link::connect(config, events).await?;
    let tools = link.list(&config.name, config.connect_timeout).await?;
    Ok((link, tools))
}

impl Federation {
    /// Connects to every upstream of `config` (all at once, each within its connect
    /// timeout), lists its tools and compares them with `lock`: an upstream the lock does not
    /// know (met for the first time: logged and audited), or one named in `accept`, has its
    /// current definitions pinned and the lock file written. A tool whose registry name is
    /// `search_tools` or a tool of an upstream earlier in `config` is refused and logged. An upstream that cannot be reached does not fail the start: it is logged and
    /// audited, its tools (those its pins or the file name) are not ready, and it is tried
    /// again once [`attach`](Self::attach)ed. The start fails only for a name in `accept`
    /// that is not an upstream, a `token_env` that is not set, or a lock file that cannot be
    /// written.
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
        for upstream in &config.upstreams {
            if let Transport::Http {
                token_env: Some(variable),
                ..
            } = &upstream.transport
                && std::env::var_os(variable).is_none()
            {
                return Err(FederationError::Misconfigured {
                    upstream: upstream.name.clone(),
                    reason: format!(
                        "the environment variable {variable} (its token_env) is not set; set it to the upstream's bearer token"
                    ),
                });
            }
        }
        let connecting = config.upstreams.into_iter().map(|config| async move {
            let events = Events::default();
            let reached = reach(&config, events.clone()).await;
            (config, events, reached)
        });
        let connected = futures_join(connecting).await;
        let mut lock = lock;
        let mut upstreams = Vec::new();
        // The registry names given so far, and to whom: an upstream's tool of one of these
        // names is refused (the first upstream in the file keeps a name).
        let mut claimed = BTreeMap::from([(
            SEARCH_TOOL_NAME.to_owned(),
            "the deferred search tool".to_owned(),
        )]);
        for (config, events, reached) in connected {
            let trust = accept.contains(&config.name) || !lock.knows(&config.name);
            if trust && !accept.contains(&config.name) {
                tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&config.name), lock_file_missing = lock.is_missing(), "upstream met for the first time (the lock file does not name it): what it lists first is pinned as it is (trust on first use); review the lock file");
            }
            let mut tools = BTreeMap::new();
            // A place for every tool that can be named now: its pins, the file's tables.
            let pinned: Vec<String> = lock
                .pins()
                .filter(|pin| pin.upstream == config.name)
                .map(|pin| pin.tool.clone())
                .collect();
            for tool in pinned {
                let name = config.tool_name(&tool);
                if registry_core::definition::check_tool_name(&name).is_ok() {
                    tools.insert(name, Entry::reserved(&tool));
                }
            }
            for tool in config.tools.keys() {
                let name = config.tool_name(tool);
                if let Err(error) = registry_core::definition::check_tool_name(&name) {
                    tracing::warn!(upstream = %crate::logging::escape(&config.name), tool = %crate::logging::escape(tool), %error, "a tool of the upstreams file whose name the registry refuses is left out");
                    continue;
                }
                tools.entry(name).or_insert_with(|| Entry::reserved(tool));
            }
            let upstream = Upstream {
                config,
                events,
                link: RwLock::new(None),
                last_error: Mutex::new(None),
                trust_next: AtomicBool::new(trust),
                tools: Mutex::new(BTreeMap::new()),
                taken: Mutex::new(claimed.clone()),
            };
            upstream.refuse_taken(&mut tools);
            match reached {
                Ok((link, listed)) => {
                    upstream.take_listing(&mut lock, &mut tools, &listed, true);
                    *upstream
                        .link
                        .write()
                        .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(link));
                }
                Err(reason) => {
                    tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&upstream.config.name), reason = %crate::logging::escape(&reason), "upstream unreachable at start; its tools are not ready, and it is tried again");
                    *upstream
                        .last_error
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(reason);
                }
            }
            for (name, entry) in &tools {
                if let Some(withheld) = &entry.withheld {
                    tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&upstream.config.name), tool = %crate::logging::escape(name), reason = %crate::logging::escape(&withheld.to_string()), "upstream tool withheld");
                }
            }
            for name in tools.keys() {
                claimed.insert(
                    name.clone(),
                    format!("a tool of the upstream {:?}", upstream.config.name),
                );
            }
            *upstream
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = tools;
            upstreams.push(Arc::new(upstream));
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

    /// Adds a place for every upstream tool to `builder`: the upstream's definition for a
    /// tool that may be served, a placeholder for the others; each with the readiness check
    /// that withholds it (pin, lint, not seen yet) or hides it while its upstream is down.
    ///
    /// Call it once the application's own tools are in `builder`: an upstream tool whose
    /// registry name one of them has is refused and logged, and the application's tool kept
    /// (as an upstream's tool whose name an upstream earlier in the file has, or the deferred
    /// search tool's `search_tools`, is at [`connect`](Self::connect)), so the build never
    /// fails for a name an upstream chose.
    pub fn register(&self, mut builder: RegistryBuilder) -> RegistryBuilder {
        for upstream in &self.inner.upstreams {
            let mut tools = upstream
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            {
                let mut taken = upstream
                    .taken
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                for name in tools.keys().filter(|name| builder.has_tool(name)) {
                    taken.insert(name.clone(), "a tool of the application".to_owned());
                }
            }
            upstream.refuse_taken(&mut tools);
            for (name, entry) in tools.iter_mut().filter(|(_, entry)| entry.registered) {
                let (tool, installed) = self.tool(upstream, name, entry);
                entry.installed = installed;
                builder = builder.tool(tool);
                let (federation, upstream, name) = (self.clone(), upstream.clone(), name.clone());
                builder =
                    builder.readiness(name.clone(), move || federation.readiness(&upstream, &name));
            }
        }
        builder
    }

    /// Follows the upstreams from now on, with `registry` (built from
    /// [`register`](Self::register)): a `notifications/tools/list_changed` makes the tools
    /// listed again and compared with their pins; an upstream not connected (lost, or
    /// unreachable since the start) is tried again with a growing pause. Needs a Tokio
    /// runtime; a second call does nothing.
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
    /// file, and serves the tools withheld for a change or as new (not those the lint
    /// refuses), each installed in its place with [`Registry::replace`] (recorded in
    /// [`Registry::changes`]) without a restart. Tools it no longer lists lose their pins; a
    /// tool new since the start without a place is pinned and served from the next start.
    /// Returns the names accepted.
    ///
    /// An upstream that is not connected now has nothing to accept:
    /// [`FederationError::Unreachable`], and nothing changes.
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
        if up.live().is_none() || up.trust_next.load(Ordering::Acquire) {
            return Err(FederationError::Unreachable {
                upstream: upstream.to_owned(),
                reason: "not connected: there is nothing to accept until it is listed".to_owned(),
            });
        }
        let accepted = self.pin_offers(up, None)?;
        if let Some(registry) = self.inner.registry.get() {
            self.install(registry, up).await;
        }
        Ok(accepted)
    }

    /// Accepts one offer: the tool `tool` (the registry's name) of `upstream` is pinned and
    /// served in its place, without a restart, only if what its upstream offers now has
    /// exactly these digests (those [`ToolState`] showed an operator; an acceptance recorded
    /// in a control plane carries them). Returns whether it was accepted: `false` when the
    /// offer differs now, or the tool is not withheld for a change or as new.
    pub async fn accept_offer(
        &self,
        upstream: &str,
        tool: &str,
        definition: &str,
        annotations: &str,
    ) -> Result<bool, FederationError> {
        let Some(up) = self
            .inner
            .upstreams
            .iter()
            .find(|u| u.config.name == upstream)
        else {
            return Err(FederationError::UnknownUpstream(upstream.to_owned()));
        };
        let _changing = self.inner.changing.lock().await;
        let accepted = self.pin_offers(up, Some((tool, definition, annotations)))?;
        if accepted.is_empty() {
            return Ok(false);
        }
        if let Some(registry) = self.inner.registry.get() {
            self.install(registry, up).await;
        }
        Ok(true)
    }

    /// Pins what `up` offers now: of every tool (`only` is `None`; the pins of tools it no
    /// longer lists are dropped too), or of the one tool `only` names (its registry name,
    /// definition and annotations digests), if it is withheld for a change or as new and
    /// offers exactly that. Clears their withholding for a change or as new, writes the lock,
    /// and returns the names pinned. The caller holds `changing`.
    fn pin_offers(
        &self,
        up: &Upstream,
        only: Option<(&str, &str, &str)>,
    ) -> Result<Vec<String>, FederationError> {
        let mut accepted = Vec::new();
        let mut lock = self.lock();
        let mut tools = up.tools.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, entry) in tools.iter_mut() {
            let pending = matches!(
                entry.withheld,
                Some(Withheld::New { .. } | Withheld::Changed { .. })
            );
            let Some(offer) = &entry.current else {
                if only.is_none() {
                    lock.remove(&up.config.name, &entry.upstream_tool);
                }
                continue;
            };
            if let Some((tool, definition, annotations)) = only
                && !(pending
                    && name == tool
                    && offer.definition == definition
                    && offer.annotations == annotations)
            {
                continue;
            }
            pin(&mut lock, &up.config.name, &entry.upstream_tool, offer);
            if pending {
                entry.withheld = None;
                tracing::info!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&up.config.name), tool = %crate::logging::escape(name), definition = %offer.definition, annotations = %offer.annotations, "upstream tool accepted");
            }
            entry.withheld = entry.withheld.take().or_else(|| refused(offer));
            accepted.push(name.clone());
        }
        lock.save()?;
        Ok(accepted)
    }

    /// Takes `lock` (read again from its file, say after an operator edited it) as the pins
    /// from now on, and compares every upstream tool with them again: a tool that now matches
    /// its pin is served, installed in its place without a restart; one that no longer does
    /// is withheld. An upstream the new lock does not name at all is trusted anew, as at
    /// start (what it offers now is pinned), only if this process never met it either: one
    /// met before (named by the lock it held) keeps being met, its tools without a pin
    /// withheld as new, and this is logged and audited. `mcp_server` calls it on `SIGHUP`.
    pub async fn reload_lock(&self, lock: UpstreamLock) -> Result<(), FederationError> {
        let _changing = self.inner.changing.lock().await;
        {
            let mut held = self.lock();
            let met: Vec<bool> = self
                .inner
                .upstreams
                .iter()
                .map(|upstream| held.knows(&upstream.config.name))
                .collect();
            *held = lock;
            let lock = &mut *held;
            for (upstream, met) in self.inner.upstreams.iter().zip(met) {
                if met && !lock.knows(&upstream.config.name) {
                    tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&upstream.config.name), "the lock read again does not name this upstream, met before: it is not trusted anew; its tools without a pin are withheld until accepted");
                    lock.meet(&upstream.config.name);
                }
                let trust = !lock.knows(&upstream.config.name);
                if trust && upstream.live().is_none() {
                    // Not listed now: what it lists once reached is trusted.
                    upstream.trust_next.store(true, Ordering::Release);
                }
                let mut tools = upstream
                    .tools
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                for (name, entry) in tools.iter_mut() {
                    let Some(offer) = &entry.current else {
                        continue;
                    };
                    if trust {
                        pin(lock, &upstream.config.name, &entry.upstream_tool, offer);
                    }
                    let withheld = refused(offer).or_else(|| {
                        compare(lock, &upstream.config.name, &entry.upstream_tool, offer)
                    });
                    if withheld != entry.withheld {
                        tracing::info!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&upstream.config.name), tool = %crate::logging::escape(name), withheld = %withheld.as_ref().map(ToString::to_string).unwrap_or_else(|| "no: it matches its pin".into()), "upstream tool compared with the lock read again");
                    }
                    entry.withheld = withheld;
                }
            }
            lock.save()?;
        }
        if let Some(registry) = self.inner.registry.get() {
            for upstream in &self.inner.upstreams {
                self.install(registry, upstream).await;
            }
        }
        Ok(())
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
                    definition: entry.current.as_ref().map(|offer| offer.definition.clone()),
                    annotations: entry
                        .current
                        .as_ref()
                        .map(|offer| offer.annotations.clone()),
                    offered: entry
                        .current
                        .as_ref()
                        .and_then(|offer| serde_json::to_string(&offer.tool).ok()),
                });
            }
        }
        states
    }

    /// Every upstream's connection, in the file's order.
    pub fn upstreams(&self) -> Vec<UpstreamStatus> {
        self.inner
            .upstreams
            .iter()
            .map(|upstream| {
                let connected = upstream.live().is_some();
                UpstreamStatus {
                    name: upstream.config.name.clone(),
                    connected,
                    last_error: if connected {
                        None
                    } else {
                        upstream.last_error()
                    },
                }
            })
            .collect()
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

    /// The readiness of the registry's tool `name` of `upstream`: ready only when its
    /// upstream is connected, it is not withheld, and the registry holds what it offers.
    fn readiness(&self, upstream: &Upstream, name: &str) -> Result<(), String> {
        if upstream.live().is_none() {
            return Err(match upstream.last_error() {
                // The reason may hold the upstream's text: cut and escaped.
                Some(reason) => format!(
                    "the upstream server {:?} is not connected ({}); it is tried again",
                    upstream.config.name,
                    client::bounded(&reason, 256)
                ),
                None => format!(
                    "the upstream server {:?} is not connected",
                    upstream.config.name
                ),
            });
        }
        let tools = upstream
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(entry) = tools.get(name) else {
            return Err("not an upstream tool".to_owned());
        };
        if let Some(withheld) = &entry.withheld {
            return Err(withheld.to_string());
        }
        match entry.served() {
            Some(offer) if entry.holds(offer) => Ok(()),
            Some(_) => Err("withheld: its accepted definition is being installed".to_owned()),
            None => Err(Withheld::Unseen.to_string()),
        }
    }

    /// The registry tool for `entry` and the digest of the definition it holds: the
    /// upstream's definition, forwarding its calls, when it may be served; otherwise a
    /// placeholder that is never callable (`None`).
    fn tool(
        &self,
        upstream: &Arc<Upstream>,
        name: &str,
        entry: &Entry,
    ) -> (DynamicTool, Option<(String, String)>) {
        let settings = upstream.config.settings_of(&entry.upstream_tool);
        let Some(offer) = entry.served() else {
            let tool = placeholder(name, &settings).async_result_handler(|_, _| async {
                Err::<Value, _>(ToolError::unavailable("this upstream tool is withheld"))
            });
            return (tool, None);
        };
        let tool = definition_of(name, &offer.tool, &settings);
        let structured = offer.tool.output_schema.is_some();
        let (upstream, tool_name, digest) = (
            upstream.clone(),
            entry.upstream_tool.clone(),
            offer.definition.clone(),
        );
        let name = name.to_owned();
        let installed = Some((digest.clone(), offer.annotations.clone()));
        let tool = tool.async_result_handler(move |ctx, arguments| {
            let (upstream, tool_name, digest, name) = (
                upstream.clone(),
                tool_name.clone(),
                digest.clone(),
                name.clone(),
            );
            async move {
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
        });
        (tool, installed)
    }

    /// Follows one upstream until the process ends: its list changes, its connection.
    async fn follow(self, upstream: Arc<Upstream>) {
        let mut pause = FIRST_RECONNECT_PAUSE;
        let mut was_live = upstream.live().is_some();
        let mut refreshed: Option<tokio::time::Instant> = None;
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
                        // Debounced: notifications that come while it waits are one (the
                        // `Notify` keeps a single permit).
                        if let Some(last) = refreshed {
                            tokio::time::sleep_until(last + MIN_REFRESH_INTERVAL).await;
                        }
                        refreshed = Some(tokio::time::Instant::now());
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
                    *upstream
                        .last_error
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = None;
                    pause = FIRST_RECONNECT_PAUSE;
                    tracing::info!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(&upstream.config.name), "upstream connected");
                    // Whatever it offers now is linted and compared with the pins before
                    // anything is served.
                    self.refresh(&upstream).await;
                }
                Err(reason) => {
                    tracing::debug!(upstream = %crate::logging::escape(&upstream.config.name), reason = %crate::logging::escape(&reason), "upstream still unreachable");
                    *upstream
                        .last_error
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(reason);
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

    /// Lists `upstream`'s tools again and applies what changed: a changed or new definition
    /// is withheld (unless it matches its pin), a removed tool revoked, a tool that may be
    /// served installed in its place.
    async fn refresh(&self, upstream: &Arc<Upstream>) {
        let Some(registry) = self.inner.registry.get() else {
            return;
        };
        let _changing = self.inner.changing.lock().await;
        let Some(link) = upstream.live() else {
            return;
        };
        let listed = match link
            .list(&upstream.config.name, upstream.config.connect_timeout)
            .await
        {
            Ok(listed) => listed,
            Err(reason) => {
                tracing::warn!(upstream = %crate::logging::escape(&upstream.config.name), reason = %crate::logging::escape(&reason), "cannot list the upstream's tools again");
                return;
            }
        };
        {
            let mut lock = self.lock();
            let mut tools = upstream
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            upstream.take_listing(&mut lock, &mut tools, &listed, false);
            if let Err(error) = lock.save() {
                tracing::error!(%error, "cannot write the upstreams lock file");
            }
        }
        self.install(registry, upstream).await;
    }

    /// Brings the registry in line with `upstream`'s tools, through its ordinary change
    /// path: what became withheld is hidden first; a tool no longer listed is revoked; a tool
    /// that may be served and whose place holds something else is installed with
    /// [`Registry::replace`] (runs shown the old one are revoked), one revoked and listed
    /// again as pinned is restored; then readiness is checked again. The caller holds
    /// `changing`.
    async fn install(&self, registry: &Registry, upstream: &Arc<Upstream>) {
        registry.check_readiness().await;
        let mut revoke = Vec::new();
        let mut restore = Vec::new();
        let mut replace = Vec::new();
        {
            let tools = upstream
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for (name, entry) in tools.iter().filter(|(_, entry)| entry.registered) {
                let revoked = registry.is_revoked_now(name) == Some(true);
                match entry.served() {
                    Some(offer) if !entry.holds(offer) => {
                        let (tool, installed) = self.tool(upstream, name, entry);
                        replace.push((name.clone(), tool, installed));
                    }
                    Some(_) if revoked => restore.push(name.clone()),
                    Some(_) => {}
                    None if entry.current.is_none() && entry.installed.is_some() && !revoked => {
                        revoke.push(name.clone());
                    }
                    None => {}
                }
            }
        }
        for name in revoke {
            if let Err(error) = registry.revoke(&name, "the upstream no longer lists this tool") {
                tracing::error!(%error, "cannot revoke a removed upstream tool");
            }
        }
        for name in restore {
            if let Err(error) = registry.restore(&name, "the upstream lists this tool again") {
                tracing::error!(%error, "cannot restore an upstream tool");
            }
        }
        for (name, tool, installed) in replace {
            let options = ReplaceOptions::revoke_old_runs(format!(
                "the upstream {:?} offers this definition, checked against its pin",
                upstream.config.name
            ));
            match registry.replace(tool, options) {
                Ok(_) => {
                    let mut tools = upstream
                        .tools
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    if let Some(entry) = tools.get_mut(&name) {
                        entry.installed = installed;
                    }
                }
                Err(error) => {
                    // Refused by the registry (a policy set that would lose an argument it
                    // reads, say): the old version stays, and the tool is withheld, saying why.
                    tracing::error!(
                        tool = %crate::logging::escape(&name),
                        error = %crate::logging::escape(&error.to_string()),
                        "cannot install an upstream tool; it stays withheld"
                    );
                    let mut tools = upstream
                        .tools
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    if let Some(entry) = tools.get_mut(&name) {
                        entry.withheld = Some(Withheld::Refused(
                            error.problems().iter().map(ToString::to_string).collect(),
                        ));
                    }
                }
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

    /// Takes out of `tools` every tool whose registry name is taken, logging each.
    fn refuse_taken(&self, tools: &mut BTreeMap<String, Entry>) {
        let taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        tools.retain(|name, _| match taken.get(name) {
            Some(by) => {
                refuse_taken(&self.config.name, name, by);
                false
            }
            None => true,
        });
    }

    fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Applies what the upstream lists now to its `tools`: each offer linted and compared
    /// with its pin (or pinned, when the upstream is trusted on this listing), what it no
    /// longer lists marked removed, what is new noted. Audited unless `at_start` (the start
    /// audits what it withholds once everything is known).
    fn take_listing(
        &self,
        lock: &mut UpstreamLock,
        tools: &mut BTreeMap<String, Entry>,
        listed: &[rmcp::model::Tool],
        at_start: bool,
    ) {
        let name_of = &self.config.name;
        let trust = self.trust_next.swap(false, Ordering::AcqRel);
        if trust {
            lock.meet(name_of);
        }
        let taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        let mut offers = BTreeMap::new();
        for tool in listed {
            let Some((name, offer)) = offer_of(&self.config, tool) else {
                continue;
            };
            if let Some(by) = taken.get(&name) {
                refuse_taken(name_of, &name, by);
                continue;
            }
            if offers.contains_key(&name) {
                tracing::warn!(upstream = %crate::logging::escape(name_of), tool = %crate::logging::escape(&name), "the upstream lists a tool twice; the first is kept");
                continue;
            }
            offers.insert(name, offer);
        }
        for (name, entry) in tools.iter_mut() {
            let now = offers.remove(name);
            let same = match (&entry.current, &now) {
                (Some(old), Some(new)) => {
                    old.definition == new.definition && old.annotations == new.annotations
                }
                // A pinned tool the upstream does not list at start is removed.
                (None, None) => !(at_start && lock.pin(name_of, &entry.upstream_tool).is_some()),
                _ => false,
            };
            if same {
                continue;
            }
            match now {
                Some(offer) => {
                    if trust {
                        pin(lock, name_of, &entry.upstream_tool, &offer);
                    }
                    let withheld = refused(&offer)
                        .or_else(|| compare(lock, name_of, &entry.upstream_tool, &offer));
                    if !at_start {
                        audit_change(name_of, name, entry, &offer, withheld.as_ref());
                    }
                    entry.withheld = withheld;
                    entry.current = Some(offer);
                }
                None => {
                    tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(name_of), tool = %crate::logging::escape(name), "the upstream no longer lists this tool; revoked");
                    entry.withheld = Some(Withheld::Removed);
                    entry.current = None;
                }
            }
        }
        if trust {
            for entry in tools.values().filter(|entry| entry.current.is_none()) {
                lock.remove(name_of, &entry.upstream_tool);
            }
        }
        for (name, offer) in offers {
            if trust {
                pin(lock, name_of, offer.tool.name.as_ref(), &offer);
            }
            let withheld = refused(&offer)
                .or_else(|| compare(lock, name_of, offer.tool.name.as_ref(), &offer));
            if !at_start {
                tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(name_of), tool = %crate::logging::escape(&name), definition = %offer.definition, withheld = %withheld.as_ref().map(ToString::to_string).unwrap_or_else(|| "no: it matches its pin".into()), "a tool new upstream, without a place in the registry: served from the next start once accepted");
            }
            tools.insert(
                name,
                Entry {
                    upstream_tool: offer.tool.name.to_string(),
                    current: Some(offer),
                    registered: at_start,
                    withheld,
                    installed: None,
                },
            );
        }
    }
}
/// Logs and audits an upstream tool refused because its registry name is `by`'s.
fn refuse_taken(upstream: &str, name: &str, by: &str) {
    tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(upstream), tool = %crate::logging::escape(name), taken_by = %by, "an upstream tool whose registry name is taken is refused; give the upstream another `prefix` to serve it");
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
    let settings = config.settings_of(&tool.name);
    let definition = definition_of(&name, tool, &settings);
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

/// The registry tool of an upstream's definition and the file's settings, without a handler.
fn definition_of(name: &str, tool: &rmcp::model::Tool, settings: &ToolSettings) -> DynamicTool {
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
        if annotations.destructive_hint == Some(true) && !settings.read_only {
            definition = definition.destructive();
        }
        if annotations.idempotent_hint == Some(true) {
            definition = definition.idempotent();
        }
        if annotations.open_world_hint == Some(true) {
            definition = definition.open_world();
        }
    }
    if let Some(reason) = &settings.allow_description {
        definition = definition.allow_description(reason.as_str());
    }
    with_settings(definition, settings)
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
/// texts, the same settings, never callable.
fn placeholder(name: &str, settings: &ToolSettings) -> DynamicTool {
    with_settings(
        DynamicTool::new(
            name,
            "Withheld: this upstream tool is not served (not offered yet, changed, or refused); see the server's explanation.",
        ),
        settings,
    )
}

fn with_settings(mut tool: DynamicTool, settings: &ToolSettings) -> DynamicTool {
    if settings.public {
        tool = tool.public();
    }
    tool = tool
        .scopes(settings.scopes.iter().cloned())
        .tenants(settings.tenants.iter().cloned())
        .timeout(settings.timeout);
    if settings.needs_approval {
        tool = tool.needs_approval();
    }
    if settings.read_only {
        tool = tool.read_only();
    }
    if let Some(limit) = &settings.rate_limit {
        tool = tool.rate_limit(limit.as_str());
    }
    tool
}

/// Pins `offer` as `upstream`'s tool `tool` (the upstream's name of it).
fn pin(lock: &mut UpstreamLock, upstream: &str, tool: &str, offer: &Offer) {
    let pinned = Pin {
        upstream: upstream.to_owned(),
        tool: tool.to_owned(),
        definition: offer.definition.clone(),
        annotations: offer.annotations.clone(),
    };
    if let Err(error) = lock.set(pinned) {
        tracing::error!(%error, "cannot pin an upstream tool");
    }
}

/// Why `offer` is withheld by its pin, if it is.
fn compare(lock: &UpstreamLock, upstream: &str, tool: &str, offer: &Offer) -> Option<Withheld> {
    match lock.pin(upstream, tool) {
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
