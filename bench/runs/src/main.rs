//! Benchmarks of the two hot paths of a run, in release mode:
//!
//! - `project` (in `projection.rs`): opening a run over 10,000 tools, 858 visible, against a
//!   bitmask projection of the same data;
//! - `call` (`call.rs`): a trivial sync tool with two small arguments given as JSON text,
//!   through every way of calling it (text, parsed value, async, with a gate) and through
//!   rmcp's `ToolRouter::call`, each against calling the plain function directly after
//!   `serde_json::from_str` of the same text into a struct;
//! - `content`: a tool returning a 1 MiB image (`Content::image`), called through a run and
//!   rendered as each profile's result message, against base64-encoding the same bytes once:
//!   what the content path costs beyond the one encoding that the wire needs.
//!
//! Each figure is the median of 31 batches; a batch times many iterations and divides. After
//! `project` and `call`, issue 22's table of goals (`goals.rs`): each goal of what ran, with
//! its ratio from this run.
//! Run: `cargo run --release --manifest-path bench/runs/Cargo.toml` (add `call`, `project` or
//! `content` to run one part; `call-loop PATH [CALLS]` loops one path of `call`, for a
//! profiler or, with `CALLS`, for `instructions.py`, which counts each path's instructions per
//! call under callgrind). `spaced`: async calls 1 ms apart, the CPU of the hop to the
//! pool when calls come far apart (`call::spaced`). `large-call`: calls in a run of 858 of
//! 10,000 tools, each in turn (`projection::large_call`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use registry_core::{DynamicTool, Registry, Subject, ToolCall};
use serde_json::json;

mod call;
mod goals;
mod projection;

fn main() {
    println!(
        "machine: {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    // `bench-runs call` (or `project`, `content`) runs only that part, e.g. under a profiler.
    let only = std::env::args().nth(1);
    let wanted = |name: &str| only.as_deref().is_none_or(|only| only == name);
    let mut goals = Vec::new();
    if wanted("project") {
        goals.extend(projection::project());
    }
    if wanted("call") {
        goals.extend(call::call());
    }
    if !goals.is_empty() {
        goals::print(&goals);
    }
    if only.as_deref() == Some("large-call") {
        projection::large_call();
    }
    if only.as_deref() == Some("spaced") {
        call::spaced();
    }
    if only.as_deref() == Some("project-loop") {
        projection::project_loop(std::env::args().nth(2).as_deref() == Some("new"));
        return;
    }
    if only.as_deref() == Some("call-loop") {
        call::call_loop(&std::env::args().nth(2).unwrap_or_default());
        return;
    }
    if wanted("content") {
        content();
    }
}

fn content() {
    const SIZE: usize = 1 << 20;
    let bytes: Vec<u8> = (0..SIZE)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let image = registry_core::content::Content::image(bytes.clone(), "image/png");
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("chart", "Draw the chart.")
                .public()
                .parameters(json!({"type": "object", "properties": {}}))
                .handler(move |_, _| Ok::<_, String>(image.clone())),
        )
        .build()
        .expect("the benchmark registry builds");
    let run = registry.open_run("bench", &Subject::new("acme"));
    let observation = run.call_blocking(ToolCall::new("c1", "chart", json!({})));
    assert!(!observation.is_error(), "{observation:?}");
    let media = registry_core::content::Media::new(bytes, "image/png");
    let encode = median_per_iteration(200, || {
        black_box(black_box(&media).base64());
    });
    let call = median_per_iteration(20_000, || {
        let _ = black_box(run.call_blocking(ToolCall::new("c1", "chart", json!({}))));
    });
    println!(
        "content: base64 of 1 MiB alone:                          {}",
        show(encode)
    );
    println!(
        "content: a run's call returning a 1 MiB image:            {}",
        show(call)
    );
    for &profile in registry_core::Profile::ALL {
        let rendered = median_per_iteration(200, || {
            black_box(profile.render(black_box(&observation)));
        });
        let ratio = rendered.as_secs_f64() / encode.as_secs_f64().max(f64::MIN_POSITIVE);
        println!(
            "content: render as {:<24} {} ({ratio:.2}x one base64 pass)",
            format!("{profile}:"),
            show(rendered)
        );
    }
}

fn median_per_iteration(iterations: u32, mut body: impl FnMut()) -> Duration {
    let per_batch = (iterations / 31).max(1);
    for _ in 0..per_batch {
        body();
    }
    let mut batches: Vec<Duration> = (0..31)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..per_batch {
                body();
            }
            start.elapsed() / per_batch
        })
        .collect();
    batches.sort();
    batches[15]
}

fn show(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos >= 10_000 {
        format!("{:.1} µs", nanos as f64 / 1000.0)
    } else {
        format!("{nanos} ns")
    }
}
