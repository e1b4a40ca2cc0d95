//! `project`: opening a run over 10,000 tools against a bitmask projection of the same data.
//!
//! The registry: 10,000 run-time tools, each requiring one of 10 scopes (`area0:read` ..
//! `area9:read`); every 7th is also restricted to the tenant `tenant-b`. The subject, of
//! `tenant-a`, holds `area3:read`: it sees 1,000 − 142 = **858** tools.
//!
//! - *open_run*: `registry.open_run(..)` (the projection, the frozen allowed set with its
//!   fingerprint, the run's scope) and dropping the run, after a first run has built the
//!   visible tools' definitions and fingerprints;
//! - *bitmask floor*: the same tools' requirements compiled beforehand into one `u64` of
//!   scope bits and one of tenant bits per tool, and a loop over the 10,000 testing them
//!   against the subject's bits and collecting the visible indices into a `Vec<u32>`: what a
//!   projection costs with nothing else to do (no fingerprint, no revocation or readiness,
//!   no run).
//!
//! The ratio is printed from the same run.

use std::hint::black_box;
use std::time::Instant;

use registry_core::{DynamicTool, Registry, Subject};
use serde_json::{Value, json};

use crate::goals::Goal;
use crate::{median_per_iteration, show};

const TOOLS: usize = 10_000;
const SCOPES: usize = 10;
/// Every `RESTRICTED`-th tool is restricted to `tenant-b`.
const RESTRICTED: usize = 7;

pub(crate) fn project() -> Vec<Goal> {
    let registry = registry();
    let subject = Subject::new("tenant-a").with_scopes(["area3:read"]);
    // The first projection builds each visible tool's definition and fingerprint, once.
    let first = Instant::now();
    let run = registry.open_run("warm-up", &subject);
    let first = first.elapsed();
    let visible = run.allowed().len();
    let floor = Floor::of(&registry);
    assert_eq!(
        floor.project(&subject).len(),
        visible,
        "the floor sees what the run sees"
    );

    let open_run = median_per_iteration(2_000, || {
        black_box(registry.open_run("run", black_box(&subject)));
    });
    let bitmask = median_per_iteration(20_000, || {
        black_box(floor.project(black_box(&subject)));
    });
    let ratio = open_run.as_secs_f64() / bitmask.as_secs_f64().max(f64::MIN_POSITIVE);
    println!(
        "project: {TOOLS} tools, {visible} visible: open_run {} (first, building definitions: {})",
        show(open_run),
        show(first)
    );
    println!(
        "project: bitmask floor on the same data: {}; open_run / floor: {ratio:.1}x",
        show(bitmask)
    );

    // The same registry with an audit sink: each run's projection event (its set's version
    // fingerprint, the first 256 tools by name and version) is made and recorded.
    let audited = registry_with(Registry::builder().audit_sink(Discard));
    audited.open_run("warm-up", &subject);
    let with_audit = median_per_iteration(2_000, || {
        black_box(audited.open_run("run", black_box(&subject)));
    });
    println!(
        "project: the same with an audit sink (the projection event recorded): open_run {}; open_run / floor: {:.1}x",
        show(with_audit),
        with_audit.as_secs_f64() / bitmask.as_secs_f64().max(f64::MIN_POSITIVE)
    );

    // Runs of 45 subjects in turn, each holding two of the ten scopes: 45 distinct visible
    // sets, more than a snapshot remembers, so that each run's set is hashed anew.
    let subjects = pairs();
    for subject in &subjects {
        registry.open_run("warm-up", subject);
    }
    let visible: usize = subjects
        .iter()
        .map(|subject| floor.project(subject).len())
        .sum::<usize>()
        / subjects.len();
    let mut turn = 0;
    let new_set = median_per_iteration(2_000, || {
        turn = (turn + 1) % subjects.len();
        black_box(registry.open_run("run", black_box(&subjects[turn])));
    });
    let mut turn = 0;
    let bitmask = median_per_iteration(20_000, || {
        turn = (turn + 1) % subjects.len();
        black_box(floor.project(black_box(&subjects[turn])));
    });
    let new_ratio = new_set.as_secs_f64() / bitmask.as_secs_f64().max(f64::MIN_POSITIVE);
    println!(
        "project: 45 subjects in turn, {visible} visible on average, each set hashed anew: open_run {}; floor {}; open_run / floor: {new_ratio:.1}x",
        show(new_set),
        show(bitmask)
    );
    vec![
        Goal {
            what: "`open_run`, 10,000 tools, a set a recent run had",
            ratio,
            at_most: 2.0,
            against: "bitmask",
            beside: None,
        },
        Goal {
            what: "`open_run`, 10,000 tools, each set hashed anew",
            ratio: new_ratio,
            at_most: 2.0,
            against: "bitmask",
            beside: None,
        },
    ]
}

/// An audit sink that keeps nothing: what an `open_run` costs when its event is wanted.
struct Discard;

impl registry_core::audit::AuditSink for Discard {
    fn record(&self, event: &registry_core::audit::AuditEvent) {
        black_box(event);
    }
}

