//! Properties of search and deferred sessions, over random registries, subjects and queries:
//!
//! - no hit and no loaded tool is outside the run's allowed set, and no answer or export names
//!   a hidden tool;
//! - a run's hits, scores included, are exactly those of a registry holding only the tools
//!   the run may see (hidden tools change nothing a search shows);
//! - both hold with an embedder (search by meaning fused with the lexical ranking) as without;
//! - loading only appends: every export's tool objects start with the previous export's,
//!   byte for byte.

use proptest::prelude::*;
use registry_core::{
    DynamicTool, Profile, Registry, Subject,
    deferred::{DeferredOptions, SearchCall},
    search::SearchHit,
};
use registry_tests::{WordEmbedder, tool_objects};
use serde_json::json;

const WORDS: [&str; 16] = [
    "deploy", "build", "status", "project", "message", "channel", "invoice", "customer", "report",
    "weekly", "restart", "server", "ticket", "priority", "release", "rollback",
];
const SCOPES: [&str; 3] = ["a:read", "b:write", "c:admin"];
const TENANTS: [&str; 2] = ["t1", "t2"];

#[derive(Debug, Clone)]
struct ToolSpec {
    description: Vec<usize>,
    title: Option<usize>,
    parameter: Option<(usize, Vec<usize>)>,
    scopes: Vec<usize>,
    tenant: Option<usize>,
    always_loaded: bool,
    namespace: Option<usize>,
}

fn tool_spec() -> impl Strategy<Value = ToolSpec> {
    (
        proptest::collection::vec(0..WORDS.len(), 1..6),
        proptest::option::of(0..WORDS.len()),
        proptest::option::of((
            0..WORDS.len(),
            proptest::collection::vec(0..WORDS.len(), 0..3),
        )),
        proptest::sample::subsequence(vec![0usize, 1, 2], 0..=2),
        proptest::option::weighted(0.3, 0..TENANTS.len()),
        proptest::bool::weighted(0.2),
        proptest::option::of(0usize..2),
    )
        .prop_map(
            |(description, title, parameter, scopes, tenant, always_loaded, namespace)| ToolSpec {
                description,
                title,
                parameter,
                scopes,
                tenant,
                always_loaded,
                namespace,
            },
        )
}

fn name(index: usize) -> String {
    format!("tool_{index:03}")
}

fn words(indices: &[usize]) -> String {
    indices
        .iter()
        .map(|&i| WORDS[i])
        .collect::<Vec<_>>()
        .join(" ")
}

fn dynamic(index: usize, spec: &ToolSpec) -> DynamicTool {
    let mut tool = DynamicTool::new(name(index), format!("{}.", words(&spec.description)))
        .scopes(spec.scopes.iter().map(|&s| SCOPES[s]))
        .handler(|_ctx, _args| Ok::<_, String>(json!("ok")));
    if spec.scopes.is_empty() && spec.tenant.is_none() {
        tool = tool.public();
    }
    if let Some(title) = spec.title {
        tool = tool.title(WORDS[title]);
    }
    if let Some((parameter, description)) = &spec.parameter {
        let mut property = json!({"type": "string"});
        if !description.is_empty() {
            property["description"] = json!(words(description));
        }
        tool = tool.parameters(json!({
            "type": "object",
            "properties": { WORDS[*parameter]: property },
            "additionalProperties": false,
        }));
    }
    if let Some(tenant) = spec.tenant {
        tool = tool.tenants([TENANTS[tenant]]);
    }
    if spec.always_loaded {
        tool = tool.always_loaded();
    }
    if let Some(namespace) = spec.namespace {
        tool = tool.namespace(["ns_one", "ns_two"][namespace]);
    }
    tool
}

fn registry_of(specs: &[(usize, ToolSpec)], embedded: bool) -> Registry {
    let mut builder = Registry::builder();
    if embedded {
        builder = builder.embedder(WordEmbedder::default());
    }
    for (index, spec) in specs {
        builder = builder.tool(dynamic(*index, spec));
    }
    builder
        .allow_empty()
        .build()
        .expect("random tools build a registry")
}

fn hits(found: &[SearchHit]) -> Vec<(String, f64)> {
    found
        .iter()
        .map(|hit| (hit.name().to_owned(), hit.score()))
        .collect()
}

fn profile() -> impl Strategy<Value = Profile> {
    proptest::sample::select(Profile::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn searches_stay_inside_the_allowed_set_and_loading_appends(
        specs in proptest::collection::vec(tool_spec(), 1..24),
        granted in proptest::sample::subsequence(vec![0usize, 1, 2], 0..=3),
        tenant in 0..TENANTS.len(),
        queries in proptest::collection::vec(
            proptest::collection::vec(0..WORDS.len() + 4, 1..4), 1..6),
        k in 1usize..6,
        profile in profile(),
        embedded in any::<bool>(),
    ) {
        let specs: Vec<(usize, ToolSpec)> = specs.into_iter().enumerate().collect();
        let registry = registry_of(&specs, embedded);
        let subject = Subject::new(TENANTS[tenant]).with_scopes(granted.iter().map(|&s| SCOPES[s]));
        let run = registry.open_run("run", &subject);
        let allowed: Vec<String> = run.allowed().names().map(str::to_owned).collect();
        let hidden: Vec<String> = registry.names().filter(|n| !run.allowed().permits(n)).map(str::to_owned).collect();

        // The same tools alone, for a subject that sees them all.
        let visible: Vec<(usize, ToolSpec)> = specs.iter()
            .filter(|(index, _)| run.allowed().permits(&name(*index)))
            .map(|(index, spec)| {
                let mut spec = spec.clone();
                spec.scopes.clear();
                spec.tenant = None;
                (*index, spec)
            })
            .collect();
        let alone = registry_of(&visible, embedded);
        let alone_run = alone.open_run("alone", &Subject::new("t1"));
        prop_assert_eq!(alone_run.allowed().len(), allowed.len());

        let session = run.deferred(profile, DeferredOptions::new().results(k).load(hidden.iter().cloned()));
        let mut before = tool_objects(profile, &session.export().unwrap());
        for loaded in session.loaded() {
            prop_assert!(allowed.contains(&loaded), "{} loaded", loaded);
        }
        for query in &queries {
            // Indices past the words name tools (some hidden).
            let query: String = query.iter().map(|&i| {
                if i < WORDS.len() { WORDS[i].to_owned() } else { name(i - WORDS.len()) }
            }).collect::<Vec<_>>().join(" ");
            let found = run.search(&query, k);
            prop_assert!(found.len() <= k);
            for hit in &found {
                prop_assert!(allowed.contains(&hit.name().to_owned()), "{} found", hit.name());
            }
            prop_assert_eq!(hits(&found), hits(&run.search(&query, k)));
            prop_assert_eq!(hits(&found), hits(&alone_run.search(&query, k)));

            let answer = session.search(&SearchCall::new("c", json!({ "query": query })));
            let after = tool_objects(profile, &session.export().unwrap());
            prop_assert!(after.len() >= before.len());
            prop_assert_eq!(&after[..before.len()], &before[..]);
            let message = answer.message().to_string();
            for name in &hidden {
                prop_assert!(!message.contains(name.as_str()), "{} in {}", name, message);
                prop_assert!(!after.iter().any(|object| object.contains(name.as_str())), "{} exported", name);
            }
            for loaded in session.loaded() {
                prop_assert!(allowed.contains(&loaded), "{} loaded", loaded);
            }
            before = after;
        }
    }
}
