//! Discovery: projecting the registry onto one subject, fast.
//!
//! A [`Snapshot`] is the registry's current versions with, for each tool, its requirements
//! compiled to small integers: scopes and tenants are interned once, so that projecting
//! 10,000 tools costs one bit test per required scope rather than string comparisons.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::discover::access::{AccessRule, hidden_by};
use crate::discover::embed::{Embedder, Vectors};
use crate::discover::index::SearchIndex;
use crate::discover::subject::{Access, Subject};
use crate::gate::ReadyState;
use crate::register::tool::Tool;

/// The per-tool state that changes after build: which versions are revoked.
#[derive(Debug, Default)]
pub(crate) struct SlotState {
    /// Every version up to this one is revoked (versions start at 1; 0: none is).
    pub(crate) revoked_through: AtomicU64,
    /// Whether the tool passed its readiness check, the last time it ran.
    pub(crate) ready: ReadyState,
}

impl SlotState {
    pub(crate) fn is_revoked(&self, version: u64) -> bool {
        version <= self.revoked_through.load(Ordering::Acquire)
    }
}

/// The current version of every tool, in name order, with requirements compiled.
#[derive(Debug)]
pub(crate) struct Snapshot {
    pub(crate) tools: Vec<Tool>,
    pub(crate) versions: Vec<u64>,
    requirements: Vec<Requirement>,
    ids: Vec<usize>,
    scope_ids: HashMap<String, usize>,
    tenant_ids: HashMap<String, usize>,
    /// The search index of `tools`, built the first time a run of this snapshot searches.
    index: OnceLock<SearchIndex>,
    /// The tools' vectors, computed the first time a run of this snapshot searches with an
    /// embedder; `None` if the embedder failed (then this snapshot's searches are lexical).
    vectors: OnceLock<Option<Vectors>>,
}

/// What one tool requires, as ranges into `Snapshot::ids`. Counts are `usize`: a tool from
/// configuration may list any number of tenants, and no count can wrap around (a tenant list
/// that wrapped to empty would admit every tenant).
#[derive(Debug, Clone, Copy)]
struct Requirement {
    start: usize,
    scopes: usize,
    tenants: usize,
    read_only: bool,
}

/// One tool a run may see and call: the version it was shown.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) slot: usize,
    pub(crate) version: u64,
    pub(crate) tool: Tool,
}

impl Snapshot {
    pub(crate) fn new(tools: Vec<Tool>, versions: Vec<u64>) -> Snapshot {
        let mut snapshot = Snapshot {
            requirements: Vec::with_capacity(tools.len()),
            ids: Vec::new(),
            scope_ids: HashMap::new(),
            tenant_ids: HashMap::new(),
            tools: Vec::new(),
            versions,
            index: OnceLock::new(),
            vectors: OnceLock::new(),
        };
        for tool in &tools {
            let start = snapshot.ids.len();
            let settings = tool.settings();
            for scope in &settings.scopes {
                let next = snapshot.scope_ids.len();
                let id = *snapshot
                    .scope_ids
                    .entry(scope.as_str().to_owned())
                    .or_insert(next);
                snapshot.ids.push(id);
            }
            for tenant in &settings.tenants {
                let next = snapshot.tenant_ids.len();
                let id = *snapshot.tenant_ids.entry(tenant.clone()).or_insert(next);
                snapshot.ids.push(id);
            }
            snapshot.requirements.push(Requirement {
                start,
                scopes: settings.scopes.len(),
                tenants: settings.tenants.len(),
                read_only: settings.hints.read_only,
            });
        }
        snapshot.tools = tools;
        snapshot
    }

    /// The search index of this snapshot's tools: built once, the first time it is asked for
    /// (by any run of the snapshot), then shared.
    pub(crate) fn index(&self) -> &SearchIndex {
        self.index.get_or_init(|| SearchIndex::build(&self.tools))
    }

    /// The vectors of this snapshot's tools by `embedder`: computed once, the first time they
    /// are asked for, then shared; `None` if the embedder failed (logged once).
    pub(crate) fn vectors(&self, embedder: &dyn Embedder) -> Option<&Vectors> {
        self.vectors
            .get_or_init(|| match Vectors::build(&self.tools, embedder) {
                Ok(vectors) => Some(vectors),
                Err(error) => {
                    tracing::warn!(
                        error = ?error.message(),
                        tools = self.tools.len(),
                        "the embedder could not embed this snapshot's tools: its searches are lexical"
                    );
                    None
                }
            })
            .as_ref()
    }

    /// This snapshot with slot `slot` holding `tool` at `version`.
    pub(crate) fn with_replaced(&self, slot: usize, tool: Tool, version: u64) -> Snapshot {
        let mut tools = self.tools.clone();
        let mut versions = self.versions.clone();
        tools[slot] = tool;
        versions[slot] = version;
        Snapshot::new(tools, versions)
    }

    /// Every tool `subject` may see, in name order.
    pub(crate) fn project(
        &self,
        subject: &Subject,
        slots: &[SlotState],
        rules: &[Box<dyn AccessRule>],
    ) -> Vec<Entry> {
        let grants = self.grants(subject);
        let tenant = self.tenant_ids.get(subject.tenant()).copied();
        let read_only_run = subject.access() == Access::ReadOnly;
        let mut entries = Vec::new();
        for (index, requirement) in self.requirements.iter().enumerate() {
            if read_only_run && !requirement.read_only {
                continue;
            }
            let ids = &self.ids[requirement.start..];
            let (scopes, rest) = ids.split_at(requirement.scopes);
            if !scopes
                .iter()
                .all(|&id| grants[id / 64] & (1 << (id % 64)) != 0)
            {
                continue;
            }
            let tenants = &rest[..requirement.tenants];
            if !tenants.is_empty() && !tenant.is_some_and(|t| tenants.contains(&t)) {
                continue;
            }
            let version = self.versions[index];
            if slots[index].is_revoked(version) || !slots[index].ready.is_ready() {
                continue;
            }
            let tool = &self.tools[index];
            if hidden_by(rules, subject, tool).is_some() {
                continue;
            }
            entries.push(Entry {
                slot: index,
                version,
                tool: tool.clone(),
            });
        }
        entries
    }

    /// The subject's scopes as a bit set over the interned scope ids.
    fn grants(&self, subject: &Subject) -> Vec<u64> {
        let mut grants = vec![0u64; self.scope_ids.len().div_ceil(64).max(1)];
        for scope in subject.scopes() {
            if let Some(&id) = self.scope_ids.get(scope) {
                grants[id / 64] |= 1 << (id % 64);
            }
        }
        grants
    }
}
