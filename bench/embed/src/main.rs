//! Benchmark of `registry_embed::LocalEmbedder` (issue 47, "fast enough that nobody turns it
//! off"), in release mode, printed beside the issue's goals:
//!
//! - **memory**: the process's resident set (`VmRSS` of `/proc/self/status`) before the
//!   model is loaded, after, after three registries of the catalog built with embedders
//!   loaded again (the same weights, a cache of their own; searched, so each holds its tools'
//!   vectors), and after a second
//!   `LocalEmbedder::load` of the same directory while the first is alive;
//! - **the catalog**: the first search of a registry of `bench/search-quality/catalog.json`'s
//!   461 tools, which embeds every tool of the snapshot (in batches of `MAX_BATCH`, 64), timed
//!   by a wrapper around the embedder, and the same registry's first search without an
//!   embedder (the lexical index alone); cost per tool, and 795 and 10,000 tools extrapolated;
//! - **one query**: each of `bench/search-quality/queries.json`'s 315 queries embedded alone,
//!   several rounds, on the default threads, 1 and 2: p50, p99, the worst;
//! - a 12-token text's whole forward pass on 1 and 2 threads (the matrix product itself is
//!   private to registry-embed);
//! - **the cache** (`with_cache`): a "restart" (a new embedder on the same file) embeds no
//!   tool, and after 10 tools change, 10.
//!
//! Run: `CARGO_TARGET_DIR=/work/target-bench cargo run --release --manifest-path
//! bench/embed/Cargo.toml -- --model-dir DIR [--rounds N] [--catalog-rounds N]`
//! (`DIR` defaults to `$REGISTRY_EMBED_MODEL_DIR`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use registry_core::search::{EmbedError, Embedder};
use registry_core::{BuildProblem, DynamicTool, Registry, Subject};
use registry_embed::LocalEmbedder;
use serde_json::Value;

/// The query each registry's first search asks (it is embedded too, once).
const FIRST_QUERY: &str = "open a pull request for my branch";

/// One tool of the catalog.
#[derive(Clone)]
struct Entry {
    name: String,
    title: Option<String>,
    description: String,
    schema: Value,
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn load_catalog(path: &Path) -> Vec<Entry> {
    let Value::Array(items) = read_json(path) else {
        panic!("{}: not an array", path.display())
    };
    items
        .iter()
        .map(|t| {
            let mut schema = t["inputSchema"].clone();
            if let Value::Object(map) = &mut schema {
                map.remove("$schema");
                map.entry("type")
                    .or_insert_with(|| Value::String("object".into()));
            }
            Entry {
                name: t["name"].as_str().unwrap_or_default().to_owned(),
                title: t["title"].as_str().map(str::to_owned),
                description: t["description"].as_str().unwrap_or_default().to_owned(),
                schema,
            }
        })
        .collect()
}

fn load_queries(path: &Path) -> Vec<String> {
    let Value::Array(items) = read_json(path) else {
        panic!("{}: not an array", path.display())
    };
    items
        .iter()
        .map(|q| q["query"].as_str().expect("query: a string").to_owned())
        .collect()
}

fn tool(entry: &Entry, allow: bool) -> DynamicTool {
    let mut tool = DynamicTool::new(entry.name.clone(), entry.description.clone())
        .public()
        .parameters(entry.schema.clone())
        .handler(|_ctx, _args| Ok::<_, String>(Value::Null));
    if let Some(title) = &entry.title {
        tool = tool.title(title.clone());
    }
    if allow {
        tool = tool.allow_description("published definition, quoted verbatim for the benchmark");
    }
    tool
}

/// Which tools the description lint refuses (they are kept with `allow_description`, as
/// `bench/search-quality` keeps them); a tool with any other problem panics.
fn lint_refused(catalog: &[Entry]) -> Vec<bool> {
    catalog
        .iter()
        .map(
            |entry| match Registry::builder().tool(tool(entry, false)).build() {
                Ok(_) => false,
                Err(error) => {
                    let lint_only = error
                        .problems()
                        .iter()
                        .all(|p| matches!(p, BuildProblem::UnsafeDescription { .. }));
                    assert!(lint_only, "{}: {error}", entry.name);
                    true
                }
            },
        )
        .collect()
}

fn registry(catalog: &[Entry], allow: &[bool], embedder: Option<impl Embedder>) -> Registry {
    let mut builder = Registry::builder();
    if let Some(embedder) = embedder {
        builder = builder.embedder(embedder);
    }
    for (entry, allow) in catalog.iter().zip(allow) {
        builder = builder.tool(tool(entry, *allow));
    }
    builder
        .build()
        .unwrap_or_else(|e| panic!("the catalog's registry: {e}"))
}

/// An embedder that times its inner one's calls.
#[derive(Clone)]
struct Timed {
    inner: LocalEmbedder,
    spent: Arc<Mutex<(Duration, usize, usize)>>,
}

impl Timed {
    fn new(inner: LocalEmbedder) -> Timed {
        Timed {
            inner,
            spent: Arc::default(),
        }
    }

