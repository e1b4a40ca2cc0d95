//! Benchmarks of the two hot paths of a run, in release mode:
//!
//! - `project` (in `projection.rs`): opening a run over 10,000 tools, 858 visible, against a
//!   bitmask projection of the same data;
//! - `call`: a trivial sync tool with two small arguments given as JSON text, called through a
//!   run (`ToolCall::from_json_text` and `Run::call_blocking`) against calling the plain
//!   function directly after `serde_json::from_str` of the same text into a struct, with
//!   argument validation measured on its own so that what the registry adds besides it can be
//!   read off.
//!
//! - `content`: a tool returning a 1 MiB image (`Content::image`), called through a run and
//!   rendered as each profile's result message, against base64-encoding the same bytes once:
//!   what the content path costs beyond the one encoding that the wire needs.
//!
//! Each figure is the median of 31 batches; a batch times many iterations and divides.
//! Run: `cargo run --release --manifest-path bench/runs/Cargo.toml` (add `call`, `project` or
//! `content` to run one part).

mod projection;

use std::hint::black_box;
use std::time::{Duration, Instant};

use registry_core::{DynamicTool, Registry, Subject, ToolCall, tool, gate::{CallRequest, Decision}};
use serde::Deserialize;
use serde_json::{Value, json};

/// Add two numbers.
#[tool(public, read_only)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    println!("machine: {} cores", std::thread::available_parallelism().map_or(0, |n| n.get()));
    // `bench-runs call` (or `project`, `content`) runs only that part, e.g. under a profiler.
    let only = std::env::args().nth(1);
    let wanted = |name: &str| only.as_deref().is_none_or(|only| only == name);
    if wanted("project") {
        projection::project();
    }
    if wanted("call") {
        call();
    }
    if wanted("content") {
        content();
    }
}

fn content() {
    const SIZE: usize = 1 << 20;
    let bytes: Vec<u8> = (0..SIZE).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let image = registry_core::content::Content::image(bytes.clone(), "image/png");
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("chart", "Draw the chart.")
                .public()
                .parameters(json!({"type": "object", "properties": {}}))
                .content_handler(move |_, _| Ok::<_, String>(image.clone())),
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
    println!("content: base64 of 1 MiB alone:                          {}", show(encode));
    println!("content: a run's call returning a 1 MiB image:            {}", show(call));
    for &profile in registry_core::Profile::ALL {
        let rendered = median_per_iteration(200, || {
            black_box(profile.render(black_box(&observation)));
        });
        let ratio = rendered.as_secs_f64() / encode.as_secs_f64().max(f64::MIN_POSITIVE);
        println!("content: render as {:<24} {} ({ratio:.2}x one base64 pass)", format!("{profile}:"), show(rendered));
    }
}

/// The arguments of `add`, for calling it directly.
#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

fn call() {
    let registry = Registry::builder()
        .declared_in(["bench_runs"])
        .build()
        .expect("the benchmark registry builds");
    let run = registry.open_run("run", &Subject::new("tenant-a"));
    // The arguments as a model sends them: JSON text.
    let text = r#"{"a": 40, "b": 2}"#;
    let observation = run.call_blocking(ToolCall::from_json_text("call_1", "add", text));
    assert_eq!(observation.json(), &json!(42));
    let parsed: AddArgs = serde_json::from_str(text).expect("valid");
    assert_eq!(add(parsed.a, parsed.b), 42);

    // The plain function, called by name after parsing the text into its arguments struct;
    // its result made JSON as a run's is.
    let direct = median_per_iteration(200_000, || {
        let parsed: AddArgs = serde_json::from_str(black_box(text)).expect("valid");
        black_box(serde_json::to_value(add(parsed.a, parsed.b)).expect("json"));
    });
    let through_run = median_per_iteration(200_000, || {
        let call = ToolCall::from_json_text("call_1", "add", black_box(text));
        let _ = black_box(run.call_blocking(call));
    });
    let tool = registry.get("add").expect("registered");
    let arguments: Value = serde_json::from_str(text).expect("valid");
    let validation = median_per_iteration(200_000, || {
        black_box(tool.validate(black_box(&arguments))).expect("valid");
    });
    // The same call with the gate configured: a call policy that reads the arguments, and a
    // rate limit (generous, so that every call is admitted) counted per subject and tool.
    let gated = Registry::builder()
        .declared_in(["bench_runs"])
        .call_policy(|call: &CallRequest<'_>| match call.arguments()["a"].as_i64() {
            Some(a) if a < 0 => Decision::Deny("negative numbers are not added".into()),
            _ => Decision::Allow,
        })
        .rate_limit("1000000000/s")
        .build()
        .expect("the gated registry builds");
    let gated_run = gated.open_run("run", &Subject::new("tenant-a").with_agent("bench"));
    let through_gate = median_per_iteration(200_000, || {
        let call = ToolCall::from_json_text("call_1", "add", black_box(text));
        let _ = black_box(gated_run.call_blocking(call));
    });
    // What no run can avoid: the arguments as a JSON value, to validate them against the
    // schema the model was shown.
    let tree = median_per_iteration(200_000, || {
        black_box(serde_json::from_str::<Value>(black_box(text)).expect("valid"));
    });
    let strict = median_per_iteration(200_000, || {
        black_box(ToolCall::from_json_text("call_1", "add", black_box(text)));
    });
    let added = through_run.saturating_sub(validation).saturating_sub(direct);
    let ratio = through_run.as_secs_f64() / direct.as_secs_f64().max(f64::MIN_POSITIVE);
    let gated_ratio = through_gate.as_secs_f64() / direct.as_secs_f64().max(f64::MIN_POSITIVE);
    let tree_ratio = tree.as_secs_f64() / direct.as_secs_f64().max(f64::MIN_POSITIVE);
    println!("call: direct (from_str into a struct, add, to_value):  {}", show(direct));
    println!("call: run (from_json_text + Run::call_blocking):        {}", show(through_run));
    println!("call: run / direct:                                     {ratio:.1}x");
    println!("call: argument validation alone (compiled schema):      {}", show(validation));
    println!("call: added by the registry besides validation:         {}", show(added));
    println!("call: run with a call policy and a rate limit:          {}", show(through_gate));
    println!("call: gated run / direct:                               {gated_ratio:.1}x");
    println!("call: floor, the text parsed into a serde_json::Value:   {} ({tree_ratio:.1}x direct)", show(tree));
    println!("call: ToolCall::from_json_text alone (strict parse):    {}", show(strict));
}

/// The median over 31 batches of the time of one iteration of `body`, each batch running it
/// `iterations / 31` times (at least once).
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
