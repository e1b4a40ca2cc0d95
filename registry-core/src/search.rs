//! Finding tools of a run's allowed set by what they do ([`Run::search`](crate::Run::search)).

pub(crate) mod embed;

pub use crate::discover::search::SearchHit;
#[cfg(feature = "openai-embeddings")]
pub use embed::openai::OpenAiEmbedder;
pub use embed::{EmbedError, Embedder, MAX_BATCH, MAX_DIMENSIONS, MAX_TEXT_BYTES};

/// What [`Registry::prepare_search`](crate::Registry::prepare_search) made ready: the search
/// index of the registry's current tools, and their vectors if it has an embedder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PreparedSearch {
    /// The tools of the registry's current snapshot, every one of them indexed (and
    /// embedded, if `by_meaning`), hidden or not: search still answers each run from its
    /// allowed set alone.
    pub tools: usize,
    /// Whether the tools' vectors are built: the registry has an embedder, and it embedded
    /// them all. `false` without an embedder, or if it failed (then searches are lexical,
    /// and the failure was logged).
    pub by_meaning: bool,
}
