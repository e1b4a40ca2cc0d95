//! Search: the tools of a run's allowed set that best match a query, ranked by the index of
//! the run's registry snapshot (`index.rs`).
//!
//! Tests: `tests/tests/integration/search_invariants.rs`, `search_answers.rs`,
//! `search_embedder.rs`.

use crate::discover::allowed::AllowedSet;
use crate::discover::run::{Capability, Run};
use crate::execute::tool::Tool;
use crate::project::discovery::Snapshot;
use crate::project::index::{Found, MAX_QUERY_BYTES, Ranked};
use crate::register::registry::Registry;
use crate::search::embed::{Vectors, cut};

/// One tool a search found: its name, its score and what a model may know of it.
///
/// Only tools of the run's allowed set are ever found, in the version the run was shown.
#[derive(Debug, Clone)]
pub struct SearchHit {
    tool: Tool,
    score: f64,
    matched: usize,
    terms: usize,
    similarity: Option<f32>,
}

impl SearchHit {
    /// The tool's name.
    pub fn name(&self) -> &str {
        self.tool.name()
    }

    /// How well the tool matches the query, higher is better: its BM25 score, or with an
    /// embedder its reciprocal-rank-fusion score. Comparable between the hits of one search,
    /// not across runs or queries.
    pub fn score(&self) -> f64 {
        self.score
    }

    /// The share of the query's words (stop words aside, words no tool has included) that
    /// the tool matched, by the word itself or a related one: from 0 (found by meaning
    /// alone) to 1. A weak hit matches few.
    pub fn coverage(&self) -> f64 {
        if self.terms == 0 {
            0.0
        } else {
            self.matched as f64 / self.terms as f64
        }
    }

    /// The cosine similarity of the tool's vector with the query's, when the registry has an
    /// embedder that could embed both (`None` otherwise).
    pub fn similarity(&self) -> Option<f32> {
        self.similarity
    }

