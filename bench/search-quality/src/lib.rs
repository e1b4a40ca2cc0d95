//! Loads `catalog.json` into a [`Registry`] of [`DynamicTool`]s, and scores rankings.
//!
//! Shared by `search-quality` (which needs `Run::search`) and `load-check` (which does not,
//! so the catalog can be checked against the registry's rules before search exists).

use std::fmt::Write as _;
use std::path::Path;

use registry_core::{BuildProblem, DynamicTool, Registry};
use serde_json::Value;

/// One tool of the catalog, as `catalog.json` has it.
#[derive(Clone)]
pub struct Entry {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Value,
    pub package: String,
    pub version: String,
}

/// One query of `queries.json`.
#[derive(Clone)]
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

/// The embedder a registry ranks by meaning with, besides the words.
#[derive(Debug, Clone)]
pub enum Meaning<'a> {
    /// An OpenAI-compatible embeddings endpoint (its base URL, `http://127.0.0.1:8089/v1`),
    /// through [`registry_core::search::OpenAiEmbedder`], and the weight of its ranking in
    /// the fusion.
    Endpoint(&'a str, f64),
    /// A model run in this process ([`registry_embed::LocalEmbedder`]), its weight set.
    Local(registry_embed::LocalEmbedder),
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
///
/// With `embedder`, the registry ranks by meaning too ([`Meaning`]).
pub fn load_registry(
    catalog: &[Entry],
    strict_lint: bool,
    embedder: Option<Meaning<'_>>,
) -> Loaded {
    let mut builder = Registry::builder();
    match embedder {
        Some(Meaning::Endpoint(url, weight)) => {
            let embedder = registry_core::search::OpenAiEmbedder::new(url, "all-MiniLM-L6-v2")
                .unwrap_or_else(|e| panic!("--embedder {url}: {e}"))
                .timeout(std::time::Duration::from_secs(600))
                .with_weight(weight);
            builder = builder.embedder(embedder);
        }
        Some(Meaning::Local(embedder)) => builder = builder.embedder(embedder),
        None => {}
    }
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

/// The server of a catalog tool: its name's part before `__` (`github__create_issue` →
/// `github`); a name without `__` is its own server.
pub fn server(name: &str) -> &str {
    name.split_once("__").map_or(name, |(server, _)| server)
}

/// The two parts of the labelled set: a query is in the part of its relevant tools' servers,
/// and no server is in both ([`split`]).
pub struct Split {
    /// The servers whose tools and queries tuning may look at.
    pub tuning: Vec<String>,
    /// The servers kept out of all tuning.
    pub held_out: Vec<String>,
}

/// FNV-1a, 64 bits: a fixed hash, the same in every process and build.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One of `count` folds of a part's queries, for cross-fitting inside the tuning part: a
/// query is in fold `index` (0-based) when the upper 32 bits of the FNV-1a hash of its text
/// (the bytes of `queries.json`'s `query`, as they are) modulo `count` are `index` (the upper
/// bits, as FNV-1a's lowest bit is only the parity of the text's odd bytes). The rule is fixed
/// (chosen before any figure of a fold was read), so a fold is the same in every process:
/// `derive-related --leave-out I/N` derives the related-word table without fold `I`'s queries,
/// and `search-quality --fold I/N` evaluates fold `I`'s queries only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fold {
    /// Which fold, `0..count`.
    pub index: u64,
    /// How many folds.
    pub count: u64,
}

impl Fold {
    /// `I/N` (`0/2`, `1/2`): fold `I` of `N`, `I < N`; `None` if it is not of that form.
    pub fn parse(text: &str) -> Option<Fold> {
        let (index, count) = text.split_once('/')?;
        let (index, count) = (index.trim().parse().ok()?, count.trim().parse().ok()?);
        (index < count).then_some(Fold { index, count })
    }

    /// Whether `query` (its text) is in this fold.
    pub fn contains(&self, query: &str) -> bool {
        (fnv(query) >> 32) % self.count == self.index
    }
}

/// Splits the servers of `catalog` in two, so that no query has relevant tools in both parts.
///
/// Servers that a query's relevant tools join (the web searches, the issue trackers) are one
/// group: a query across servers stays whole in one part. Groups are taken in the order of a
/// fixed hash of their first server's name (FNV-1a; not chosen by looking at any result), and
/// go to the held-out part until it has `held_out_share` of the queries; the rest is the
/// tuning part.
pub fn split(catalog: &[Entry], queries: &[Query], held_out_share: f64) -> Split {
    let mut servers: Vec<&str> = catalog.iter().map(|e| server(&e.name)).collect();
    servers.sort_unstable();
    servers.dedup();
    let at = |name: &str| servers.binary_search(&name).ok();
    // Union-find over servers.
    let mut parent: Vec<usize> = (0..servers.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for q in queries {
        let mut ids = q.relevant.iter().filter_map(|n| at(server(n)));
        if let Some(first) = ids.next() {
            for other in ids {
                let (a, b) = (root(&mut parent, first), root(&mut parent, other));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    // Groups by their root (the smallest server index, hence the first name).
    let mut groups: Vec<(usize, Vec<usize>, usize)> = Vec::new();
    for i in 0..servers.len() {
        let r = root(&mut parent, i);
        match groups.iter_mut().find(|g| g.0 == r) {
            Some(group) => group.1.push(i),
            None => groups.push((r, vec![i], 0)),
        }
    }
    for q in queries {
        if let Some(id) = q.relevant.first().and_then(|n| at(server(n))) {
            let r = root(&mut parent, id);
            if let Some(group) = groups.iter_mut().find(|g| g.0 == r) {
                group.2 += 1;
            }
        }
    }
    groups.sort_by_key(|g| (fnv(servers[g.0]), g.0));
    let want = (queries.len() as f64 * held_out_share).round() as usize;
    let (mut tuning, mut held_out, mut taken) = (Vec::new(), Vec::new(), 0);
    for (_, members, count) in groups {
        let names = members.iter().map(|&i| servers[i].to_owned());
        if taken < want {
            taken += count;
            held_out.extend(names);
        } else {
            tuning.extend(names);
        }
    }
    tuning.sort();
    held_out.sort();
    Split { tuning, held_out }
}

/// How much a query shares with its relevant tools, in the words of `eval_bm25.py`'s
/// `overlap_class` (its tokenizer and stop words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// A content word of the query is in a relevant tool's name or title.
    Name,
    /// Only in a relevant tool's description or parameters.
    Text,
    /// In nothing of any relevant tool.
    None,
}

impl Overlap {
    /// Low overlap: no content word in common with a relevant tool's name or title.
    pub fn is_low(self) -> bool {
        self != Overlap::Name
    }
}

const OVERLAP_STOP: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "and", "or", "is", "are", "be", "by", "with",
    "from", "at", "as", "it", "its", "this", "that", "these", "those", "my", "our", "your", "me",
    "i", "we", "you", "what", "which", "who", "how", "do", "does", "did", "can", "any", "all",
    "into", "about", "so", "up", "there", "then", "than", "have", "has", "was", "were", "will",
    "just", "only", "not", "get", "give", "show", "make", "let",
];

/// `eval_bm25.py`'s `tokenize`: ASCII alphanumeric runs, split at case humps and digits,
/// lowercased.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        let chars: Vec<char> = word.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let start = i;
            let c = chars[i];
            if c.is_ascii_digit() {
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            } else if c.is_ascii_uppercase() {
                let mut j = i;
                while j < chars.len() && chars[j].is_ascii_uppercase() {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_lowercase() {
                    // `HTTPServer`: `HTTP`, then `Server`; `Server`: one part.
                    if j - i > 1 {
                        i = j - 1;
                    } else {
                        i = j;
                        while i < chars.len() && chars[i].is_ascii_lowercase() {
                            i += 1;
                        }
                    }
                } else {
                    i = j;
                }
            } else {
                while i < chars.len() && chars[i].is_ascii_lowercase() {
                    i += 1;
                }
            }
            out.push(
                chars[start..i]
                    .iter()
                    .collect::<String>()
                    .to_ascii_lowercase(),
            );
        }
    }
    out
}

fn schema_words(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                for (name, property) in properties {
                    out.extend(words(name));
                    if let Some(text) = property.get("description").and_then(Value::as_str) {
                        out.extend(words(text));
                    }
                }
            }
            for value in map.values() {
                schema_words(value, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| schema_words(item, out)),
        _ => {}
    }
}

/// Every word of a tool, as [`words`] splits them: its name, title, description, and its
/// parameters' names and descriptions at any depth.
pub fn tool_words(entry: &Entry) -> Vec<String> {
    let mut all = words(&format!(
        "{} {} {}",
        entry.name,
        entry.title.as_deref().unwrap_or(""),
        entry.description
    ));
    schema_words(&entry.input_schema, &mut all);
    all
}

/// The overlap class of `query` against its relevant tools.
pub fn overlap(query: &str, relevant: &[&Entry]) -> Overlap {
    let content: Vec<String> = words(query)
        .into_iter()
        .filter(|w| !OVERLAP_STOP.contains(&w.as_str()) && !w.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    let shares = |text: &[String]| content.iter().any(|w| text.contains(w));
    let name_title = |e: &Entry| words(&format!("{} {}", e.name, e.title.as_deref().unwrap_or("")));
    if relevant.iter().any(|e| shares(&name_title(e))) {
        return Overlap::Name;
    }
    if relevant.iter().any(|e| shares(&tool_words(e))) {
        Overlap::Text
    } else {
        Overlap::None
    }
}
