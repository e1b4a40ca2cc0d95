//! `bench-runs call`: one trivial sync tool, `add(a, b)`, with its arguments as a model sends
//! them (JSON text), through every way of calling it, side by side in one run, each with its
//! ratio to the direct call:
//!
//! - **direct**: `serde_json::from_str` of the text into the arguments struct, the function,
//!   `serde_json::to_value` of its result: the floor;
//! - **text**: `ToolCall::from_json_text` + `Run::call_blocking`, the default gate (no
//!   policy, no rate limit, no audit sink);
//! - **value**: the text already parsed into a `serde_json::Value` (parsed before the timing),
//!   `ToolCall::new` + `Run::call_blocking`;
//! - **async**: `ToolCall::from_json_text` + `Run::call`, awaited on a current-thread Tokio
//!   runtime (one `block_on` per batch of calls);
//! - **async tool** and **async non_blocking**: the same through `Run::call`, with `add` as an
//!   `async fn` and as a synchronous function declared `#[tool(non_blocking)]`, both run on
//!   the caller's task without the hop to the pool;
//! - **gated**: the text path with a call policy that reads the arguments and a rate limit
//!   (generous, so that every call is admitted), blocking and async; **gated, one argument**:
//!   the same policy reading its one argument with `CallRequest::argument` instead of the
//!   whole `CallRequest::arguments` value;
//! - **rmcp**: rmcp 3.11's `ToolRouter::call` on the same function (`#[tool_router]`,
//!   `Parameters<AddRequest>`; rmcp does not validate the arguments against the schema), on
//!   the same runtime: from the text (parsed into rmcp's `JsonObject` first, as its server
//!   does with a request), and from an object parsed before the timing.
//!
//! Every figure is the median of 31 batches, in CPU time of the process (see
//! `median_batches_with`).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use registry_core::gate::{CallRequest, Decision};
use registry_core::{Registry, Subject, ToolCall, tool};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, JsonObject, NumberOrString, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, schemars, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::goals::Goal;

/// Add two numbers.
#[tool(public, read_only)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// `add` as an `async fn`: `Run::call` polls it on the caller's task, where a synchronous
/// tool goes to the registry's pool of threads.
#[tool(public, read_only)]
async fn add_async(a: i64, b: i64) -> i64 {
    a + b
}

/// `add` declared `non_blocking`: `Run::call` runs it on the caller's task, as it would an
/// `async fn`, instead of hopping to the pool and back.
#[tool(public, read_only, non_blocking)]
fn add_here(a: i64, b: i64) -> i64 {
    a + b
}

/// `add` declared `blocking`: `Run::call` always runs it on the registry's pool, as every
/// synchronous tool ran before quick tools ran inline.
#[tool(public, read_only, blocking)]
fn add_pooled(a: i64, b: i64) -> i64 {
    a + b
}

/// The arguments of `add`, for calling it directly and through rmcp.
#[derive(Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// The same function as an rmcp tool, the way an rmcp user writes one.
#[derive(Clone)]
struct Bare {
    tool_router: Arc<ToolRouter<Bare>>,
}

#[tool_router]
impl Bare {
    /// Add two numbers.
    #[rmcp::tool(annotations(read_only_hint = true))]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        add(a, b).to_string()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

const TEXT: &str = r#"{"a": 40, "b": 2}"#;
const ITERATIONS: u32 = 200_000;

pub fn call() -> Vec<Goal> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let registry = Registry::builder()
        .declared_in(["bench_runs"])
        .build()
        .expect("the benchmark registry builds");
    let run = registry.open_run("run", &Subject::new("tenant-a"));
    let observation = run.call_blocking(ToolCall::from_json_text("call_1", "add", TEXT));
    assert_eq!(observation.json(), &json!(42));
    let parsed: AddArgs = serde_json::from_str(TEXT).expect("valid");
    assert_eq!(add(parsed.a, parsed.b), 42);

