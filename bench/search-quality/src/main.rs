//! Retrieval quality of `Run::search` on the labelled queries: recall@1, recall@5, MRR@5.
//!
//!     cd bench/search-quality
//!     CARGO_TARGET_DIR=/work/target-sq cargo run --bin search-quality [-- OPTIONS]
//!
//! Options: `--k N` (depth asked of `run.search`, default 5), `--failures` (list the queries
//! whose first hit is not relevant, with what came back), `--strict-lint` (leave out the tools
//! the description lint refuses instead of keeping them with `allow_description`),
//! `--catalog PATH`, `--queries PATH`.
//!
//! Metrics (k = 5 by default; see README.md):
//! - recall@k: fraction of queries with at least one relevant tool in the top k;
//! - MRR@k: mean over queries of 1 / rank of the first relevant tool in the top k (0 if none);
//! - full recall@k: mean of |relevant ∩ top k| / min(|relevant|, k).

use std::path::PathBuf;
use std::time::Instant;

use bench_search_quality::{here, load_catalog, load_queries, load_registry, score};
use registry_core::Subject;

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut k, mut show_failures, mut strict) = (5usize, false, false);
    let (mut catalog_path, mut queries_path) = (here("catalog.json"), here("queries.json"));
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--k" => k = args.next().and_then(|v| v.parse().ok()).expect("--k N"),
            "--failures" => show_failures = true,
            "--strict-lint" => strict = true,
            "--catalog" => catalog_path = PathBuf::from(args.next().expect("--catalog PATH")),
            "--queries" => queries_path = PathBuf::from(args.next().expect("--queries PATH")),
            other => panic!("unknown argument {other:?}"),
        }
    }
    let catalog = load_catalog(&catalog_path);
    let queries = load_queries(&queries_path);
    let loaded = load_registry(&catalog, strict);
    let run = loaded
        .registry
        .open_run("search-quality", &Subject::new("eval"));
    println!(
        "catalog: {} tools ({} kept with allow_description, {} skipped); the run sees {}",
        catalog.len(),
        loaded.allowed.len(),
        loaded.skipped.len(),
        run.allowed().len()
    );
    for (name, why) in &loaded.skipped {
        println!("  skipped {name}: {why}");
    }

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

    let scores = score(&queries, &rankings, k);
    println!(
        "{} queries in {:.1} ms ({:.1} µs each)\n",
        queries.len(),
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e6 / queries.len() as f64
    );
    print!("{}", scores.table());
    println!(
        "\nrecall@1 {:.3}  recall@{k} {:.3}  MRR@{k} {:.3}  full recall@{k} {:.3}  (goal: recall@5 >= 0.9)",
        scores.recall_1, scores.recall_k, scores.mrr_k, scores.full_recall_k
    );
    let misses = scores
        .failures
        .iter()
        .filter(|(_, rank)| rank.is_none())
        .count();
    println!(
        "{} queries with no relevant tool in the top {k}; {} with one below rank 1",
        misses,
        scores.failures.len() - misses
    );
    if show_failures {
        for (i, rank) in &scores.failures {
            let q = &queries[*i];
            let at = rank.map_or("miss".to_owned(), |r| format!("rank {r}"));
            println!(
                "\n[{at}] {}\n   want: {}\n   got:  {}",
                q.query,
                q.relevant.join(", "),
                rankings[*i].join(", ")
            );
        }
    }
}
