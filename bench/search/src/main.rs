//! Benchmarks of tool search and deferred loading, in release mode, over a synthetic catalog
//! of 10,000 tools (40 services × 250 operations, `github_close_issue`-like names, a sentence
//! of description, 1 to 3 described parameters, scopes `<service>:read` / `<service>:write`):
//!
//! - `search`: `Run::search(query, 5)` in a run allowed 2,000 of them (8 services), each
//!   query timed alone, 500 queries × 20 rounds: p50, p99 and the worst; the first search of
//!   the snapshot, which builds the index, on its own (wall time, and the thread's time on a
//!   CPU, which a loaded machine does not inflate); the same in a run allowed all 10,000;
//! - `first request`: the size, in bytes of compact JSON and in o200k_base tokens
//!   (`tiktoken-rs`), of the tools of the first request for that 2,000-tool run, with every
//!   tool (`run.export`) and deferred (`run.deferred(..).export()`, 4 tools `always_loaded`),
//!   for each profile.
//!
//! Run: `cargo run --release --manifest-path bench/search/Cargo.toml`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use registry_core::{
    DynamicTool, Profile, Registry, Subject,
    deferred::{DeferredOptions, SearchCall},
};
use serde_json::{Value, json};

const SERVICES: [&str; 40] = [
    "github",
    "gitlab",
    "jira",
    "slack",
    "linear",
    "notion",
    "stripe",
    "salesforce",
    "hubspot",
    "zendesk",
    "pagerduty",
    "datadog",
    "sentry",
    "s3",
    "ec2",
    "kubernetes",
    "docker",
    "postgres",
    "mysql",
    "redis",
    "gmail",
    "calendar",
    "drive",
    "dropbox",
    "asana",
    "trello",
    "confluence",
    "twilio",
    "sendgrid",
    "shopify",
    "quickbooks",
    "xero",
    "airtable",
    "figma",
    "vercel",
    "cloudflare",
    "okta",
    "snowflake",
    "bigquery",
    "intercom",
];

const VERBS: [(&str, &str); 15] = [
    ("list", "List the"),
    ("get", "Get one"),
    ("create", "Create a new"),
    ("update", "Update the fields of a"),
    ("delete", "Delete a"),
    ("search", "Search for a"),
    ("archive", "Archive a"),
    ("export", "Export a"),
    ("assign", "Assign a person to a"),
    ("close", "Close a"),
    ("reopen", "Reopen a closed"),
    ("comment", "Add a comment to a"),
    ("share", "Share a"),
    ("move", "Move a"),
    ("count", "Count the"),
];

const NOUNS: [&str; 17] = [
    "issue",
    "pull_request",
    "message",
    "channel",
    "invoice",
    "customer",
    "ticket",
    "incident",
    "dashboard",
    "file",
    "folder",
    "user",
    "event",
    "record",
    "deployment",
    "alert",
    "report",
];

/// Services whose scopes the benchmark's subject holds: 8 × 250 = 2,000 tools.
const GRANTED: [&str; 8] = [
    "github",
    "jira",
    "slack",
    "stripe",
    "zendesk",
    "datadog",
    "kubernetes",
    "gmail",
];

/// Tools of each service.
const PER_SERVICE: usize = 250;

fn main() {
    println!(
        "machine: {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let registry = catalog();
    assert_eq!(registry.len(), SERVICES.len() * PER_SERVICE);
    let scopes: Vec<String> = GRANTED
        .iter()
        .flat_map(|service| [format!("{service}:read"), format!("{service}:write")])
        .collect();
    let subject = Subject::new("acme").with_scopes(scopes.iter().map(String::as_str));
    let run = registry.open_run("bench", &subject);
    assert_eq!(run.allowed().len(), 2_000);
    search(&registry, &subject);
    first_request(&run);
}

/// A tiny deterministic generator (the same catalog in every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as usize
    }
}