    /// Time spent embedding, calls, texts.
    fn spent(&self) -> (Duration, usize, usize) {
        *self.spent.lock().unwrap()
    }
}

impl Embedder for Timed {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let started = Instant::now();
        let vectors = self.inner.embed(texts);
        let mut spent = self.spent.lock().unwrap();
        spent.0 += started.elapsed();
        spent.1 += 1;
        spent.2 += texts.len();
        vectors
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let started = Instant::now();
        let vector = self.inner.embed_query(query);
        let mut spent = self.spent.lock().unwrap();
        spent.0 += started.elapsed();
        spent.1 += 1;
        spent.2 += 1;
        vector
    }

    fn weight(&self) -> f64 {
        self.inner.weight()
    }
}

/// The first search of a registry: it builds the index, and embeds the tools and the query.
fn first_search(registry: &Registry) -> Duration {
    let run = registry.open_run("bench", &Subject::new("bench"));
    let started = Instant::now();
    let hits = run.search(FIRST_QUERY, 5);
    let elapsed = started.elapsed();
    assert!(!hits.is_empty(), "the first search found nothing");
    elapsed
}

/// `VmRSS` of `/proc/self/status`, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The CPU time of the whole process (every thread, user and system), in seconds, from
/// `/proc/self/stat` (in ticks of 1/100 s, Linux's `USER_HZ`): a loaded machine stretches
/// wall time, much less this.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / 100.0
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The `p` quantile (0 to 1) of sorted `values`: the smallest value at least `p` of them are
/// at or below.
fn quantile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}

fn median(values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn range(values: &[f64]) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{min:.2}–{max:.2}")
}