    /// The tool's definition and behaviour hints, as the run was shown them, and its version.
    pub fn capability(&self) -> Capability<'_> {
        Capability {
            definition: self.tool.definition_ref(),
            hints: self.tool.settings().hints,
            version: self.tool.version_fingerprint(),
            attributes: &self.tool.settings().attributes,
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
/// leaving out those its calls would refuse before validation (revoked, not ready). Calls
/// the embedder, if the registry has one, on this thread.
pub(crate) fn search(
    registry: &Registry,
    snapshot: &Snapshot,
    allowed: &AllowedSet,
    query: &str,
    k: usize,
) -> Vec<SearchHit> {
    let vector = query_vector(registry, snapshot, query);
    search_with(registry, snapshot, allowed, query, k, vector.as_ref())
}

/// A query's unit vector by the registry's embedder, made before the search that uses it
/// (off the async workers, outside any lock), for the text the search reads of the query.
#[derive(Debug, Clone)]
pub(crate) struct QueryVector {
    /// The query as embedded: its first [`MAX_QUERY_BYTES`].
    text: String,
    vector: Vec<f32>,
}

/// The query as the embedder is given it: its first [`MAX_QUERY_BYTES`], or `None` if that
/// is blank.
fn embedded_text(query: &str) -> Option<String> {
    let mut text = query.to_owned();
    cut(&mut text, MAX_QUERY_BYTES);
    (!text.trim().is_empty()).then_some(text)
}

/// `query`'s vector, if the registry has an embedder that can embed both it and `snapshot`'s
/// tools (whose vectors are built first, once per snapshot). Calls the embedder on this
/// thread, and may block as long as it does; a failure is logged, and `None` makes the
/// search lexical.
pub(crate) fn query_vector(
    registry: &Registry,
    snapshot: &Snapshot,
    query: &str,
) -> Option<QueryVector> {
    let embedder = registry.embedder()?;
    let text = embedded_text(query)?;
    let vectors = snapshot.vectors(embedder)?;
    match vectors.query(embedder, &text) {
        Ok(vector) => Some(QueryVector { text, vector }),
        Err(error) => {
            tracing::warn!(
                error = ?error.message(),
                "the embedder could not embed a query: the search is lexical"
            );
            None
        }
    }
}

/// [`search`] with the query's vector made beforehand ([`query_vector`]): never calls the
/// embedder. The search is lexical if `vector` is `None`, is not of `query`, or if the
/// vectors of `snapshot`'s tools are not built yet or have another length.
pub(crate) fn search_with(
    registry: &Registry,
    snapshot: &Snapshot,
    allowed: &AllowedSet,
    query: &str,
    k: usize,
    vector: Option<&QueryVector>,
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
    let index = snapshot.index();
    match semantic(registry, snapshot, query, vector) {
        None => {
            let ranked = index.ranked(query, &candidates, k);
            let found = ranked.found.iter().map(|found| (*found, None)).collect();
            hits(entries, &ranked, found)
        }
        Some((vectors, vector, weight)) => {
            let ranked = index.ranked(query, &candidates, k.max(FUSION_DEPTH));
            let fused = fuse(&ranked, (vectors, vector, weight), &candidates, k);
            hits(entries, &ranked, fused)
        }
    }
}

/// How deep each list goes into fusion: the lexical ranking's and the nearest tools' first
/// this many. 100 found the same as 50 on `bench/search-quality`'s tuning part, cross-fitted
/// (161 of 179 queries in the top 5 with all-MiniLM-L6-v2 at weight 1, 162 at 2).
pub(crate) const FUSION_DEPTH: usize = 50;
/// Reciprocal rank fusion's constant: a tool at rank `r` of a list scores `1 / (RRF_K + r)`.
///
/// 10 rather than the usual 60, so that the first few places of each list weigh more: chosen
/// on `bench/search-quality`'s tuning part, where it was the best of 2, 5, 10, 20, 30 and 60
/// with both all-MiniLM-L6-v2 and all-mpnet-base-v2 (recall@5 0.905 → 0.916 and
/// 0.916 → 0.933 against 60).
///
/// Checked again cross-fitted, so that the words are not flattered: each half of the tuning
/// part's queries judged with the related-word table derived from the other half
/// (`derive-related --leave-out I/2`, `search-quality --fold I/2`). With all-MiniLM-L6-v2 at
/// weight 1, 161 of its 179 queries have a right tool in the top 5 at 10, 158 at 30, 156 at
/// 60 (147 by words alone). Rank fusion stays: a convex combination of the scores,
/// `α · cosine + (1 − α) · bm25 / best bm25`, found 150, 153, 157 and 160 at α 0.3, 0.5, 0.7
/// and 0.8.
pub(crate) const RRF_K: f64 = 10.0;

/// The snapshot's vectors, `vector` and the embedder's weight, if the registry has an
/// embedder, `vector` is of `query`, and the snapshot's vectors are built and of its length.
fn semantic<'a>(
    registry: &Registry,
    snapshot: &'a Snapshot,
    query: &str,
    vector: Option<&'a QueryVector>,
) -> Option<(&'a Vectors, &'a [f32], f64)> {
    let embedder = registry.embedder()?;
    let vector = vector?;
    if embedded_text(query).as_deref() != Some(vector.text.as_str()) {
        return None;
    }
    let vectors = snapshot.built_vectors()?;
    (vector.vector.len() == vectors.dimensions()).then(|| {
        (
            vectors,
            vector.vector.as_slice(),
            crate::search::embed::weight_of(embedder),
        )
    })
}

/// The `k` best of the lexical ranking and the [`FUSION_DEPTH`] candidates nearest the query
/// (by similarity, ties by slot), fused: `1 / (RRF_K + rank)` for the lexical list and
/// `weight / (RRF_K + rank)` for the nearest, summed over the lists a tool is in, ties by
/// slot. Each list is over `candidates` alone, so no other tool changes a score.
fn fuse(
    ranked: &Ranked,
    (vectors, query, weight): (&Vectors, &[f32], f64),
    candidates: &[usize],
    k: usize,
) -> Vec<(Found, Option<f32>)> {
    let mut near: Vec<(usize, f32)> = candidates
        .iter()
        .map(|&slot| (slot, vectors.similarity(slot, query)))
        .collect();
    let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if near.len() > FUSION_DEPTH {
        near.select_nth_unstable_by(FUSION_DEPTH - 1, order);
        near.truncate(FUSION_DEPTH);
    }
    near.sort_unstable_by(order);
    let mut fused: Vec<(Found, Option<f32>)> = Vec::with_capacity(ranked.found.len() + near.len());
    for (rank, found) in ranked.found.iter().enumerate() {
        let similarity = vectors.similarity(found.slot, query);
        fused.push((
            Found {
                score: 1.0 / (RRF_K + rank as f64 + 1.0),
                ..*found
            },
            Some(similarity),
        ));
    }
    for (rank, (slot, similarity)) in near.into_iter().enumerate() {
        let score = weight / (RRF_K + rank as f64 + 1.0);
        match fused.iter_mut().find(|(found, _)| found.slot == slot) {
            Some((found, _)) => found.score += score,
            None => fused.push((
                Found {
                    slot,
                    score,
                    matched: 0,
                },
                Some(similarity),
            )),
        }
    }
    fused.sort_by(|a, b| {
        b.0.score
            .total_cmp(&a.0.score)
            .then(a.0.slot.cmp(&b.0.slot))
    });
    fused.truncate(k);
    fused
}

/// The hits of `found`, from the run's entries (in slot order).
fn hits(
    entries: crate::discover::allowed::Entries<'_>,
    ranked: &Ranked,
    found: Vec<(Found, Option<f32>)>,
) -> Vec<SearchHit> {
    found
        .into_iter()
        .filter_map(|(found, similarity)| {
            let entry = entries.of_slot(found.slot)?;
            Some(SearchHit {
                tool: entry.tool.clone(),
                score: found.score,
                matched: found.matched,
                terms: ranked.terms,
                similarity,
            })
        })
        .collect()
}