fn catalog() -> Registry {
    let mut random = Lcg(7);
    let mut builder = Registry::builder();
    for service in SERVICES {
        let mut pairs: Vec<(usize, usize)> = (0..VERBS.len())
            .flat_map(|v| (0..NOUNS.len()).map(move |n| (v, n)))
            .collect();
        for i in (1..pairs.len()).rev() {
            pairs.swap(i, random.next() % (i + 1));
        }
        for (index, &(v, n)) in pairs.iter().take(PER_SERVICE).enumerate() {
            let (verb, phrase) = VERBS[v];
            let noun = NOUNS[n];
            let words = noun.replace('_', " ");
            let title = format!("{} {}", capitalize(verb), words);
            let description = format!(
                "{phrase} {words} in {}. Returns the {words} as JSON, with its id, state and the time it last changed.",
                capitalize(service)
            );
            let mut properties = serde_json::Map::new();
            let mut required = Vec::new();
            match verb {
                "list" | "count" | "search" => {
                    properties.insert("query".into(), json!({"type": "string", "description": format!("Words to match in the {words}'s text.")}));
                    properties.insert("limit".into(), json!({"type": "integer", "minimum": 1, "maximum": 100, "description": "How many to return at most."}));
                }
                "create" => {
                    properties.insert("title".into(), json!({"type": "string", "description": format!("The title of the new {words}.")}));
                    properties.insert(
                        "body".into(),
                        json!({"type": "string", "description": "The text, in Markdown."}),
                    );
                    required.push("title".to_owned());
                }
                _ => {
                    properties.insert(
                        format!("{noun}_id"),
                        json!({"type": "string", "description": format!("The id of the {words}.")}),
                    );
                    required.push(format!("{noun}_id"));
                }
            }
            properties.insert("workspace".into(), json!({"type": "string", "description": format!("The {} workspace or account.", capitalize(service))}));
            let write = !matches!(verb, "list" | "get" | "search" | "count" | "export");
            let mut tool = DynamicTool::new(format!("{service}_{verb}_{noun}"), description)
                .title(title)
                .parameters(json!({
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": false,
                }))
                .scopes([format!(
                    "{service}:{}",
                    if write { "write" } else { "read" }
                )])
                .handler(|_, _| Ok::<_, String>(Value::Null));
            if !write {
                tool = tool.read_only();
            }
            // A few tools nearly every conversation needs: in every first request.
            if GRANTED[..4].contains(&service) && index == 0 {
                tool = tool.always_loaded();
            }
            builder = builder.tool(tool);
        }
    }
    builder.build().expect("the benchmark catalog builds")
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// Queries a user's task could make: natural phrases, with and without a service's name, and
/// loose words.
fn queries() -> Vec<String> {
    let tasks = [
        "close the ticket the customer opened yesterday",
        "list my open pull requests",
        "send a message to the team channel",
        "find invoices that are overdue",
        "who is on call for this incident",
        "restart the failing deployment",
        "share the quarterly report with finance",
        "assign this issue to me",
        "archive old channels",
        "how many alerts fired today",
        "export the dashboard as a file",
        "reopen the incident",
        "move the file to another folder",
        "comment on the pull request with the test results",
        "create a customer record",
        "delete a user",
        "search events about the outage",
        "get the status of a deployment",
        "update an invoice amount",
        "count open tickets",
    ];
    let mut queries: Vec<String> = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        queries.push((*task).to_owned());
        for service in SERVICES.iter().skip(i % 5).step_by(5) {
            queries.push(format!("{task} in {service}"));
        }
    }
    let mut random = Lcg(11);
    while queries.len() < 500 {
        let words = 1 + random.next() % 5;
        let query: Vec<String> = (0..words)
            .map(|_| match random.next() % 3 {
                0 => VERBS[random.next() % VERBS.len()].0.to_owned(),
                1 => NOUNS[random.next() % NOUNS.len()].replace('_', " "),
                _ => SERVICES[random.next() % SERVICES.len()].to_owned(),
            })
            .collect();
        queries.push(query.join(" "));
    }
    queries.truncate(500);
    queries
}

