//! Threads are bounded: however many callers embed at once, the model computes on the
//! embedder's own pool of `threads()` threads, and no call starts threads of its own.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use registry_core::search::Embedder;
use registry_embed::{LocalEmbedder, MAX_THREADS};

use common::model_dir;

/// The threads of this process named as the embedder names its own.
fn embed_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("registry-embed"))
        .count()
}

#[test]
fn many_callers_share_a_bounded_pool() {
    let embedder = LocalEmbedder::load(model_dir())
        .unwrap()
        .with_threads(2)
        .unwrap();
    assert_eq!(embedder.threads(), 2);
    let texts = [
        "list the open pull requests",
        "merge a branch",
        "close an issue",
    ];
    let expected = embedder.embed(&texts).unwrap();
    let done = AtomicBool::new(false);
    let most = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                most.fetch_max(embed_threads(), Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        let callers: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    for round in 0..5 {
                        // Queries are never cached: each is computed, on the pool.
                        let text = texts[round % 3];
                        let vector = embedder.embed_query(text).unwrap();
                        assert_eq!(
                            vector,
                            expected[round % 3],
                            "the same text, the same vector"
                        );
                    }
                })
            })
            .collect();
        callers
            .into_iter()
            .for_each(|caller| caller.join().unwrap());
        done.store(true, Ordering::Relaxed);
    });
    // The pool of 2: never a thread per caller.
    let most = most.load(Ordering::Relaxed);
    assert!(most <= 2, "{most} threads computed at once");
    assert_eq!(embedder.stats().queries, 8 * 5);
    // Asked for none or too many: bounded both ways.
    assert_eq!(embedder.clone().with_threads(0).unwrap().threads(), 1);
    assert_eq!(
        embedder.clone().with_threads(10_000).unwrap().threads(),
        MAX_THREADS
    );
}