    // The gate configured: a call policy that reads the arguments, and a rate limit counted
    // per subject and tool.
    let gated = gated_registry(false);
    let gated_run = gated.open_run("run", &Subject::new("tenant-a").with_agent("bench"));
    let observation = gated_run.call_blocking(ToolCall::from_json_text("call_1", "add", TEXT));
    assert_eq!(observation.json(), &json!(42));
    let gated_one = gated_registry(true);
    let gated_one_run = gated_one.open_run("run", &Subject::new("tenant-a").with_agent("bench"));
    let observation = gated_one_run.call_blocking(ToolCall::from_json_text("call_1", "add", TEXT));
    assert_eq!(observation.json(), &json!(42));

    // rmcp: a request context needs a peer, which only a running service gives; one served
    // over an in-memory pipe, never written to.
    let bare = Bare {
        tool_router: Arc::new(Bare::tool_router()),
    };
    let (pipe, _other_end) = tokio::io::duplex(1 << 16);
    let service =
        runtime.block_on(async { rmcp::service::serve_directly(bare.clone(), pipe, None) });
    let context =
        RequestContext::<RoleServer>::new(NumberOrString::Number(1), service.peer().clone());
    let rmcp_call = |arguments: JsonObject| {
        let request = CallToolRequestParams::new("add").with_arguments(arguments);
        let call = ToolCallContext::new(&bare, request, context.clone());
        bare.tool_router.call(call)
    };
    let object: JsonObject = serde_json::from_str(TEXT).expect("an object");
    let answer = runtime
        .block_on(rmcp_call(object.clone()))
        .expect("rmcp answers");
    assert!(format!("{answer:?}").contains("42"), "{answer:?}");