/// `project-loop [new]`: `open_run` alone for five seconds, for `perf record`: of one
/// subject, or (`new`) of the 45 subjects in turn.
pub(crate) fn project_loop(new: bool) {
    let registry = registry();
    let subjects = if new {
        pairs()
    } else {
        vec![Subject::new("tenant-a").with_scopes(["area3:read"])]
    };
    let start = Instant::now();
    let mut runs = 0u64;
    while start.elapsed().as_secs() < 5 {
        for turn in 0..1_000 {
            black_box(registry.open_run("run", black_box(&subjects[turn % subjects.len()])));
        }
        runs += 1_000;
    }
    println!("project-loop: {runs} runs");
}

/// The 45 subjects that hold two of the ten scopes each.
fn pairs() -> Vec<Subject> {
    (0..SCOPES)
        .flat_map(|a| (a + 1..SCOPES).map(move |b| (a, b)))
        .map(|(a, b)| {
            Subject::new("tenant-a").with_scopes([format!("area{a}:read"), format!("area{b}:read")])
        })
        .collect()
}

/// The benchmark's registry: 10,000 tools over 10 scopes, every 7th restricted to a tenant.
/// `bench-runs large-call`: `call_blocking` of the tools of a run that may call 858 of
/// 10,000, each in turn (a name the lookup has not just seen), against the same calls in a
/// run of a registry of those 858 tools alone: what resolving a name costs in a large set.
pub(crate) fn large_call() {
    let registry = registry();
    let run = registry.open_run("run", &Subject::new("tenant-a").with_scopes(["area3:read"]));
    let names: Vec<String> = run.allowed().names().map(str::to_owned).collect();
    let mut alone = Registry::builder();
    for name in &names {
        alone = alone.tool(bench_tool(name.clone()).public());
    }
    let alone = alone.build().expect("builds");
    let alone_run = alone.open_run("run", &Subject::new("tenant-a"));
    for (label, run) in [("858 of 10,000", &run), ("858 alone", &alone_run)] {
        let mut turn = 0;
        let per_call = median_per_iteration(200_000, || {
            turn = (turn + 1) % names.len();
            let call = registry_core::ToolCall::from_json_text(
                "call_1",
                names[turn].as_str(),
                r#"{"project": "web"}"#,
            );
            let _ = black_box(run.call_blocking(call));
        });
        println!(
            "large-call: a run of {label}, each tool in turn: {}",
            show(per_call)
        );
    }
}

fn registry() -> Registry {
    registry_with(Registry::builder())
}

/// The benchmark's tools in `builder`.
/// One tool of the benchmark, named `name`: two parameters, a handler that does nothing; who
/// may use it is the caller's to say.
fn bench_tool(name: String) -> DynamicTool {
    DynamicTool::new(name, "A tool of the benchmark.")
        .parameters(json!({
            "type": "object",
            "properties": {"project": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["project"],
            "additionalProperties": false
        }))
        .handler(|_, _| Ok::<_, String>(Value::Null))
}

fn registry_with(mut builder: registry_core::RegistryBuilder) -> Registry {
    for index in 0..TOOLS {
        let mut tool =
            bench_tool(format!("tool_{index:05}")).scopes([format!("area{}:read", index % SCOPES)]);
        if index % RESTRICTED == 0 {
            tool = tool.tenants(["tenant-b"]);
        }
        builder = builder.tool(tool);
    }
    builder.build().expect("the benchmark registry builds")
}

/// The requirements of every tool as bits: the floor's own interning, done beforehand.
struct Floor {
    scope_names: Vec<String>,
    tenant_names: Vec<String>,
    /// Per tool: the scopes it requires, and the tenants it admits (0: any).
    tools: Vec<(u64, u64)>,
}

impl Floor {
    fn of(registry: &Registry) -> Floor {
        let mut floor = Floor {
            scope_names: Vec::new(),
            tenant_names: Vec::new(),
            tools: Vec::new(),
        };
        for tool in registry.iter() {
            let settings = tool.settings();
            let scopes = settings.scopes.iter().fold(0, |bits, scope| {
                bits | Self::bit(&mut floor.scope_names, scope.as_str())
            });
            let tenants = settings.tenants.iter().fold(0, |bits, tenant| {
                bits | Self::bit(&mut floor.tenant_names, tenant)
            });
            floor.tools.push((scopes, tenants));
        }
        floor
    }

    fn bit(names: &mut Vec<String>, name: &str) -> u64 {
        let index = match names.iter().position(|known| known == name) {
            Some(index) => index,
            None => {
                names.push(name.to_owned());
                names.len() - 1
            }
        };
        assert!(index < 64, "the floor holds at most 64 names");
        1 << index
    }

    /// The indices of the tools `subject` may see.
    fn project(&self, subject: &Subject) -> Vec<u32> {
        let grants = subject.scopes().fold(0u64, |bits, scope| {
            bits | self
                .scope_names
                .iter()
                .position(|known| known == scope)
                .map_or(0, |index| 1 << index)
        });
        let tenant = self
            .tenant_names
            .iter()
            .position(|known| known == subject.tenant())
            .map_or(0, |index| 1u64 << index);
        let mut visible = Vec::with_capacity(self.tools.len() / 8);
        for (index, &(scopes, tenants)) in self.tools.iter().enumerate() {
            if scopes & !grants == 0 && (tenants == 0 || tenants & tenant != 0) {
                visible.push(index as u32);
            }
        }
        visible
    }
}
