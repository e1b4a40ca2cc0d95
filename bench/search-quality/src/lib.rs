//! Loads `catalog.json` into a [`Registry`] of [`DynamicTool`]s, and scores rankings.
//!
//! Shared by `search-quality` (which needs `Run::search`) and `load-check` (which does not,
//! so the catalog can be checked against the registry's rules before search exists).

use std::fmt::Write as _;
use std::path::Path;

use registry_core::{BuildProblem, DynamicTool, Registry};
use serde_json::Value;

/// One tool of the catalog, as `catalog.json` has it.
pub struct Entry {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Value,
    pub package: String,
    pub version: String,
}

/// One query of `queries.json`.
pub struct Query {
    pub query: String,
    pub relevant: Vec<String>,
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn text(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_owned()
}

pub fn load_catalog(path: &Path) -> Vec<Entry> {
    let Value::Array(items) = read_json(path) else {
        panic!("{}: not an array", path.display())
    };
    items
        .iter()
        .map(|t| Entry {
            name: text(t, "name"),
            title: t["title"].as_str().map(str::to_owned),
            description: text(t, "description"),
            input_schema: t["inputSchema"].clone(),
            package: text(&t["source"], "package"),
            version: text(&t["source"], "version"),
        })
        .collect()
}

pub fn load_queries(path: &Path) -> Vec<Query> {
    let Value::Array(items) = read_json(path) else {
        panic!("{}: not an array", path.display())
    };
    items
        .iter()
        .map(|q| Query {
            query: text(q, "query"),
            relevant: q["relevant"]
                .as_array()
                .expect("relevant: an array")
                .iter()
                .map(|n| n.as_str().expect("relevant: names").to_owned())
                .collect(),
        })
        .collect()
}

/// The schema as the registry takes it: MCP servers send draft-07 schemas with `$schema`,
/// which the registry (2020-12) need not see; everything else is kept.
fn parameters(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.entry("type")
            .or_insert_with(|| Value::String("object".into()));
    }
    schema
}

fn tool(entry: &Entry, allow: Option<&str>) -> DynamicTool {
    let mut tool = DynamicTool::new(entry.name.clone(), entry.description.clone())
        .public()
        .parameters(parameters(&entry.input_schema))
        .handler(|_ctx, _args| Ok::<_, String>(Value::Null));
    if let Some(title) = &entry.title {
        tool = tool.title(title.clone());
    }
    if let Some(reason) = allow {
        tool = tool.allow_description(reason.to_owned());
    }
    tool
}

/// What loading did with the catalog.
pub struct Loaded {
    pub registry: Registry,
    /// Tools kept with `allow_description`: (name, rules the lint found).
    pub allowed: Vec<(String, Vec<String>)>,
    /// Tools left out: (name, why).
    pub skipped: Vec<(String, String)>,
}

/// Builds one registry of every tool the registry accepts. Each tool is first checked alone:
/// one the description lint refuses (the texts are published ones, quoted verbatim) is kept
/// with `allow_description` — or skipped when `strict_lint` — and one with any other problem
/// (e.g. a schema that does not compile) is skipped; both are reported.
pub fn load_registry(catalog: &[Entry], strict_lint: bool) -> Loaded {
    let mut builder = Registry::builder();
    let (mut allowed, mut skipped) = (Vec::new(), Vec::new());
    for entry in catalog {
        let Err(error) = Registry::builder().tool(tool(entry, None)).build() else {
            builder = builder.tool(tool(entry, None));
            continue;
        };
        let problems = error.problems();
        let lint_only = !problems.is_empty()
            && problems
                .iter()
                .all(|p| matches!(p, BuildProblem::UnsafeDescription { .. }));
        let mut rules: Vec<String> = problems
            .iter()
            .map(|p| match p {
                BuildProblem::UnsafeDescription { rule, field, .. } => format!("{rule} in {field}"),
                other => other.to_string(),
            })
            .collect();
        rules.dedup();
        if lint_only && !strict_lint {
            let reason = format!(
                "published definition of {}@{}, quoted verbatim for the search benchmark",
                entry.package, entry.version
            );
            builder = builder.tool(tool(entry, Some(&reason)));
            allowed.push((entry.name.clone(), rules));
        } else {
            skipped.push((entry.name.clone(), rules.join("; ")));
        }
    }
    let registry = builder
        .build()
        .unwrap_or_else(|e| panic!("the catalog's registry: {e}"));
    Loaded {
        registry,
        allowed,
        skipped,
    }
}

/// recall@1, recall@k, full recall@k and MRR@k of rankings (one list of names per query).
pub struct Scores {
    pub queries: usize,
    pub k: usize,
    pub recall_1: f64,
    pub recall_k: f64,
    pub full_recall_k: f64,
    pub mrr_k: f64,
    /// (query index, rank of the first relevant tool within k, if any) for every query whose
    /// first hit is not relevant.
    pub failures: Vec<(usize, Option<usize>)>,
}

pub fn score(queries: &[Query], rankings: &[Vec<String>], k: usize) -> Scores {
    let (mut r1, mut rk, mut full, mut mrr) = (0.0, 0.0, 0.0, 0.0);
    let mut failures = Vec::new();
    for (i, (q, ranking)) in queries.iter().zip(rankings).enumerate() {
        let ranks: Vec<usize> = ranking
            .iter()
            .take(k)
            .enumerate()
            .filter(|(_, name)| q.relevant.contains(name))
            .map(|(i, _)| i + 1)
            .collect();
        let first = ranks.first().copied();
        r1 += f64::from(u8::from(first == Some(1)));
        rk += f64::from(u8::from(first.is_some()));
        full += ranks.len() as f64 / q.relevant.len().min(k) as f64;
        mrr += first.map_or(0.0, |r| 1.0 / r as f64);
        if first != Some(1) {
            failures.push((i, first));
        }
    }
    let n = queries.len() as f64;
    Scores {
        queries: queries.len(),
        k,
        recall_1: r1 / n,
        recall_k: rk / n,
        full_recall_k: full / n,
        mrr_k: mrr / n,
        failures,
    }
}

impl Scores {
    pub fn table(&self) -> String {
        let mut out = String::new();
        let k = self.k;
        let _ = writeln!(
            out,
            "| queries | recall@1 | recall@{k} | MRR@{k} | full recall@{k} |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        let _ = writeln!(
            out,
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} |",
            self.queries, self.recall_1, self.recall_k, self.mrr_k, self.full_recall_k
        );
        out
    }
}

/// The default paths: beside Cargo.toml.
pub fn here(file: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(file)
}
