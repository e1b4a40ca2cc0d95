//! Finding tools of a run's allowed set by what they do ([`Run::search`](crate::Run::search)).

pub(crate) mod embed;

pub use crate::discover::search::SearchHit;
#[cfg(feature = "openai-embeddings")]
pub use embed::openai::OpenAiEmbedder;
pub use embed::{EmbedError, Embedder, MAX_BATCH, MAX_DIMENSIONS, MAX_TEXT_BYTES};
