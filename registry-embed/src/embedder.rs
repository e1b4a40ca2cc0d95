//! [`LocalEmbedder`]: the model, its tokenizer and pooling, a bounded pool of threads, and an
//! optional cache, behind [`Embedder`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use rayon::prelude::*;
use registry_core::search::{EmbedError, Embedder};
use sha2::{Digest, Sha256};

use crate::bert::Bert;
use crate::cache::{self, Cache};
use crate::config::{ModelConfig, Pooling};
use crate::tokenize::Words;

/// How much the model's ranking counts in search's fusion by default, against the words' 1
/// ([`Embedder::weight`]): chosen for all-MiniLM-L6-v2 on `bench/search-quality`'s tuning
/// part, where 1 did best of 1, 1.5, 2, 2.5, 3 and 4 (recall@5 0.916 at 1, 0.905 at 2,
/// 0.883 at 4; its README's section for issue 47 has the figures and the held-out part).
/// Checked cross-fitted, with each half of the tuning part's queries judged by a related-word
/// table derived from the other half, so that the words are not flattered: 0.899 at 1, 0.894
/// at 1.5, 0.905 at 2, 0.888 at 3 (161, 160, 162, 159 of 179 queries), no weight four
/// queries ahead of 1, so 1 stays. A model that ranks better than this one may earn more:
/// measure it on labelled queries of your own, then
/// [`with_weight`](LocalEmbedder::with_weight).
pub const DEFAULT_WEIGHT: f64 = 1.0;

/// The most threads a [`LocalEmbedder`] computes on, whatever
/// [`with_threads`](LocalEmbedder::with_threads) asks.
pub const MAX_THREADS: usize = 64;

/// A sentence-transformers model of the BERT family (all-MiniLM-L6-v2, bge-small, e5-small),
/// run in this process: an [`Embedder`] for search by meaning with no service beside it.
///
/// [`load`](LocalEmbedder::load) reads a directory holding `config.json`, `tokenizer.json` and
/// `model.safetensors` (and, as sentence-transformers writes them, `modules.json`,
/// `1_Pooling/config.json` and `sentence_bert_config.json`, which say how token vectors are
/// pooled and normalised, and how many tokens are read). Nothing is downloaded.
///
/// - **Batched and bounded.** One [`embed`](Embedder::embed) call embeds many texts, on a
///   pool of at most [`threads`](LocalEmbedder::threads) threads (the machine's cores, at most
///   4, unless [`with_threads`](LocalEmbedder::with_threads) says otherwise): several texts
///   are spread over the pool, one text's products are shared among it. Calls from many
///   threads wait for the same pool; no call starts threads of its own.
/// - **Blocking, by design.** `embed` computes on the pool and returns when done (a query of
///   ten words takes a few milliseconds), so it is called where blocking is allowed:
///   `registry-mcp` and `registry-agent` call it on `tokio::task::spawn_blocking`, never on
///   an async worker.
/// - **Weights once.** Clones share the weights, and so does a second `load` of the same
///   files while the first is alive: many registries, one copy in memory.
/// - **Cache.** Every tool's vector is kept in memory (at most [`MAX_CACHED`](crate::MAX_CACHED),
///   keyed by the text's SHA-256), so a new snapshot of the registry (a tool replaced) embeds
///   only the tools whose text changed. [`with_cache`](LocalEmbedder::with_cache) keeps them in
///   a file too, keyed by the model's digest as well, so a restart embeds only what changed.
///   Queries ([`Embedder::embed_query`]) are never cached.
///
/// ```no_run
/// use registry_core::{DynamicTool, Registry, Subject};
/// use registry_embed::LocalEmbedder;
/// use serde_json::json;
///
/// let embedder = LocalEmbedder::load("target/models/all-MiniLM-L6-v2")?
///     .with_cache("target/models/vectors.cache")?;
/// let registry = Registry::builder()
///     .tool(
///         DynamicTool::new("create_pull_request", "Create a pull request from a branch.")
///             .public()
///             .handler(|_ctx, _args| Ok::<_, String>(json!("opened"))),
///     )
///     .embedder(embedder)
///     .build()
///     .unwrap();
/// let run = registry.open_run("run-1", &Subject::new("alice"));
/// let hits = run.search("open a PR for my branch", 3);
/// assert_eq!(hits[0].name(), "create_pull_request");
/// # Ok::<(), registry_core::search::EmbedError>(())
/// ```
#[derive(Clone)]
pub struct LocalEmbedder {
    model: Arc<Model>,
    workers: Arc<Workers>,
    cache: Arc<Mutex<Cache>>,
    /// Whether the cache is kept in a file.
    persistent: bool,
    /// Put before every query and every tool's text (e5's `"query: "` and `"passage: "`).
    prefixes: Arc<(String, String)>,
    weight: f64,
    stats: Arc<Counters>,
}

