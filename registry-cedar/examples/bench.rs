//! The cost of Cedar at the boundary, measured against the same work without it (issue 36's
//! goals: a call decision with 200 policies adds at most 20 µs at p99; `open_run` over 1,000
//! tools with 50 policies stays under 5 ms). A subject's decisions are specialised to it with
//! Cedar's partial evaluation and kept, so the figures separate what is left per call from
//! the worst case, where every policy reads the arguments.
//!
//! `cargo run --release --manifest-path registry-cedar/Cargo.toml --example bench`
//!
//! Figures are wall-clock times of one process on this machine, each ratio from the same run.

use std::time::{Duration, Instant};

use registry_cedar::CedarPolicies;
use registry_core::gate::{CallRequest, Decision};
use registry_core::{DynamicTool, Registry, RegistryBuilder, Subject, ToolCall};
use serde_json::json;

/// `n` policies: one permit, the rest forbids that never apply to the benchmark's calls, each
/// with a condition on the principal, the tool and the arguments, as a real set has. For the
/// benchmark's subject, partial evaluation settles every one of them before the arguments.
fn policies(n: usize) -> String {
    let mut text = String::from(
        "@id(\"permit\") permit(principal, action, resource) when { principal.scopes.contains(\"ops:read\") };\n",
    );
    for i in 1..n {
        text.push_str(&format!(
            "@id(\"p{i}\") forbid(principal, action == Action::\"call\", resource) when {{ principal.tenant == \"t{i}\" && resource.destructive && context.arguments has n && context.arguments.n > {i} }};\n"
        ));
    }
    text
}

/// The worst case: the same number of policies, every forbid reading only the arguments, so
/// that each is left to evaluate on every call.
fn argument_policies(n: usize) -> String {
    let mut text = String::from(
        "@id(\"permit\") permit(principal, action, resource) when { principal.scopes.contains(\"ops:read\") };\n",
    );
    for i in 1..n {
        text.push_str(&format!(
            "@id(\"p{i}\") forbid(principal, action == Action::\"call\", resource) when {{ context.arguments has n && context.arguments.n > {} }};\n",
            1000 + i
        ));
    }
    text
}

fn tool(name: String) -> DynamicTool {
    DynamicTool::new(name, "Read a number back.")
        .scopes(["ops:read"])
        .read_only()
        .parameters(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .non_blocking()
        .handler(|_, args| Ok::<_, String>(args["n"].clone()))
}

fn builder(tools: usize) -> RegistryBuilder {
    (0..tools).fold(Registry::builder(), |builder, i| {
        builder.tool(tool(format!("tool_{i:05}")))
    })
}

fn subject() -> Subject {
    Subject::new("acme").with_scopes(["ops:read"])
}

/// The p50 and p99 of `samples`.
fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |percent: usize| samples[(samples.len() - 1) * percent / 100];
    (at(50), at(99))
}

fn calls(registry: &Registry, n: usize) -> (Duration, Duration) {
    let run = registry.open_run("bench", &subject());
    for _ in 0..500 {
        let _ = run.call_blocking(ToolCall::new("c", "tool_00000", json!({"n": 1})));
    }
    let samples = (0..n)
        .map(|_| {
            let started = Instant::now();
            let observation = run.call_blocking(ToolCall::new("c", "tool_00000", json!({"n": 1})));
            let elapsed = started.elapsed();
            assert!(!observation.is_error(), "{observation:?}");
            elapsed
        })
        .collect();
    percentiles(samples)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    println!("## A call decision (call_blocking of a 1-argument tool, 5,000 calls each)\n");
    println!(
        "Cedar: the policies settle for the subject before the arguments (partial evaluation \
         leaves nothing to evaluate per call). Cedar, on the arguments: every forbid reads only \
         the arguments, so every one is evaluated on every call (the worst case).\n"
    );
    println!(
        "| policies | closure policy p50 / p99 (µs) | Cedar p50 / p99 (µs) | added at p99 (µs) | goal: ≤ 20 µs | Cedar, on the arguments p50 / p99 (µs) | added at p99 (µs) |"
    );
    println!("| ---: | ---: | ---: | ---: | --- | ---: | ---: |");
    let closure = builder(10)
        .call_policy(|call: &CallRequest<'_>| {
            if call.subject().has_scope("ops:read") {
                Decision::Allow
            } else {
                Decision::Deny("no".into())
            }
        })
        .build()
        .unwrap();
    for n in [1, 20, 200] {
        let (base50, base99) = calls(&closure, 5_000);
        let registry = builder(10)
            .policies(CedarPolicies::parse(&policies(n)).unwrap())
            .build()
            .unwrap();
        let (c50, c99) = calls(&registry, 5_000);
        let registry = builder(10)
            .policies(CedarPolicies::parse(&argument_policies(n)).unwrap())
            .build()
            .unwrap();
        let (a50, a99) = calls(&registry, 5_000);
        let added = micros(c99) - micros(base99);
        println!(
            "| {n} | {:.1} / {:.1} | {:.1} / {:.1} | {added:.1} | {} | {:.1} / {:.1} | {:.1} |",
            micros(base50),
            micros(base99),
            micros(c50),
            micros(c99),
            if added <= 20.0 { "met" } else { "missed" },
            micros(a50),
            micros(a99),
            micros(a99) - micros(base99),
        );
    }

    println!("\n## open_run with 50 policies (a subject's first run, then its next ones)\n");
    println!(
        "| tools | without Cedar, first / next (ms) | Cedar, first / next (ms) | ratio first | goal: first < 5 ms at 1,000 |"
    );
    println!("| ---: | ---: | ---: | ---: | --- |");
    for tools in [1_000, 10_000] {
        let plain = builder(tools).build().unwrap();
        let (plain_first, plain_next) = opens(&plain, tools);
        let cedar = CedarPolicies::parse(&policies(50)).unwrap();
        let registry = builder(tools).policies(cedar).build().unwrap();
        let (first, next) = opens(&registry, tools);
        let goal = match tools {
            1_000 if first.as_secs_f64() * 1e3 < 5.0 => "met",
            1_000 => "missed",
            _ => "-",
        };
        println!(
            "| {tools} | {:.2} / {:.2} | {:.2} / {:.2} | {:.1}x | {goal} |",
            millis(plain_first),
            millis(plain_next),
            millis(first),
            millis(next),
            first.as_secs_f64() / plain_first.as_secs_f64(),
        );
    }
}

/// The first `open_run` of a subject on `registry`, and the mean of its next 20.
fn opens(registry: &Registry, tools: usize) -> (Duration, Duration) {
    let started = Instant::now();
    let first = registry.open_run("first", &subject());
    let first_time = started.elapsed();
    assert_eq!(first.allowed().len(), tools);
    let runs = 20;
    let started = Instant::now();
    for i in 0..runs {
        let _ = registry.open_run(format!("r{i}"), &subject());
    }
    (first_time, started.elapsed() / runs)
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