    let direct = median_batches(ITERATIONS, |n| {
        for _ in 0..n {
            let parsed: AddArgs = serde_json::from_str(black_box(TEXT)).expect("valid");
            black_box(serde_json::to_value(add(parsed.a, parsed.b)).expect("json"));
        }
    });
    let text = median_batches(ITERATIONS, |n| {
        for _ in 0..n {
            let call = ToolCall::from_json_text("call_1", "add", black_box(TEXT));
            let _ = black_box(run.call_blocking(call));
        }
    });
    let arguments: Value = serde_json::from_str(TEXT).expect("valid");
    let value = median_batches_with(
        ITERATIONS,
        |n| {
            (0..n)
                .map(|_| ToolCall::new("call_1", "add", arguments.clone()))
                .collect::<Vec<_>>()
        },
        |calls| {
            for call in calls {
                let _ = black_box(run.call_blocking(call));
            }
        },
    );
    let in_async = median_batches(ITERATIONS, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                let call = ToolCall::from_json_text("call_1", "add", black_box(TEXT));
                let _ = black_box(run.call(call).await);
            }
        })
    });
    // The same on a multi-threaded runtime (two workers), from a task on a worker.
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a multi-threaded runtime");
    let shared = Arc::new(registry.open_run("run", &Subject::new("tenant-a")));
    let in_async_multi = median_batches(ITERATIONS, |n| {
        let run = shared.clone();
        multi
            .block_on(multi.spawn(async move {
                for _ in 0..n {
                    let call = ToolCall::from_json_text("call_1", "add", black_box(TEXT));
                    let _ = black_box(run.call(call).await);
                }
            }))
            .expect("the task ends");
    });
    let pooled = median_batches(ITERATIONS, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                let call = ToolCall::from_json_text("call_1", "add_pooled", black_box(TEXT));
                let _ = black_box(run.call(call).await);
            }
        })
    });
    let async_tool = median_batches(ITERATIONS, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                let call = ToolCall::from_json_text("call_1", "add_async", black_box(TEXT));
                let _ = black_box(run.call(call).await);
            }
        })
    });
    let non_blocking = median_batches(ITERATIONS, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                let call = ToolCall::from_json_text("call_1", "add_here", black_box(TEXT));
                let _ = black_box(run.call(call).await);
            }
        })
    });
    let gated_text = median_batches(ITERATIONS, |n| {
        for _ in 0..n {
            let call = ToolCall::from_json_text("call_1", "add", black_box(TEXT));
            let _ = black_box(gated_run.call_blocking(call));
        }
    });
    let gated_one_text = median_batches(ITERATIONS, |n| {
        for _ in 0..n {
            let call = ToolCall::from_json_text("call_1", "add", black_box(TEXT));
            let _ = black_box(gated_one_run.call_blocking(call));
        }
    });
    let gated_async = median_batches(ITERATIONS, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                let call = ToolCall::from_json_text("call_1", "add", black_box(TEXT));
                let _ = black_box(gated_run.call(call).await);
            }
        })
    });
    let gated_non_blocking = median_batches(ITERATIONS, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                let call = ToolCall::from_json_text("call_1", "add_here", black_box(TEXT));
                let _ = black_box(gated_run.call(call).await);
            }
        })
    });
    let rmcp_text = median_batches(ITERATIONS, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                let object: JsonObject = serde_json::from_str(black_box(TEXT)).expect("object");
                let _ = black_box(rmcp_call(object).await);
            }
        })
    });
    let rmcp_object = median_batches_with(
        ITERATIONS,
        |n| (0..n).map(|_| object.clone()).collect::<Vec<_>>(),
        |objects| {
            runtime.block_on(async {
                for object in objects {
                    let _ = black_box(rmcp_call(object).await);
                }
            })
        },
    );
    // Parts, for reading where the time goes.
    let tool = registry.get("add").expect("registered");
    let validation = median_batches(ITERATIONS, |n| {
        for _ in 0..n {
            black_box(tool.validate(black_box(&arguments))).expect("valid");
        }
    });
    let tree = median_batches(ITERATIONS, |n| {
        for _ in 0..n {
            black_box(serde_json::from_str::<Value>(black_box(TEXT)).expect("valid"));
        }
    });

    let ratio = |time: Duration| time.as_secs_f64() / direct.as_secs_f64().max(f64::MIN_POSITIVE);
    let rows = [
        ("direct: from_str into the struct, add, to_value", direct),
        ("text: from_json_text + Run::call_blocking", text),
        ("value: parsed Value + Run::call_blocking", value),
        (
            "async: from_json_text + Run::call (current thread)",
            in_async,
        ),
        (
            "async: the same on a multi-threaded runtime's worker",
            in_async_multi,
        ),
        (
            "async, the tool `blocking`: on the pool (current thread)",
            pooled,
        ),
        (
            "async tool: add_async through Run::call (no pool hop)",
            async_tool,
        ),
        (
            "async non_blocking: add_here through Run::call",
            non_blocking,
        ),
        (
            "gated text: call policy + rate limit, call_blocking",
            gated_text,
        ),
        (
            "gated text, the policy reading one argument",
            gated_one_text,
        ),
        (
            "gated async: call policy + rate limit, Run::call",
            gated_async,
        ),
        (
            "gated async non_blocking: add_here, Run::call",
            gated_non_blocking,
        ),
        ("rmcp 3.11 ToolRouter::call, from the text", rmcp_text),
        (
            "rmcp 3.11 ToolRouter::call, from a parsed object",
            rmcp_object,
        ),
        ("part: jsonschema validation of the Value alone", validation),
        ("part: the text parsed into a serde_json::Value", tree),
    ];
    println!("call: {:<54} {:>9} {:>9}", "path", "time", "x direct");
    for (name, time) in rows {
        println!("call: {name:<54} {:>9} {:>8.2}x", show(time), ratio(time));
    }
    let against_rmcp = text.as_secs_f64() / rmcp_text.as_secs_f64().max(f64::MIN_POSITIVE);
    println!("call: text path / rmcp from the text: {against_rmcp:.2}x");
    let goal = |what, time, at_most, beside| Goal {
        what,
        ratio: ratio(time),
        at_most,
        against: "direct",
        beside,
    };
    vec![
        goal("text → observation, default gate", text, 2.5, None),
        Goal {
            what: "the same, against rmcp's `ToolRouter::call` from the text",
            ratio: against_rmcp,
            at_most: 1.0,
            against: "rmcp",
            beside: None,
        },
        goal("parsed `Value` → observation", value, 2.0, None),
        goal(
            "async `Run::call`, the tool `non_blocking`",
            non_blocking,
            3.5,
            Some(format!("{:.2}x on the pool", ratio(pooled))),
        ),
        Goal {
            what: "async text call of a quick synchronous tool (no flag), current thread (issue 38)",
            ratio: in_async.as_secs_f64() / text.as_secs_f64().max(f64::MIN_POSITIVE),
            at_most: 1.5,
            against: "call_blocking",
            beside: Some(format!(
                "{:.2}x on the pool",
                pooled.as_secs_f64() / text.as_secs_f64().max(f64::MIN_POSITIVE)
            )),
        },
        Goal {
            what: "the same from a multi-threaded runtime's worker (issue 38)",
            ratio: in_async_multi.as_secs_f64() / text.as_secs_f64().max(f64::MIN_POSITIVE),
            at_most: 1.5,
            against: "call_blocking",
            beside: None,
        },
        goal(
            "with a call policy and a rate limit",
            gated_text,
            3.5,
            Some(format!(
                "{:.2}x with the policy reading one argument",
                ratio(gated_one_text)
            )),
        ),
    ]
}