/// What a [`LocalEmbedder`] has done since it was loaded (its clones' work included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct EmbedStats {
    /// Texts run through the model.
    pub computed: u64,
    /// Texts answered from the cache.
    pub from_cache: u64,
    /// Queries embedded ([`Embedder::embed_query`]: never cached).
    pub queries: u64,
    /// Vectors the cache holds.
    pub cached: usize,
}

#[derive(Debug, Default)]
struct Counters {
    computed: AtomicU64,
    from_cache: AtomicU64,
    queries: AtomicU64,
}

/// The model: shared by every clone, and by every load of the same files.
#[derive(Debug)]
struct Model {
    dir: PathBuf,
    bert: Bert,
    words: Words,
    pooling: Pooling,
    max_tokens: usize,
    digest: [u8; 32],
    dimensions: usize,
}

#[derive(Debug)]
struct Workers {
    pool: rayon::ThreadPool,
    threads: usize,
}

impl Workers {
    fn new(threads: usize) -> Result<Workers, EmbedError> {
        let threads = threads.clamp(1, MAX_THREADS);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("registry-embed-{i}"))
            .build()
            .map_err(|error| {
                EmbedError::new(format!(
                    "the embedder's {threads} threads cannot be started: {error}"
                ))
            })?;
        Ok(Workers { pool, threads })
    }
}

/// The models loaded and alive, so that a second load of the same files shares the weights.
fn loaded() -> &'static Mutex<Vec<Weak<Model>>> {
    static LOADED: OnceLock<Mutex<Vec<Weak<Model>>>> = OnceLock::new();
    LOADED.get_or_init(|| Mutex::new(Vec::new()))
}

