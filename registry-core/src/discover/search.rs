//! Search: the tools of a run's allowed set that best match a query, ranked by the index of
//! the run's registry snapshot (`index.rs`).

use crate::discover::allowed::AllowedSet;
use crate::discover::discovery::Snapshot;
use crate::discover::run::{Capability, Run};
use crate::register::registry::Registry;
use crate::register::tool::Tool;

/// One tool a search found: its name, its score and what a model may know of it.
///
/// Only tools of the run's allowed set are ever found, in the version the run was shown.
#[derive(Debug, Clone)]
pub struct SearchHit {
    tool: Tool,
    score: f64,
}

impl SearchHit {
    /// The tool's name.
    pub fn name(&self) -> &str {
        self.tool.name()
    }

    /// How well the tool matches the query: its BM25 score, higher is better. Comparable
    /// between the hits of one search, not across runs or queries.
    pub fn score(&self) -> f64 {
        self.score
    }

    /// The tool's definition and behaviour hints, as the run was shown them, and its version.
    pub fn capability(&self) -> Capability<'_> {
        Capability {
            definition: self.tool.definition_ref(),
            hints: self.tool.settings().hints,
            version: self.tool.version_fingerprint(),
        }
    }

    pub(crate) fn tool(&self) -> &Tool {
        &self.tool
    }
}

impl Run {
    /// The at most `k` tools of this run that best match `query`, best first: a lexical
    /// ranking (BM25) of each tool's name, title, description, and parameter names and
    /// descriptions, with names split on `_`, `-` and case changes, Unicode-aware, case-folded
    /// and stemmed (English); each word of the query also finds, at a lower weight, the words
    /// a small table of the software vocabulary relates to it (`remove` finds `delete`,
    /// `folder` finds `directory`). Ties are broken by name, so the order is the same every
    /// time.
    ///
    /// Only the run's allowed set is searched, and a tool its calls would refuse (revoked, or
    /// not ready) is not found. The ranking's statistics are those of the tools searched, so
    /// a hidden tool changes neither which tools are found nor their scores. The index is
    /// built once per registry snapshot, the first time any run of it searches, and shared;
    /// a search builds nothing for its run.
    ///
    /// A query is a few words: its first 1,024 bytes and 32 terms are read. A query with no
    /// term that any tool has finds nothing.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, Registry, Subject};
    ///
    /// /// Start a deployment of a project to an environment.
    /// #[tool(scopes = "deploy:write")]
    /// fn deploy_project(project: String, environment: String) -> String {
    ///     format!("deploying {project} to {environment}")
    /// }
    ///
    /// /// Read the build status of a project.
    /// #[tool(scopes = "build:read", read_only)]
    /// fn get_build_status(project: String) -> String {
    ///     format!("{project}: passed")
    /// }
    ///
    /// let registry = Registry::from_inventory().unwrap();
    /// let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["build:read"]));
    /// let hits = run.search("is the build of web green?", 5);
    /// assert_eq!(hits[0].name(), "get_build_status");
    /// assert!(hits[0].capability().hints.read_only);
    /// // `deploy_project` is not in this run's allowed set: no search finds it.
    /// assert!(run.search("deploy a project", 5).iter().all(|hit| hit.name() != "deploy_project"));
    /// ```
    #[must_use]
    pub fn search(&self, query: &str, k: usize) -> Vec<SearchHit> {
        search(self.origin(), self.snapshot(), self.allowed(), query, k)
    }
}

/// The at most `k` tools of `allowed` (projected from `snapshot`) that best match `query`,
/// leaving out those its calls would refuse before validation (revoked, not ready).
pub(crate) fn search(
    registry: &Registry,
    snapshot: &Snapshot,
    allowed: &AllowedSet,
    query: &str,
    k: usize,
) -> Vec<SearchHit> {
    if k == 0 || allowed.is_empty() {
        return Vec::new();
    }
    let entries = allowed.entries();
    // The entries are in name order, which is the snapshot's slot order.
    let candidates: Vec<usize> = entries
        .iter()
        .filter(|entry| {
            !registry.is_revoked(entry.slot, entry.version) && registry.is_ready(entry.slot)
        })
        .map(|entry| entry.slot)
        .collect();
    snapshot
        .index()
        .top(query, &candidates, k)
        .into_iter()
        .filter_map(|(slot, score)| {
            let at = entries
                .binary_search_by_key(&slot, |entry| entry.slot)
                .ok()?;
            Some(SearchHit {
                tool: entries[at].tool.clone(),
                score,
            })
        })
        .collect()
}
