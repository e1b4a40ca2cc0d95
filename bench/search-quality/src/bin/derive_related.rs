//! Derives registry-core's hand-written table of related words
//! (`registry-core/src/project/index/synonyms.rs`) from the **tuning part** of the labelled
//! set only, so that no pair of it exists because of a held-out query.
//!
//!     cd bench/search-quality
//!     cargo run --release --bin derive-related > /tmp/related.rs   # then paste RELATED
//!
//! **The rule.** The candidates are the groups of `related-candidates.txt` (written by hand,
//! beside the whole set: a pool, not a table). For each ordered pair `a -> b` of words of one
//! group (their stems distinct), the pair is kept when at least one query of the tuning part
//! ([`split`], the one `search-quality` uses) has the term `a`, and one of its relevant tools
//! has the term `b` but not `a`: a tuning query that needed that bridge. Terms are the
//! index's: words split on non-alphanumerics and case, lowercased, stemmed with Snowball's
//! English (`pagefind_stem`, the index's stemmer). Nothing else is weighed: no ranking is
//! run, no held-out query or tool is read (they are filtered out before any word is looked
//! at).
//!
//! `--leave-out I/N` (cross-fitting inside the tuning part, [`Fold`]): the tuning queries of
//! fold `I` of `N` are left out too, so the table is derived from the other folds' queries
//! alone and fold `I` can be evaluated on queries it did not see
//! (`search-quality --parts tuning --fold I/N`).
//!
//! The output is the Rust `RELATED` array, `(word, &[related words])`, sorted, each line with
//! the number of tuning queries that evidence it (`cargo fmt` aligns it).

use std::collections::{BTreeMap, BTreeSet};

use bench_search_quality::{
    Entry, Fold, here, load_catalog, load_queries, server, split, tool_words, words,
};
use pagefind_stem::{Algorithm, Stemmer};

/// The held-out part's share, as `search-quality` has it.
const HELD_OUT_SHARE: f64 = 0.4;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut leave_out = None::<Fold>;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--leave-out" => {
                leave_out = Some(
                    args.next()
                        .as_deref()
                        .and_then(Fold::parse)
                        .expect("--leave-out I/N (fold I of N, I < N)"),
                )
            }
            other => panic!("unknown argument {other:?}"),
        }
    }
    let catalog = load_catalog(&here("catalog.json"));
    let queries = load_queries(&here("queries.json"));
    let parts = split(&catalog, &queries, HELD_OUT_SHARE);
    let tuning = |name: &str| parts.tuning.iter().any(|s| s == server(name));
    // Only the tuning part from here on.
    let tools: BTreeMap<&str, &Entry> = catalog
        .iter()
        .filter(|e| tuning(&e.name))
        .map(|e| (e.name.as_str(), e))
        .collect();
    let queries: Vec<_> = queries
        .iter()
        .filter(|q| q.relevant.iter().all(|n| tuning(n)))
        .filter(|q| leave_out.is_none_or(|fold| !fold.contains(&q.query)))
        .collect();
    let stemmer = Stemmer::create(Algorithm::English);
    let stems = |list: Vec<String>| -> BTreeSet<String> {
        list.iter().map(|w| stemmer.stem(w).into_owned()).collect()
    };
    let tool_terms: BTreeMap<&str, BTreeSet<String>> = tools
        .iter()
        .map(|(name, entry)| (*name, stems(tool_words(entry))))
        .collect();
    let query_terms: Vec<(BTreeSet<String>, Vec<&BTreeSet<String>>)> = queries
        .iter()
        .map(|q| {
            let relevant = q
                .relevant
                .iter()
                .filter_map(|n| tool_terms.get(n.as_str()))
                .collect();
            (stems(words(&q.query)), relevant)
        })
        .collect();
    let candidates =
        std::fs::read_to_string(here("related-candidates.txt")).expect("related-candidates.txt");
    // word -> related word -> tuning queries that evidence it.
    let mut kept: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let (mut pairs, mut groups) = (0usize, 0usize);
    for line in candidates.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        groups += 1;
        let group: Vec<&str> = line.split_whitespace().collect();
        for a in &group {
            for b in &group {
                let (sa, sb) = (stemmer.stem(a), stemmer.stem(b));
                if sa == sb {
                    continue;
                }
                pairs += 1;
                let evidence = query_terms
                    .iter()
                    .filter(|(terms, relevant)| {
                        terms.contains(sa.as_ref())
                            && relevant
                                .iter()
                                .any(|t| t.contains(sb.as_ref()) && !t.contains(sa.as_ref()))
                    })
                    .count();
                if evidence > 0 {
                    let entry = kept.entry((*a).to_owned()).or_default();
                    let count = entry.entry((*b).to_owned()).or_default();
                    *count = (*count).max(evidence);
                }
            }
        }
    }
    let kept_pairs: usize = kept.values().map(BTreeMap::len).sum();
    println!(
        "// Derived by bench/search-quality's `derive-related` from {groups} candidate groups"
    );
    let left_out = leave_out.map_or(String::new(), |fold| {
        format!(" (fold {}/{} left out)", fold.index, fold.count)
    });
    println!(
        "// ({pairs} ordered pairs): {kept_pairs} pairs kept, evidenced by the tuning part's {} \
         queries{left_out} over {} tools.",
        queries.len(),
        tools.len()
    );
    println!("pub(crate) const RELATED: &[(&str, &[&str])] = &[");
    for (word, related) in &kept {
        let list: Vec<String> = related.keys().map(|w| format!("{w:?}")).collect();
        let counts: Vec<String> = related.values().map(usize::to_string).collect();
        println!(
            "    ({word:?}, &[{}]), // tuning queries: {}",
            list.join(", "),
            counts.join(", ")
        );
    }
    println!("];");
}