fn search(registry: &Registry, subject: &Subject) {
    let run = registry.open_run("search", subject);
    let queries = queries();
    // The first search of the snapshot builds its index, from every tool's definition: the
    // definitions are built first, apart, to tell the two costs apart.
    let definitions = Instant::now();
    for tool in registry {
        black_box(tool.definition());
    }
    let definitions = definitions.elapsed();
    let (first, on_cpu) = (Instant::now(), cpu_time());
    let hits = run.search("close the ticket", 5);
    let (first, on_cpu) = (
        first.elapsed(),
        cpu_time().zip(on_cpu).map(|(b, a)| b.saturating_sub(a)),
    );
    assert_eq!(hits.len(), 5);
    let mut found = 0usize;
    let mut times = Vec::with_capacity(queries.len() * 20);
    for _ in 0..20 {
        for query in &queries {
            let start = Instant::now();
            let hits = black_box(run.search(black_box(query), 5));
            times.push(start.elapsed());
            found += hits.len();
        }
    }
    println!(
        "search: 10,000 tools, 2,000 visible, k = 5, {} searches of {} queries ({:.1} hits each): p50 {}, p99 {}, max {}; first search (builds the index): {} ({} of it on the CPU; after building the 10,000 definitions: {})",
        times.len(),
        queries.len(),
        found as f64 / times.len() as f64,
        show(percentile(&mut times, 50.0)),
        show(percentile(&mut times, 99.0)),
        show(percentile(&mut times, 100.0)),
        show(first),
        on_cpu.map_or("unknown".to_owned(), show),
        show(definitions),
    );
    // A run that sees everything: the same index, five times the postings to score.
    let everyone: Vec<String> = SERVICES
        .iter()
        .flat_map(|service| [format!("{service}:read"), format!("{service}:write")])
        .collect();
    let all = registry.open_run(
        "all",
        &Subject::new("acme").with_scopes(everyone.iter().map(String::as_str)),
    );
    let mut times = Vec::new();
    for _ in 0..5 {
        for query in &queries {
            let start = Instant::now();
            black_box(all.search(black_box(query), 5));
            times.push(start.elapsed());
        }
    }
    println!(
        "search: 10,000 tools, all visible: p50 {}, p99 {}, max {}",
        show(percentile(&mut times, 50.0)),
        show(percentile(&mut times, 99.0)),
        show(percentile(&mut times, 100.0)),
    );
    for query in [
        "close a jira ticket",
        "send a slack message to a channel",
        "list open pull requests",
    ] {
        let names: Vec<String> = run
            .search(query, 3)
            .iter()
            .map(|hit| hit.name().to_owned())
            .collect();
        println!("  {query:?} -> {}", names.join(", "));
    }
}

fn percentile(times: &mut [Duration], p: f64) -> Duration {
    times.sort_unstable();
    let rank = ((p / 100.0) * (times.len() - 1) as f64).round() as usize;
    times[rank]
}

fn first_request(run: &registry_core::Run) {
    let bpe = tiktoken_rs::o200k_base().expect("o200k_base ships with tiktoken-rs");
    let tokens = |value: &Value| bpe.encode_ordinary(&value.to_string()).len();
    println!();
    println!(
        "first request, run allowed {} tools (4 always_loaded):",
        run.allowed().len()
    );
    println!(
        "| profile | every tool: bytes | tokens | deferred: bytes | tokens | tokens in context | deferred / every tool (context tokens) | after one search (5 loaded): tokens |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for &profile in Profile::ALL {
        let full = run.export(profile).expect("every tool exports");
        let session = run.deferred(profile, DeferredOptions::new());
        let deferred = session.export().expect("the deferred session exports");
        // What enters the model's context: Anthropic keeps `defer_loading` tools out of it.
        let context = match profile {
            Profile::Anthropic => Value::Array(
                deferred
                    .as_array()
                    .expect("a list")
                    .iter()
                    .filter(|tool| tool.get("defer_loading").is_none())
                    .cloned()
                    .collect(),
            ),
            _ => deferred.clone(),
        };
        let answer = session.search(&SearchCall::new(
            "c1",
            json!({"query": "close a jira ticket"}),
        ));
        assert_eq!(answer.loaded().len(), 5);
        let after = match profile {
            // Loaded in the conversation: the answer is what the next request adds.
            Profile::Anthropic | Profile::OpenAiResponses { .. } => {
                tokens(&context) + tokens(answer.message())
            }
            _ => tokens(&session.export().expect("exports")),
        };
        let (full_bytes, full_tokens) = (full.to_string().len(), tokens(&full));
        let context_tokens = tokens(&context);
        println!(
            "| {profile} | {} | {} | {} | {} | {} | {:.2}% | {} |",
            group(full_bytes),
            group(full_tokens),
            group(deferred.to_string().len()),
            group(tokens(&deferred)),
            group(context_tokens),
            100.0 * context_tokens as f64 / full_tokens as f64,
            group(after),
        );
    }
}

fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The time this thread has spent on a CPU (Linux's `/proc/thread-self/schedstat`, in
/// nanoseconds), so that a figure can be told apart from the time other processes took the
/// CPU on a loaded machine; `None` elsewhere.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

fn show(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos >= 1_000_000 {
        format!("{:.2} ms", nanos as f64 / 1e6)
    } else if nanos >= 1_000 {
        format!("{:.1} µs", nanos as f64 / 1e3)
    } else {
        format!("{nanos} ns")
    }
}
