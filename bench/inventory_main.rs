//! The timing binary of `python3 bench/run.py inventory`, copied beside the generated crate of
//! `#[tool]` functions (`bench_inventory`, a library) as its `src/main.rs`.
//!
//! Usage: `bench_inventory [ITERS [HEAVY_ITERS]]`. Prints one `RESULT {json}` line per figure.

use std::hint::black_box;
use std::time::{Duration, Instant};

use registry_core::Registry;
use registry_core::__private::{Declaration, inventory};

registry_core::link!(bench_inventory);

fn result(label: &str, times: &mut [Duration]) {
    if times.is_empty() {
        return;
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let n = times.len();
    let median = if n % 2 == 1 {
        ms(times[n / 2])
    } else {
        (ms(times[n / 2 - 1]) + ms(times[n / 2])) / 2.0
    };
    println!(
        "RESULT {{\"what\": \"{label}\", \"runs\": {n}, \"min_ms\": {:.3}, \"median_ms\": {median:.3}, \"max_ms\": {:.3}}}",
        ms(times[0]),
        ms(times[n - 1]),
    );
}

fn time<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let value = f();
    (start.elapsed(), value)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let iters: usize = args.next().map_or(30, |a| a.parse().expect("ITERS"));
    let heavy_iters: usize = args.next().map_or(5, |a| a.parse().expect("HEAVY_ITERS"));
    let expected = bench_inventory::TOOLS;

    // 0. The very first call of the process: static records not yet touched (page faults).
    let (first, registry) = time(|| Registry::from_inventory().expect("registry"));
    assert_eq!(registry.len(), expected, "every tool linked");
    drop(registry);
    result("first_from_inventory", &mut [first]);

    // 1. from_inventory: collect, check names and scopes, sort, detect duplicates.
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let (elapsed, registry) = time(|| Registry::from_inventory().expect("registry"));
        assert_eq!(registry.len(), expected);
        times.push(elapsed);
    }
    result("from_inventory", &mut times);

    // 1b. Its parts: walking the registration list alone, and walking it + sorting by name.
    let mut walk = Vec::with_capacity(iters);
    let mut walk_sort = Vec::with_capacity(iters);
    let mut walk_sort_unstable = Vec::with_capacity(iters);
    for _ in 0..iters {
        let (elapsed, count) = time(|| inventory::iter::<Declaration>.into_iter().count());
        assert_eq!(count, expected);
        walk.push(elapsed);
        let (elapsed, list) = time(|| {
            let mut list: Vec<&'static Declaration> = inventory::iter::<Declaration>.into_iter().collect();
            list.sort_by_key(|declaration| (declaration.name, declaration.location));
            list
        });
        black_box(list);
        walk_sort.push(elapsed);
        // The same order, by an unstable sort on the name with the location as tie-break.
        let (elapsed, list) = time(|| {
            let mut list: Vec<&'static Declaration> = inventory::iter::<Declaration>.into_iter().collect();
            list.sort_unstable_by(|a, b| a.name.cmp(b.name).then_with(|| a.location.cmp(&b.location)));
            list
        });
        black_box(list);
        walk_sort_unstable.push(elapsed);
    }
    result("inventory_walk_only", &mut walk);
    result("inventory_walk_and_sort", &mut walk_sort);
    result("inventory_walk_and_sort_unstable", &mut walk_sort_unstable);

    // 1c. The filtered form: every tool under the crate's module path.
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let (elapsed, registry) = time(|| {
            Registry::builder()
                .declared_in(["bench_inventory"])
                .build()
                .expect("registry")
        });
        assert_eq!(registry.len(), expected);
        times.push(elapsed);
    }
    result("builder_declared_in", &mut times);

    // 2. definition() of every tool once: the JSON Schema is generated lazily, on first use.
    let mut times = Vec::with_capacity(heavy_iters);
    let mut bytes = 0;
    for _ in 0..heavy_iters {
        let registry = Registry::from_inventory().expect("registry");
        let (elapsed, ()) = time(|| {
            for tool in &registry {
                black_box(tool.definition());
            }
        });
        times.push(elapsed);
        bytes = registry
            .iter()
            .map(|tool| tool.definition().parameters.to_string().len())
            .sum::<usize>();
    }
    if heavy_iters > 0 {
        println!("schemas: {bytes} bytes of JSON in all, {} bytes per tool", bytes / expected);
    }
    result("all_definitions", &mut times);

    // 3. The first validation of every tool: compiles its schema into a validator, once.
    let mut times = Vec::with_capacity(heavy_iters);
    let arguments = serde_json::json!({});
    for _ in 0..heavy_iters {
        let registry = Registry::from_inventory().expect("registry");
        for tool in &registry {
            tool.definition();
        }
        let (elapsed, ()) = time(|| {
            for tool in &registry {
                let _ = black_box(tool.validate(&arguments));
            }
        });
        times.push(elapsed);
    }
    result("all_validators_after_definitions", &mut times);
}
