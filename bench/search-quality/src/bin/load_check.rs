//! Checks that the catalog loads into a registry (names, schemas, the description lint) and
//! that one run sees every tool; needs no `Run::search`.
//!
//!     CARGO_TARGET_DIR=/work/target-sq cargo run --bin load-check [-- --strict-lint]

use bench_search_quality::{here, load_catalog, load_queries, load_registry};
use registry_core::Subject;

fn main() {
    let strict = std::env::args().any(|a| a == "--strict-lint");
    let catalog = load_catalog(&here("catalog.json"));
    let queries = load_queries(&here("queries.json"));
    let loaded = load_registry(&catalog, strict, None);
    let run = loaded
        .registry
        .open_run("search-quality", &Subject::new("eval"));
    println!(
        "catalog: {} tools; registry: {}; the run sees {}",
        catalog.len(),
        loaded.registry.names().count(),
        run.allowed().len()
    );
    for (name, rules) in &loaded.allowed {
        println!("kept with allow_description: {name}: {}", rules.join("; "));
    }
    for (name, why) in &loaded.skipped {
        println!("skipped: {name}: {why}");
    }
    let mut unknown = 0;
    for q in &queries {
        for name in &q.relevant {
            if loaded.registry.get(name).is_none() {
                unknown += 1;
                println!(
                    "query {:?}: relevant tool {name} is not in the registry",
                    q.query
                );
            }
        }
    }
    println!(
        "queries: {}; labels not in the registry: {unknown}",
        queries.len()
    );
}
