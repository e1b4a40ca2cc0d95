//! Retrieval quality of `Run::search` on the labelled queries: recall@1, recall@5, MRR@5, on
//! the tuning part and the held-out part of the set (split by server, see [`split`]), overall
//! and on the queries of low word overlap.
//!
//!     cd bench/search-quality
//!     CARGO_TARGET_DIR=/work/target-sq cargo run --release --bin search-quality [-- OPTIONS]
//!
//! Options: `--k N` (depth asked of `run.search`, default 5), `--failures PART` (list the
//! queries of `tuning`, `held-out` or `all` whose first hit is not relevant, with what came
//! back), `--strict-lint` (leave out the tools the description lint refuses instead of keeping
//! them with `allow_description`), `--embedder BASE_URL` (rank by meaning too, with an
//! OpenAI-compatible embeddings endpoint: `scripts/minilm_server.py` serves all-MiniLM-L6-v2
//! offline, `scripts/mpnet_server.py` all-mpnet-base-v2), `--model-dir DIR` (rank by meaning
//! too, with the model of `DIR` run in this process, `registry_embed::LocalEmbedder`, its
//! vectors kept in `/tmp/search-quality-vectors.cache` so that a second run embeds only the
//! texts it has not seen), `--embedder-weight W` (how much the embedder's ranking counts in
//! the fusion, `with_weight`; unless given, 1 for `--embedder` and
//! `registry_embed::DEFAULT_WEIGHT` for `--model-dir`), `--parts P,...` (evaluate only these parts, e.g. `tuning` while choosing
//! something, so that the held-out figures are not seen until the choice is made; all three
//! unless given), `--fold I/N` (evaluate only the queries of fold `I` of `N`, [`Fold`]: a fixed
//! hash of the query's text; each part's registry still holds all its tools; for
//! cross-fitting inside the tuning part with a related-word table derived by
//! `derive-related --leave-out I/N`), `--catalog PATH`, `--queries PATH`.
//!
//! Metrics (k = 5 by default; see README.md):
//! - recall@k: fraction of queries with at least one relevant tool in the top k;
//! - MRR@k: mean over queries of 1 / rank of the first relevant tool in the top k (0 if none);
//! - full recall@k: mean of |relevant ∩ top k| / min(|relevant|, k).

use std::path::PathBuf;
use std::time::Instant;

use bench_search_quality::{
    Entry, Fold, Meaning, Query, here, load_catalog, load_queries, load_registry, overlap, score,
    server, split,
};
use registry_core::Subject;

/// The share of the queries the held-out part has (at least).
const HELD_OUT_SHARE: f64 = 0.4;

/// Where `--model-dir`'s vectors are kept between runs (keyed by the model's digest and each
/// text's, so a file of another model or text is no harm).
const VECTOR_CACHE: &str = "/tmp/search-quality-vectors.cache";