impl LocalEmbedder {
    /// Loads the model of `dir`: its configuration, tokenizer and weights, each checked.
    ///
    /// # Errors
    ///
    /// An [`EmbedError`] naming the file and what is wrong with it: a file missing, an
    /// architecture other than BERT (`config.json`'s `model_type`), a tensor missing or of
    /// another shape than `config.json` says, a pooling mode not taken, or a tokenizer whose
    /// ids go past the model's vocabulary.
    pub fn load(dir: impl AsRef<Path>) -> Result<LocalEmbedder, EmbedError> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            return Err(EmbedError::new(format!(
                "{}: no such directory. Give the directory of a sentence-transformers model \
                 (config.json, tokenizer.json, model.safetensors); `bash .ci/fetch-model DIR` \
                 fetches all-MiniLM-L6-v2 into DIR",
                dir.display()
            )));
        }
        let config = ModelConfig::read(dir)?;
        let tokenizer = crate::config::read(dir, "tokenizer.json")?;
        let weights = crate::config::read(dir, "model.safetensors")?;
        let mut hasher = Sha256::new();
        hasher.update(b"registry-embed model\0");
        hasher.update(config.max_tokens.to_le_bytes());
        for (name, bytes) in config
            .files
            .iter()
            .map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
            .chain([
                ("tokenizer.json", tokenizer.as_slice()),
                ("model.safetensors", &weights),
            ])
        {
            hasher.update(name.as_bytes());
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
        let digest: [u8; 32] = hasher.finalize().into();
        let model = {
            let mut loaded = loaded().lock().unwrap_or_else(|e| e.into_inner());
            loaded.retain(|model| model.strong_count() > 0);
            loaded
                .iter()
                .filter_map(Weak::upgrade)
                .find(|model| model.digest == digest)
        };
        let model = match model {
            Some(model) => model,
            None => {
                let words = Words::new(&tokenizer, config.max_tokens)?;
                let bert = Bert::load(&weights, &config.encoder)?;
                drop(weights);
                if words.vocabulary() > bert.vocabulary() {
                    return Err(EmbedError::new(format!(
                        "{}: tokenizer.json has {} tokens, config.json's vocab_size is {}: the \
                         tokenizer is of another model",
                        dir.display(),
                        words.vocabulary(),
                        bert.vocabulary()
                    )));
                }
                let model = Arc::new(Model {
                    dir: dir.to_owned(),
                    dimensions: bert.hidden() * config.pooling.parts(),
                    bert,
                    words,
                    pooling: config.pooling,
                    max_tokens: config.max_tokens,
                    digest,
                });
                loaded()
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Arc::downgrade(&model));
                model
            }
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        Ok(LocalEmbedder {
            cache: Arc::new(Mutex::new(Cache::memory(model.dimensions))),
            persistent: false,
            prefixes: Arc::default(),
            model,
            workers: Arc::new(Workers::new(threads)?),
            weight: DEFAULT_WEIGHT,
            stats: Arc::default(),
        })
    }

    /// Keeps every tool's vector in the file `path` too (made if missing), keyed by the
    /// model's digest and each text's SHA-256: a restart embeds only the texts it has not
    /// seen. It takes the place of the cache in memory (and of what it held). A file of another model is started afresh. At most
    /// [`MAX_CACHED`](crate::MAX_CACHED) vectors are kept; one process writes a file at a time.
    ///
    /// # Errors
    ///
    /// If the file cannot be made, read or written.
    pub fn with_cache(mut self, path: impl AsRef<Path>) -> Result<LocalEmbedder, EmbedError> {
        let cache = Cache::open(path.as_ref(), &self.model.digest, self.model.dimensions)?;
        self.cache = Arc::new(Mutex::new(cache));
        self.persistent = true;
        Ok(self)
    }

    /// Computes on `threads` threads (1 to [`MAX_THREADS`]) of a pool of its own, rather than
    /// the machine's cores (at most 4).
    ///
    /// # Errors
    ///
    /// If the threads cannot be started.
    pub fn with_threads(mut self, threads: usize) -> Result<LocalEmbedder, EmbedError> {
        self.workers = Arc::new(Workers::new(threads)?);
        Ok(self)
    }

    /// Puts `query` before every query and `tool` before every tool's text, as some models
    /// were trained to read them: e5 (`"query: "`, `"passage: "`), bge (`"Represent this
    /// sentence for searching relevant passages: "`, `""`). all-MiniLM-L6-v2 takes none (the
    /// default).
    ///
    /// ```no_run
    /// use registry_embed::LocalEmbedder;
    ///
    /// let e5 = LocalEmbedder::load("models/e5-small-v2")?.with_prefixes("query: ", "passage: ");
    /// # Ok::<(), registry_embed::EmbedError>(())
    /// ```
    #[must_use]
    pub fn with_prefixes(mut self, query: &str, tool: &str) -> LocalEmbedder {
        self.prefixes = Arc::new((query.to_owned(), tool.to_owned()));
        self
    }

    /// Sets how much the model's ranking counts in search's fusion against the words' 1
    /// (default [`DEFAULT_WEIGHT`]; see [`Embedder::weight`]).
    #[must_use]
    pub fn with_weight(mut self, weight: f64) -> LocalEmbedder {
        self.weight = weight;
        self
    }

    /// The length of the vectors it returns.
    pub fn dimensions(&self) -> usize {
        self.model.dimensions
    }

    /// The most tokens of a text the model reads (`max_seq_length`, special tokens
    /// included); the rest of a longer text is not read.
    pub fn max_tokens(&self) -> usize {
        self.model.max_tokens
    }

    /// How many threads it computes on.
    pub fn threads(&self) -> usize {
        self.workers.threads
    }

    /// The model's digest (SHA-256 over its files, in hexadecimal): what the cache is keyed by.
    pub fn model_digest(&self) -> String {
        self.model
            .digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Bytes of memory the model's weights hold (once, however many clones and registries
    /// share them).
    pub fn weight_bytes(&self) -> usize {
        self.model.bert.bytes()
    }

    /// Whether `other` computes with the same weights in memory as this one: a clone, or a
    /// [`load`](LocalEmbedder::load) of the same files while this one is alive.
    pub fn shares_weights_with(&self, other: &LocalEmbedder) -> bool {
        Arc::ptr_eq(&self.model, &other.model)
    }

    /// What it has done since it was loaded.
    pub fn stats(&self) -> EmbedStats {
        EmbedStats {
            computed: self.stats.computed.load(Ordering::Relaxed),
            from_cache: self.stats.from_cache.load(Ordering::Relaxed),
            queries: self.stats.queries.load(Ordering::Relaxed),
            cached: self.cache.lock().unwrap_or_else(|e| e.into_inner()).len(),
        }
    }

    /// The token ids the model reads of `text`, `[CLS]` and `[SEP]` included.
    ///
    /// # Errors
    ///
    /// If `text` is empty, only whitespace, or has no word the tokenizer reads.
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        self.model.words.ids(text, 0, 1)
    }
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("dir", &self.model.dir)
            .field("dimensions", &self.model.dimensions)
            .field("max_tokens", &self.model.max_tokens)
            .field("threads", &self.workers.threads)
            .field("persistent_cache", &self.persistent)
            .field("weight", &self.weight)
            .finish_non_exhaustive()
    }
}