fn goal(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

fn main() -> Result<(), EmbedError> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut args = std::env::args().skip(1);
    let mut model_dir = std::env::var_os("REGISTRY_EMBED_MODEL_DIR").map(PathBuf::from);
    let (mut rounds, mut catalog_rounds) = (5usize, 3usize);
    let mut catalog_path = here.join("../search-quality/catalog.json");
    let mut queries_path = here.join("../search-quality/queries.json");
    while let Some(arg) = args.next() {
        let mut value = |what: &str| args.next().unwrap_or_else(|| panic!("{arg} {what}"));
        match arg.as_str() {
            "--model-dir" => model_dir = Some(PathBuf::from(value("DIR"))),
            "--rounds" => rounds = value("N").parse().expect("--rounds N"),
            "--catalog-rounds" => catalog_rounds = value("N").parse().expect("--catalog-rounds N"),
            "--catalog" => catalog_path = PathBuf::from(value("PATH")),
            "--queries" => queries_path = PathBuf::from(value("PATH")),
            other => panic!(
                "unknown argument {other:?}; options: --model-dir DIR, --rounds N, \
                 --catalog-rounds N, --catalog PATH, --queries PATH"
            ),
        }
    }
    let model_dir =
        model_dir.expect("--model-dir DIR (or REGISTRY_EMBED_MODEL_DIR): the model's directory");
    let catalog = load_catalog(&catalog_path);
    let queries = load_queries(&queries_path);
    let allow = lint_refused(&catalog);
    let tools = catalog.len();
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!(
            "load average at start: {}",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    println!(
        "cores: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    // ---- Memory, and the catalog ----
    let rss_start = rss_kib();
    let started = Instant::now();
    let embedder = LocalEmbedder::load(&model_dir)?;
    let load_time = started.elapsed();
    let rss_loaded = rss_kib();
    println!(
        "\nmodel: {} ({} dimensions, at most {} tokens, {} threads by default), loaded in {:.2} s; \
         weight_bytes() = {} ({:.1} MiB)",
        model_dir.display(),
        embedder.dimensions(),
        embedder.max_tokens(),
        embedder.threads(),
        load_time.as_secs_f64(),
        embedder.weight_bytes(),
        embedder.weight_bytes() as f64 / 1_048_576.0
    );

    println!(
        "\n## The catalog: {tools} tools ({}), embedded by a registry's first search",
        catalog_path.display()
    );
    let mut lexical = Vec::new();
    for _ in 0..catalog_rounds {
        let registry = registry(&catalog, &allow, None::<LocalEmbedder>);
        lexical.push(first_search(&registry).as_secs_f64());
    }
    let mut registries = Vec::new();
    let (mut firsts, mut embeds, mut cpus) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..catalog_rounds {
        // A load of its own each round: the same weights in memory, but a cache of its own
        // (a clone would answer rounds 2 and 3 from the first's vectors).
        let fresh = LocalEmbedder::load(&model_dir)?;
        let timed = Timed::new(fresh.clone());
        let before = fresh.stats().computed;
        let registry = registry(&catalog, &allow, Some(timed.clone()));
        let cpu = cpu_s();
        let first = first_search(&registry);
        let cpu = cpu_s() - cpu;
        let (spent, calls, texts) = timed.spent();
        let computed = fresh.stats().computed - before;
        println!(
            "round {}: first search {:.2} s, of which embedding {:.2} s ({calls} calls, {texts} texts; {computed} computed); CPU {cpu:.2} s",
            round + 1,
            first.as_secs_f64(),
            spent.as_secs_f64()
        );
        cpus.push(cpu);
        firsts.push(first.as_secs_f64());
        embeds.push(spent.as_secs_f64());
        // Kept alive for the memory figures (the first three).
        if registries.len() < 3 {
            registries.push(registry);
        }
    }
    let embed_s = median(&embeds);
    let per_tool = embed_s / tools as f64;
    println!(
        "first search without an embedder (the lexical index): median {:.3} s ({} s)",
        median(&lexical),
        range(&lexical)
    );
    println!(
        "first search with the embedder: median {:.2} s ({} s); embedding alone: median {embed_s:.2} s ({} s) over {catalog_rounds} rounds",
        median(&firsts),
        range(&firsts),
        range(&embeds)
    );
    println!(
        "CPU time of the first search (every thread): median {:.2} s ({} s), {:.1} ms a tool",
        median(&cpus),
        range(&cpus),
        median(&cpus) / tools as f64 * 1e3
    );
    println!(
        "cost per tool (wall): {:.1} ms; extrapolated (the same cost per tool): 795 tools {:.1} s \
         (goal ≤ 30 s: {}), 10,000 tools {:.0} s",
        per_tool * 1e3,
        per_tool * 795.0,
        goal(per_tool * 795.0 <= 30.0),
        per_tool * 10_000.0
    );

    for registry in &registries {
        let run = registry.open_run("bench", &Subject::new("bench"));
        assert!(
            run.search("list files in a folder", 5)[0]
                .similarity()
                .is_some()
        );
    }
    let rss_registries = rss_kib();
    let second = LocalEmbedder::load(&model_dir)?;
    let rss_second = rss_kib();
    assert_eq!(second.model_digest(), embedder.model_digest());
    println!("\n## Memory (VmRSS)");
    println!("before load: {}", mib(rss_start));
    println!(
        "after load: {} (+{})",
        mib(rss_loaded),
        mib(rss_loaded.saturating_sub(rss_start))
    );
    println!(
        "after {} registries of the catalog, each with an embedder of its own sharing the weights, searched: {} (+{})",
        registries.len(),
        mib(rss_registries),
        mib(rss_registries.saturating_sub(rss_loaded))
    );
    println!(
        "after a second LocalEmbedder::load of the same directory, the first alive: {} (+{}; the weights are {:.1} MiB)",
        mib(rss_second),
        mib(rss_second.saturating_sub(rss_registries)),
        embedder.weight_bytes() as f64 / 1_048_576.0
    );
    drop(second);
    drop(registries);

    // ---- One query ----
    let tokens: Vec<usize> = queries
        .iter()
        .map(|q| embedder.token_ids(q).map(|ids| ids.len()))
        .collect::<Result<_, _>>()?;
    println!(
        "\n## One query: {} queries ({}), each embedded alone, {rounds} rounds; tokens a query: mean {:.1}, max {}",
        queries.len(),
        queries_path.display(),
        tokens.iter().sum::<usize>() as f64 / tokens.len() as f64,
        tokens.iter().max().copied().unwrap_or(0)
    );
    println!(
        "| threads | p50 ms | p99 ms | max ms | p50 of the rounds | p99 of the rounds | CPU ms a query |"
    );
    println!("|---|---|---|---|---|---|---|");
    for threads in [None, Some(1), Some(2)] {
        let e = match threads {
            None => embedder.clone(),
            Some(n) => embedder.clone().with_threads(n)?,
        };
        for q in &queries {
            e.embed_query(q)?;
        }
        let (mut p50s, mut p99s, mut maxes, mut cpus) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let cpu = cpu_s();
            let mut times: Vec<Duration> = queries
                .iter()
                .map(|q| {
                    let started = Instant::now();
                    let vectors = e.embed_query(q);
                    let elapsed = started.elapsed();
                    assert!(vectors.is_ok());
                    elapsed
                })
                .collect();
            cpus.push((cpu_s() - cpu) * 1e3 / queries.len() as f64);
            times.sort();
            p50s.push(ms(quantile(&times, 0.5)));
            p99s.push(ms(quantile(&times, 0.99)));
            maxes.push(ms(*times.last().unwrap_or(&Duration::ZERO)));
        }
        let (p50, p99) = (median(&p50s), median(&p99s));
        println!(
            "| {} | {p50:.2} | {p99:.2} | {:.2} | {} | {} | {:.2} |",
            match threads {
                None => format!("{} (default)", e.threads()),
                Some(n) => n.to_string(),
            },
            median(&maxes),
            range(&p50s),
            range(&p99s),
            median(&cpus)
        );
        if threads.is_none() {
            println!(
                "(goal p50 ≤ 5 ms: {}; p99 ≤ 20 ms: {}; medians over the rounds)",
                goal(p50 <= 5.0),
                goal(p99 <= 20.0)
            );
        }
    }

    // ---- A 12-token text on 1 and 2 threads ----
    let twelve: Vec<&String> = queries
        .iter()
        .zip(&tokens)
        .filter(|(_, n)| **n == 12)
        .map(|(q, _)| q)
        .collect();
    if let Some(text) = twelve.first() {
        let one = embedder.clone().with_threads(1)?;
        let two = embedder.clone().with_threads(2)?;
        let (mut t1, mut t2) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            for (e, out) in [(&one, &mut t1), (&two, &mut t2)] {
                let started = Instant::now();
                for _ in 0..100 {
                    e.embed_query(text)?;
                }
                out.push(ms(started.elapsed()) / 100.0);
            }
        }
        println!(
            "\n12-token text {text:?}, whole forward pass (the matrix product alone is private), \
             3 × 100 in turn: 1 thread {:.2} ms, 2 threads {:.2} ms (medians)",
            median(&t1),
            median(&t2)
        );
    }

    // ---- The cache ----
    let path = std::env::temp_dir().join(format!("bench-embed-{}.cache", std::process::id()));
    let _ = std::fs::remove_file(&path);
    println!("\n## The cache ({})", path.display());
    let cold = LocalEmbedder::load(&model_dir)?.with_cache(&path)?;
    let started = Instant::now();
    first_search(&registry(&catalog, &allow, Some(cold.clone())));
    println!(
        "first start, empty cache: first search {:.2} s, {} texts computed ({} tools and the query)",
        started.elapsed().as_secs_f64(),
        cold.stats().computed,
        tools
    );
    drop(cold);
    let mut restarts = Vec::new();
    for round in 0..catalog_rounds {
        let started = Instant::now();
        let warm = LocalEmbedder::load(&model_dir)?.with_cache(&path)?;
        let opened = started.elapsed();
        first_search(&registry(&catalog, &allow, Some(warm.clone())));
        let total = started.elapsed();
        let stats = warm.stats();
        println!(
            "restart {}: load (weights shared with the live embedder) and cache opened in {:.3} s, \
             then first search: {:.3} s in all; computed {}, from the cache {}",
            round + 1,
            opened.as_secs_f64(),
            total.as_secs_f64(),
            stats.computed,
            stats.from_cache
        );
        assert_eq!(stats.computed, 0, "a restart computed texts");
        restarts.push(total.as_secs_f64());
    }
    let mut changed_times = Vec::new();
    for round in 0..catalog_rounds {
        let mut changed = catalog.clone();
        for entry in changed.iter_mut().take(10) {
            entry
                .description
                .push_str(&format!(" Changed in round {round}."));
        }
        let started = Instant::now();
        let warm = LocalEmbedder::load(&model_dir)?.with_cache(&path)?;
        first_search(&registry(&changed, &allow, Some(warm.clone())));
        let total = started.elapsed();
        let stats = warm.stats();
        println!(
            "10 tools changed, round {}: {:.3} s in all; computed {}, from the cache {}",
            round + 1,
            total.as_secs_f64(),
            stats.computed,
            stats.from_cache
        );
        assert_eq!(stats.computed, 10, "10 changed tools, but not 10 computed");
        changed_times.push(total.as_secs_f64());
    }
    println!(
        "restart: median {:.3} s; 10 tools changed: median {:.3} s (the real restart's cold load: {:.2} s above)",
        median(&restarts),
        median(&changed_times),
        load_time.as_secs_f64()
    );
    let _ = std::fs::remove_file(&path);
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!(
            "\nload average at the end: {}",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    Ok(())
}