struct Part<'a> {
    name: &'static str,
    catalog: Vec<&'a Entry>,
    queries: Vec<&'a Query>,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut k, mut failures, mut strict) = (5usize, None::<String>, false);
    let (mut embedder, mut model_dir, mut weight) = (None::<String>, None::<PathBuf>, None::<f64>);
    let mut only = None::<Vec<String>>;
    let mut fold = None::<Fold>;
    let (mut catalog_path, mut queries_path) = (here("catalog.json"), here("queries.json"));
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--k" => k = args.next().and_then(|v| v.parse().ok()).expect("--k N"),
            "--failures" => failures = Some(args.next().expect("--failures tuning|held-out|all")),
            "--strict-lint" => strict = true,
            "--embedder" => embedder = Some(args.next().expect("--embedder BASE_URL")),
            "--model-dir" => model_dir = Some(PathBuf::from(args.next().expect("--model-dir DIR"))),
            "--embedder-weight" => {
                weight = Some(
                    args.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--embedder-weight W"),
                )
            }
            "--parts" => {
                let list = args.next().expect("--parts tuning,held-out,all");
                let list: Vec<String> = list.split(',').map(str::to_owned).collect();
                for part in &list {
                    assert!(
                        ["tuning", "held-out", "all"].contains(&part.as_str()),
                        "--parts: unknown part {part:?}; the parts are tuning, held-out and all"
                    );
                }
                only = Some(list);
            }
            "--fold" => {
                fold = Some(
                    args.next()
                        .as_deref()
                        .and_then(Fold::parse)
                        .expect("--fold I/N (fold I of N, I < N)"),
                )
            }
            "--catalog" => catalog_path = PathBuf::from(args.next().expect("--catalog PATH")),
            "--queries" => queries_path = PathBuf::from(args.next().expect("--queries PATH")),
            other => panic!("unknown argument {other:?}"),
        }
    }
    assert!(
        embedder.is_none() || model_dir.is_none(),
        "--embedder and --model-dir: one embedder at a time"
    );
    let local = model_dir.map(|dir| {
        let local = registry_embed::LocalEmbedder::load(&dir)
            .and_then(|e| e.with_cache(VECTOR_CACHE))
            .unwrap_or_else(|e| panic!("--model-dir {}: {e}", dir.display()));
        let weight = weight.unwrap_or(registry_embed::DEFAULT_WEIGHT);
        println!(
            "model: {} (digest {}), weight {weight}, vectors cached in {VECTOR_CACHE}",
            dir.display(),
            &local.model_digest()[..16]
        );
        local.with_weight(weight)
    });
    let catalog = load_catalog(&catalog_path);
    let queries = load_queries(&queries_path);
    let parts = split(&catalog, &queries, HELD_OUT_SHARE);
    println!("tuning servers: {}", parts.tuning.join(", "));
    println!("held-out servers: {}", parts.held_out.join(", "));
    if let Some(fold) = fold {
        println!(
            "queries of fold {}/{} only (upper 32 bits of FNV-1a of the query's text, mod {})",
            fold.index, fold.count, fold.count
        );
    }
    println!();
    let of = |servers: &[String]| -> (Vec<&Entry>, Vec<&Query>) {
        let inside = |name: &str| servers.iter().any(|s| s == server(name));
        (
            catalog.iter().filter(|e| inside(&e.name)).collect(),
            queries
                .iter()
                .filter(|q| q.relevant.iter().all(|n| inside(n)))
                .filter(|q| fold.is_none_or(|fold| fold.contains(&q.query)))
                .collect(),
        )
    };
    let (tuning_catalog, tuning_queries) = of(&parts.tuning);
    let (held_catalog, held_queries) = of(&parts.held_out);
    let parts = [
        Part {
            name: "tuning",
            catalog: tuning_catalog,
            queries: tuning_queries,
        },
        Part {
            name: "held-out",
            catalog: held_catalog,
            queries: held_queries,
        },
        Part {
            name: "all",
            catalog: catalog.iter().collect(),
            queries: queries
                .iter()
                .filter(|q| fold.is_none_or(|fold| fold.contains(&q.query)))
                .collect(),
        },
    ];
    println!(
        "| part | tools | queries | recall@1 | recall@{k} | MRR@{k} | low overlap: queries | recall@1 | recall@{k} | MRR@{k} | µs/search |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let wanted = |part: &Part<'_>| {
        only.as_ref()
            .is_none_or(|only| only.iter().any(|p| p == part.name))
    };
    for part in parts.iter().filter(|part| wanted(part)) {
        let meaning = match (&embedder, &local) {
            (Some(url), _) => Some(Meaning::Endpoint(url, weight.unwrap_or(1.0))),
            (None, Some(local)) => Some(Meaning::Local(local.clone())),
            (None, None) => None,
        };
        evaluate(
            part,
            k,
            strict,
            meaning,
            failures.as_deref() == Some(part.name),
        );
    }
    if let Some(local) = &local {
        let stats = local.stats();
        eprintln!(
            "embedder: {} texts computed, {} from the cache",
            stats.computed, stats.from_cache
        );
    }
}

fn evaluate(
    part: &Part<'_>,
    k: usize,
    strict: bool,
    embedder: Option<Meaning<'_>>,
    show_failures: bool,
) {
    let entries: Vec<Entry> = part.catalog.iter().map(|e| (*e).clone()).collect();
    let queries: Vec<Query> = part.queries.iter().map(|q| (*q).clone()).collect();
    let loaded = load_registry(&entries, strict, embedder);
    for (name, why) in &loaded.skipped {
        eprintln!("  {}: skipped {name}: {why}", part.name);
    }
    let run = loaded
        .registry
        .open_run("search-quality", &Subject::new("eval"));
    // The first search builds the index (and embeds the tools): not timed with the others.
    let _ = run.search("warm up", k);
    let started = Instant::now();
    let rankings: Vec<Vec<String>> = queries
        .iter()
        .map(|q| {
            run.search(&q.query, k)
                .iter()
                .map(|hit| hit.name().to_owned())
                .collect()
        })
        .collect();
    let elapsed = started.elapsed();
    let low: Vec<usize> = (0..queries.len())
        .filter(|&i| {
            let relevant: Vec<&Entry> = entries
                .iter()
                .filter(|e| queries[i].relevant.contains(&e.name))
                .collect();
            overlap(&queries[i].query, &relevant).is_low()
        })
        .collect();
    let scores = score(&queries, &rankings, k);
    let low_queries: Vec<Query> = low.iter().map(|&i| queries[i].clone()).collect();
    let low_rankings: Vec<Vec<String>> = low.iter().map(|&i| rankings[i].clone()).collect();
    let low_scores = score(&low_queries, &low_rankings, k);
    println!(
        "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {} | {:.3} | {:.3} | {:.3} | {:.1} |",
        part.name,
        run.allowed().len(),
        scores.queries,
        scores.recall_1,
        scores.recall_k,
        scores.mrr_k,
        low_scores.queries,
        low_scores.recall_1,
        low_scores.recall_k,
        low_scores.mrr_k,
        elapsed.as_secs_f64() * 1e6 / queries.len().max(1) as f64
    );
    if show_failures {
        for (i, rank) in &scores.failures {
            let q = &queries[*i];
            let at = rank.map_or("miss".to_owned(), |r| format!("rank {r}"));
            let low = if low.contains(i) {
                " (low overlap)"
            } else {
                ""
            };
            eprintln!(
                "\n[{at}]{low} {}\n   want: {}\n   got:  {}",
                q.query,
                q.relevant.join(", "),
                rankings[*i].join(", ")
            );
        }
    }
}