impl Embedder for LocalEmbedder {
    /// One unit vector per text, in order.
    ///
    /// # Errors
    ///
    /// If a text is empty, only whitespace, or has no word the tokenizer reads: the error
    /// names which.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let model = &self.model;
        for (index, text) in texts.iter().enumerate() {
            if text.trim().is_empty() {
                // The error that names it (a prefix is not a word of the text).
                model.words.ids(text, index, texts.len())?;
            }
        }
        let prefixed: Vec<String>;
        let texts: &[&str] = if self.prefixes.1.is_empty() {
            texts
        } else {
            prefixed = texts
                .iter()
                .map(|text| format!("{}{text}", self.prefixes.1))
                .collect();
            &prefixed.iter().map(String::as_str).collect::<Vec<_>>()
        };
        let keys: Vec<cache::Key> = texts.iter().map(|text| cache::key(text)).collect();
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            for (slot, key) in vectors.iter_mut().zip(&keys) {
                *slot = cache.get(key).map(<[f32]>::to_vec);
            }
        }
        let mut missing = Vec::new();
        for (index, text) in texts.iter().enumerate() {
            if vectors[index].is_none() {
                missing.push((index, model.words.ids(text, index, texts.len())?));
            }
        }
        for (index, ids) in &missing {
            model.check_ids(ids, *index)?;
        }
        let threads = self.workers.threads;
        let computed: Vec<Vec<f32>> = self.workers.pool.install(|| {
            if missing.len() == 1 {
                vec![model.bert.embed(&missing[0].1, &model.pooling, threads)]
            } else {
                missing
                    .par_iter()
                    .map(|(_, ids)| model.bert.embed(ids, &model.pooling, 1))
                    .collect()
            }
        });
        self.stats
            .computed
            .fetch_add(computed.len() as u64, Ordering::Relaxed);
        self.stats
            .from_cache
            .fetch_add((texts.len() - computed.len()) as u64, Ordering::Relaxed);
        let new: Vec<(cache::Key, &[f32])> = missing
            .iter()
            .zip(&computed)
            .map(|((index, _), vector)| (keys[*index], vector.as_slice()))
            .collect();
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .put(&new);
        for ((index, _), vector) in missing.into_iter().zip(computed) {
            vectors[index] = Some(vector);
        }
        Ok(vectors.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// The query's unit vector, its products shared among the pool; never cached (a query
    /// is seldom asked twice, and queries would crowd the tools out of the cache).
    ///
    /// # Errors
    ///
    /// If the query is empty, only whitespace, or has no word the tokenizer reads.
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let model = &self.model;
        if query.trim().is_empty() {
            // The prefix is not a word of the query.
            model.words.ids(query, 0, 1)?;
        }
        let ids = model
            .words
            .ids(&format!("{}{query}", self.prefixes.0), 0, 1)?;
        model.check_ids(&ids, 0)?;
        let threads = self.workers.threads;
        let vector = self
            .workers
            .pool
            .install(|| model.bert.embed(&ids, &model.pooling, threads));
        self.stats.queries.fetch_add(1, Ordering::Relaxed);
        Ok(vector)
    }

    fn weight(&self) -> f64 {
        self.weight
    }
}

impl Model {
    /// An error if a token id is past the model's vocabulary (a tokenizer of another model).
    fn check_ids(&self, ids: &[u32], index: usize) -> Result<(), EmbedError> {
        let vocabulary = self.bert.vocabulary();
        match ids.iter().find(|id| **id as usize >= vocabulary) {
            Some(id) => Err(EmbedError::new(format!(
                "text {index}: the tokenizer gave id {id}, past the model's vocabulary of {vocabulary}"
            ))),
            None => Ok(()),
        }
    }
}