/// `bench-runs call-loop PATH [CALLS]`: only the path `direct`, `text`, `value`, `gated` or
/// `gated-one` (or `async`, `async-pool`), for a few seconds, for a profiler (`perf record`);
/// with `CALLS`, exactly that many calls, for counting instructions (`instructions.py`).
pub fn call_loop(path: &str) {
    let calls: Option<u64> = std::env::args().nth(3).and_then(|calls| calls.parse().ok());
    let registry = match path {
        "gated" => gated_registry(false),
        "gated-one" => gated_registry(true),
        _ => Registry::builder()
            .declared_in(["bench_runs"])
            .build()
            .expect("the benchmark registry builds"),
    };
    let run = registry.open_run("run", &Subject::new("tenant-a").with_agent("bench"));
    if path == "async" || path == "async-pool" {
        let tool = if path == "async" { "add_here" } else { "add_pooled" };
        return async_loop(&run, tool, calls);
    }
    let arguments: Value = serde_json::from_str(TEXT).expect("valid");
    let started = Instant::now();
    let mut done = 0u64;
    let batch = calls.unwrap_or(10_000);
    while calls.map_or(started.elapsed() < Duration::from_secs(5), |calls| done < calls) {
        for _ in 0..batch {
            if path == "direct" {
                let parsed: AddArgs = serde_json::from_str(black_box(TEXT)).expect("valid");
                black_box(serde_json::to_value(add(parsed.a, parsed.b)).expect("json"));
                continue;
            }
            let call = match path {
                "value" => ToolCall::new("call_1", "add", arguments.clone()),
                _ => ToolCall::from_json_text("call_1", "add", black_box(TEXT)),
            };
            let _ = black_box(run.call_blocking(call));
        }
        done += batch;
    }
    println!("call-loop {path}: {done} calls in {:?}", started.elapsed());
}

/// `call-loop async`: `add_here` (`non_blocking`) through `Run::call` on a current-thread
/// runtime, for `perf record`; prints the size of the call's future first. `call-loop
/// async-pool`: the same with `add_pooled` (`blocking`), which runs on the registry's pool of
/// threads.
fn async_loop(run: &registry_core::Run, tool: &str, calls: Option<u64>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    let call = || run.call(ToolCall::from_json_text("call_1", tool, black_box(TEXT)));
    println!(
        "call-loop async: Run::call's future is {} bytes",
        size_of_val(&call())
    );
    let started = Instant::now();
    let mut done = 0u64;
    let batch = calls.unwrap_or(10_000);
    while calls.map_or(started.elapsed() < Duration::from_secs(5), |calls| done < calls) {
        runtime.block_on(async {
            for _ in 0..batch {
                let _ = black_box(call().await);
            }
        });
        done += batch;
    }
    println!("call-loop async: {done} calls in {:?}", started.elapsed());
}

