//! `--model-dir DIR` and `--embed-cache FILE` of the example programs: a sentence model run in
//! this process ([`registry_embed::LocalEmbedder`]), so that search ranks tools by meaning as
//! well as by words.

use std::path::PathBuf;
use std::time::Instant;

use registry_core::Registry;
use registry_embed::LocalEmbedder;

/// What `--model-dir` and `--embed-cache` say.
#[derive(Debug, Clone, Default)]
pub struct EmbedFlags {
    /// `--model-dir DIR`: the sentence-transformers model's directory.
    pub model_dir: Option<PathBuf>,
    /// `--embed-cache FILE`: where the tools' vectors the model computes (never the
    /// queries') are kept between starts.
    pub cache: Option<PathBuf>,
}

impl EmbedFlags {
    /// Checks the flags together: `--embed-cache` needs `--model-dir`.
    ///
    /// # Errors
    ///
    /// If `--embed-cache` is given alone.
    pub fn check(&self) -> Result<(), String> {
        if self.cache.is_some() && self.model_dir.is_none() {
            return Err("--embed-cache needs --model-dir DIR".to_owned());
        }
        Ok(())
    }

    /// The model of `--model-dir`, with the cache of `--embed-cache`; `None` without
    /// `--model-dir`. Blocks while the weights are read and checked (call it where blocking
    /// is allowed).
    ///
    /// # Errors
    ///
    /// The flag and why its model or cache cannot be used (the [`EmbedError`] of
    /// [`LocalEmbedder::load`] or [`LocalEmbedder::with_cache`]).
    ///
    /// [`EmbedError`]: registry_embed::EmbedError
    pub fn load(&self) -> Result<Option<LocalEmbedder>, String> {
        let Some(dir) = &self.model_dir else {
            return Ok(None);
        };
        let started = Instant::now();
        let mut embedder = LocalEmbedder::load(dir)
            .map_err(|error| format!("--model-dir {}: {error}", dir.display()))?;
        if let Some(path) = &self.cache {
            embedder = embedder
                .with_cache(path)
                .map_err(|error| format!("--embed-cache {}: {error}", path.display()))?;
        }
        tracing::info!(
            model = %dir.display(),
            dimensions = embedder.dimensions(),
            weight_bytes = embedder.weight_bytes(),
            threads = embedder.threads(),
            cached = embedder.stats().cached,
            ms = started.elapsed().as_millis(),
            "the sentence model is loaded: search ranks by meaning and by words"
        );
        Ok(Some(embedder))
    }
}

/// Builds `registry`'s search index and embeds its tools with `embedder` now, so that the
/// first search does not pay for the whole catalog ([`Registry::prepare_search`]); logs how
/// long it took, how many tools, and how many of them the cache answered. Blocks: call it on
/// a blocking thread.
pub fn prepare(registry: &Registry, embedder: &LocalEmbedder) {
    let before = embedder.stats();
    let started = Instant::now();
    let prepared = registry.prepare_search();
    let ms = started.elapsed().as_millis();
    let after = embedder.stats();
    if prepared.by_meaning {
        tracing::info!(
            tools = prepared.tools,
            computed = after.computed - before.computed,
            from_cache = after.from_cache - before.from_cache,
            ms,
            "search prepared: the tools are embedded"
        );
    } else {
        tracing::warn!(
            tools = prepared.tools,
            ms,
            "the model could not embed the tools: search ranks by words only"
        );
    }
}