/// `bench-runs spaced`: async calls one at a time, 1 ms apart (a model's calls come far
/// apart, and a pool thread looking for work without sleeping finds none): the process's
/// CPU time per call of `add` on the registry's pool and of `add_here` (`non_blocking`) on
/// the caller's task, the loop's own sleep and wake-up in both; their difference is what the
/// hop to the pool and back costs such calls. Three rounds, the two in turn.
pub fn spaced() {
    let registry = Registry::builder()
        .declared_in(["bench_runs"])
        .build()
        .expect("the benchmark registry builds");
    let run = registry.open_run("run", &Subject::new("tenant-a"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    const CALLS: u32 = 2_000;
    let per_call = |tool: &str| {
        let call = || ToolCall::from_json_text("call_1", tool, black_box(TEXT));
        let answer = runtime.block_on(run.call(call()));
        assert_eq!(answer.json(), &json!(42));
        let before = cpu_time();
        for _ in 0..CALLS {
            std::thread::sleep(Duration::from_millis(1));
            let _ = black_box(runtime.block_on(run.call(call())));
        }
        (cpu_time() - before) / CALLS
    };
    for round in 1..=3 {
        let pool = per_call("add");
        let here = per_call("add_here");
        println!(
            "spaced, round {round}: {CALLS} calls 1 ms apart, CPU a call: on the pool {pool:.1?}, on the caller's task {here:.1?}; the hop {:.1?}",
            pool.saturating_sub(here)
        );
    }
}

/// The benchmark's registry with the gate configured: a call policy that reads the argument
/// `a` (with `CallRequest::argument` when `one`, else from the whole `arguments()` value) and
/// a rate limit counted per subject and tool, generous enough to admit every call.
fn gated_registry(one: bool) -> Registry {
    let builder = Registry::builder().declared_in(["bench_runs"]);
    let builder = if one {
        builder.call_policy(|call: &CallRequest<'_>| match call.argument::<i64>("a") {
            Ok(Some(a)) if a >= 0 => Decision::Allow,
            Ok(_) => Decision::Deny("negative numbers are not added".into()),
            Err(error) => Decision::Deny(format!("unreadable a: {error}")),
        })
    } else {
        builder.call_policy(
            |call: &CallRequest<'_>| match call.arguments()["a"].as_i64() {
                Some(a) if a < 0 => Decision::Deny("negative numbers are not added".into()),
                _ => Decision::Allow,
            },
        )
    };
    builder
        .rate_limit("1000000000/s")
        .build()
        .expect("the gated registry builds")
}

/// The median over 31 batches of the CPU time of one iteration: `batch(n)` runs `n`
/// iterations, `n = iterations / 31` (at least 1); warm-up batches first, for [`WARM_UP`].
///
/// The warm-up is long enough that a quick synchronous tool sent to the pool by a run the
/// host delayed past 50 µs as the section starts (a new worker thread's first runs often are)
/// is back inline when the timed batches start: the first such run sends it there for 100 ms
/// (registry-core's `execute/inline.rs`). What is timed is the steady state.
fn median_batches(iterations: u32, batch: impl FnMut(u32)) -> Duration {
    median_batches_with(iterations, |n| n, batch)
}

/// How long [`median_batches`] warms up, at least (one batch at least).
const WARM_UP: Duration = Duration::from_millis(300);

/// [`median_batches`] with untimed preparation: `setup(n)` makes what `batch` consumes for
/// `n` iterations.
///
/// The clock is the process's CPU time (every thread's, so the pool thread a synchronous tool
/// runs on under `Run::call` counts too), not wall time: on a machine shared with other
/// work, the time this process waits for a core is not counted, and the figures hold still.
fn median_batches_with<T>(
    iterations: u32,
    mut setup: impl FnMut(u32) -> T,
    mut batch: impl FnMut(T),
) -> Duration {
    let per_batch = (iterations / 31).max(1);
    let warming = std::time::Instant::now();
    loop {
        batch(setup(per_batch));
        if warming.elapsed() >= WARM_UP {
            break;
        }
    }
    let mut times: Vec<Duration> = (0..31)
        .map(|_| {
            let input = setup(per_batch);
            let start = cpu_time();
            batch(input);
            cpu_time().saturating_sub(start) / per_batch
        })
        .collect();
    times.sort();
    times[15]
}

/// The CPU time this process has used.
fn cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid `timespec` to write to; the clock exists on Linux.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

fn show(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos >= 10_000 {
        format!("{:.1} µs", nanos as f64 / 1000.0)
    } else {
        format!("{nanos} ns")
    }
}
