//! The search index of one registry snapshot: a lexical ranking (BM25) of its tools, built
//! once, the first time a run of the snapshot searches, and shared by every run of it.
//!
//! **What is indexed.** Each tool is one document of weighted terms ([`terms`]): its name
//! (weight [`NAME`]), title ([`TITLE`]), description ([`DESCRIPTION`]), and the names
//! ([`PARAMETER_NAME`]) and descriptions ([`PARAMETER_TEXT`]) of its parameters at any depth
//! of the arguments schema. A term's frequency in a document is the sum of the weights of
//! its occurrences, and the document's length the sum of all of them: the tool is scored as
//! if its name were written twice and its parameters' texts half a time, the simplest
//! form of BM25F's field weights.
//!
//! **How a query is ranked.** [`SearchIndex::top`] takes the documents a run may find (its
//! allowed set, less what its calls would refuse) and scores each against the query's
//! distinct terms with Okapi BM25 (`k1` = 1.2, `b` = 0.9: a strong length normalisation, so
//! that long guided descriptions, which match every query a little, do not crowd out short
//! ones):
//!
//! ```text
//! score(d)   = Σ_w max(bm25(w, d), max_{r ∈ related(w)} weight(w, r) · bm25(r, d))
//! bm25(t, d) = idf(t) · tf(t, d) · (k1 + 1) / (tf(t, d) + k1 · (1 − b + b · |d| / avgdl))
//! idf(t)     = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! ```
//!
//! **Related words.** Users do not speak in tool names ("remove" for `delete`, "folder" for
//! `directory`), so each query word `w` also matches the words related to it by a small
//! table of the software vocabulary ([`synonyms`], derived from the tuning part of
//! `bench/search-quality`), at weight [`EXPANSION`] of the
//! word itself, and, for a query word none of the run's tools has, by a table derived from
//! WordNet 3.1 ([`wordnet`]: synonyms and derivations at [`WORDNET_SYNONYM`] and
//! [`WORDNET_DERIVATION`], halved for each less common sense), the best of them counting
//! once: a tool using the query's own word ranks first, and one using only a related word is
//! still found. Such a word (none of the run's tools has it) also matches the words nearest
//! to it by meaning ([`neighbours`]: all-MiniLM-L6-v2's vectors of single words, cosine at
//! least [`NEIGHBOUR_MIN`]) at [`NEIGHBOUR`] times their cosine. A related word that is
//! itself a word of the query is not counted twice.
//!
//! where `N`, `df` and `avgdl` are counted **over the documents the run may find**, not over
//! the registry: a run's ranking, scores included, is exactly what an index of its own
//! tools alone would give, so nothing about a hidden tool (not even how common a word is
//! among hidden tools) reaches a run through a search. The statistics cost one pass over the
//! run's tools per query (a bit set and a sum); nothing is built per run, and the postings
//! are shared.
//!
//! The order is deterministic: by score, ties by name (the snapshot's slots are in name
//! order), the sums taken in a fixed order.

mod neighbours;
mod synonyms;
mod table;
mod terms;
mod wordnet;

use std::collections::HashMap;

use serde_json::Value;

use crate::execute::tool::Tool;

pub(crate) use terms::Terms;

/// The weight of a term of the tool's name: 2, chosen on the tuning part of
/// `bench/search-quality` with [`EXPANSION`] (4 before; see its README).
pub(crate) const NAME: f32 = 2.0;
/// The weight of a term of the title.
pub(crate) const TITLE: f32 = 2.0;
/// The weight of a term of the description.
pub(crate) const DESCRIPTION: f32 = 1.0;
/// The weight of a term of a parameter's name.
pub(crate) const PARAMETER_NAME: f32 = 1.0;
/// The weight of a term of a parameter's description or title.
pub(crate) const PARAMETER_TEXT: f32 = 0.5;

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.9;

/// The weight of a query's word's related word ([`synonyms`]) against the word itself: 0.7,
/// chosen on the tuning part of `bench/search-quality` (0.5 before).
pub(crate) const EXPANSION: f64 = 0.7;

/// The weight of a word near a query's word by meaning ([`neighbours`]) against the word
/// itself, times the two words' cosine similarity: 0.7, chosen on the tuning part of
/// `bench/search-quality`.
pub(crate) const NEIGHBOUR: f64 = 0.7;
/// The least cosine similarity of a word near a query's word for it to count: 0.6.
pub(crate) const NEIGHBOUR_MIN: f64 = 0.6;

/// The weight of a WordNet synonym ([`wordnet`]) of a query's word against the word itself.
pub(crate) const WORDNET_SYNONYM: f64 = 0.3;
/// The weight of a WordNet derivation (`watcher` → `watch`).
pub(crate) const WORDNET_DERIVATION: f64 = 0.3;
/// The weight of a word one step more general or more specific in WordNet: none, as measured
/// on the tuning part of `bench/search-quality` (0.1 cost a query there, 0.2 and 0.25 more).
pub(crate) const WORDNET_HYPERNYM: f64 = 0.0;
/// A WordNet relation met through a key's `r`-th most common sense weighs `DECAY^(r-1)` of
/// the first sense's.
pub(crate) const WORDNET_DECAY: f64 = 0.5;

/// The weight of a WordNet relation met through the key's `rank`-th sense.
fn wordnet_weight(relation: wordnet::Relation, rank: u8) -> f64 {
    let base = match relation {
        wordnet::Relation::Synonym => WORDNET_SYNONYM,
        wordnet::Relation::Derivation => WORDNET_DERIVATION,
        wordnet::Relation::Hypernym | wordnet::Relation::Hyponym => WORDNET_HYPERNYM,
    };
    base * WORDNET_DECAY.powi(i32::from(rank) - 1)
}

/// A query's terms beyond this many are ignored (a query is a few words; this bounds the
/// work a long one can cause).
pub(crate) const MAX_QUERY_TERMS: usize = 32;
/// A query's text beyond this many bytes is ignored.
pub(crate) const MAX_QUERY_BYTES: usize = 1024;

/// One document holding a term, and the term's weighted frequency in it.
#[derive(Debug, Clone, Copy)]
struct Posting {
    slot: u32,
    frequency: f32,
}

/// A query's terms: each indexed term's id (if a tool has it) and its related terms' ids and
/// weights.
/// A query's terms: each one's id (none when no tool has it), its related terms of the
/// software table ([`synonyms`]) and of WordNet ([`wordnet`]), with their weights.
type QueryTerms = Vec<(Option<usize>, Vec<(usize, f64)>, Vec<(usize, f64)>)>;

/// What [`SearchIndex::ranked`] found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ranked {
    /// How many distinct terms the query has, stop words aside (also those no tool has).
    pub(crate) terms: usize,
    /// The best documents, best first.
    pub(crate) found: Vec<Found>,
}

/// One document a query found.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    pub(crate) slot: usize,
    pub(crate) score: f64,
    /// How many of the query's terms it matched, by the term itself or a related one.
    pub(crate) matched: usize,
}

/// The postings of every term of a snapshot's tools.
pub(crate) struct SearchIndex {
    terms: Terms,
    /// Term → its postings' position in `postings`.
    ids: HashMap<String, usize>,
    /// Per term, its postings, in slot order.
    postings: Vec<Vec<Posting>>,
    /// Per slot, the document's weighted length.
    lengths: Vec<f32>,
    /// Term → the terms related to it by the software table ([`synonyms`]), stemmed;
    /// only terms of the index.
    related: HashMap<String, Vec<usize>>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("documents", &self.lengths.len())
            .field("terms", &self.ids.len())
            .finish_non_exhaustive()
    }
}

impl SearchIndex {
    /// The index of `tools`, slot `i` being `tools[i]`. Builds every tool's definition.
    pub(crate) fn build<'a, I>(tools: I) -> SearchIndex
    where
        I: IntoIterator<Item = &'a Tool>,
        I::IntoIter: ExactSizeIterator,
    {
        let tools = tools.into_iter();
        let mut index = SearchIndex {
            terms: Terms::new(),
            ids: HashMap::new(),
            postings: Vec::new(),
            lengths: Vec::with_capacity(tools.len()),
            related: HashMap::new(),
        };
        let mut stems = HashMap::new();
        // The document being indexed: (term id, weight) per occurrence.
        let mut document: Vec<(usize, f32)> = Vec::new();
        for (slot, tool) in tools.enumerate() {
            document.clear();
            let mut add = |text: &str, weight: f32| {
                index.terms.each_cached(text, &mut stems, &mut |term| {
                    let id = match index.ids.get(term) {
                        Some(&id) => id,
                        None => {
                            let id = index.postings.len();
                            index.ids.insert(term.to_owned(), id);
                            index.postings.push(Vec::new());
                            id
                        }
                    };
                    document.push((id, weight));
                });
            };
            let definition = tool.definition_ref();
            add(&definition.name, NAME);
            if let Some(title) = &definition.title {
                add(title, TITLE);
            }
            add(&definition.description, DESCRIPTION);
            schema_texts(&definition.parameters, &mut add);
            index
                .lengths
                .push(document.iter().map(|&(_, weight)| weight).sum());
            // Occurrences in text order; summed per term in a fixed order.
            document.sort_by_key(|&(id, _)| id);
            let slot = u32::try_from(slot).unwrap_or(u32::MAX);
            let mut at = 0;
            while at < document.len() {
                let id = document[at].0;
                let mut frequency = 0.0;
                while at < document.len() && document[at].0 == id {
                    frequency += document[at].1;
                    at += 1;
                }
                index.postings[id].push(Posting { slot, frequency });
            }
        }
        index.relate();
        index
    }

    /// Fills `related` from [`synonyms::RELATED`]: for each of its words, the stems of its
    /// related words, keeping only those some tool has.
    fn relate(&mut self) {
        let stem = |word: &str| {
            let mut stem = None;
            self.terms
                .each(word, &mut |term| stem = Some(term.to_owned()));
            stem
        };
        let mut related: HashMap<String, Vec<usize>> = HashMap::new();
        for (word, targets) in synonyms::RELATED {
            let Some(from) = stem(word) else { continue };
            for target in *targets {
                let Some(&id) = stem(target).and_then(|to| self.ids.get(&to)) else {
                    continue;
                };
                let list = related.entry(from.clone()).or_default();
                if !list.contains(&id) {
                    list.push(id);
                }
            }
        }
        self.related = related;
    }

    /// The ids of the distinct indexed terms of `query`, in the order they first appear; at
    /// most [`MAX_QUERY_TERMS`] of the first [`MAX_QUERY_BYTES`] bytes.
    ///
    /// Each comes with its related terms' ids and weights, of the software table
    /// ([`synonyms`]) and of WordNet ([`wordnet`]; [`ranked`](Self::ranked) uses them only
    /// when none of the run's tools has the word), those that are not themselves terms of the
    /// query, in a fixed order; a term related both ways weighs the larger. A query word no
    /// tool has still brings its related terms.
    /// Also returns how many distinct terms the query has (those no tool has included).
    fn query_terms(&self, query: &str) -> (usize, QueryTerms) {
        let mut end = query.len().min(MAX_QUERY_BYTES);
        while !query.is_char_boundary(end) {
            end -= 1;
        }
        let mut words: Vec<String> = Vec::new();
        let mut seen = 0;
        self.terms.each(&query[..end], &mut |term| {
            if seen >= MAX_QUERY_TERMS {
                return;
            }
            seen += 1;
            if !words.iter().any(|word| word == term) {
                words.push(term.to_owned());
            }
        });
        let own: Vec<usize> = words
            .iter()
            .filter_map(|word| self.ids.get(word).copied())
            .collect();
        let distinct = words.len();
        let terms = words
            .iter()
            .map(|word| {
                let id = self.ids.get(word).copied();
                let add = |list: &mut Vec<(usize, f64)>, id: usize, weight: f64| {
                    if own.contains(&id) || weight <= 0.0 {
                        return;
                    }
                    match list.iter_mut().find(|(other, _)| *other == id) {
                        Some(entry) => entry.1 = entry.1.max(weight),
                        None => list.push((id, weight)),
                    }
                };
                let mut related: Vec<(usize, f64)> = Vec::new();
                for &id in self.related.get(word).into_iter().flatten() {
                    add(&mut related, id, EXPANSION);
                }
                let mut general: Vec<(usize, f64)> = Vec::new();
                for (near, cosine) in neighbours::near(word) {
                    if cosine < NEIGHBOUR_MIN {
                        break;
                    }
                    if let Some(&id) = self.ids.get(near) {
                        let weight = NEIGHBOUR * cosine;
                        if !related.iter().any(|&(other, w)| other == id && w >= weight) {
                            add(&mut general, id, weight);
                        }
                    }
                }
                for word in wordnet::related(word) {
                    if let Some(&id) = self.ids.get(word.stem) {
                        let weight = wordnet_weight(word.relation, word.rank);
                        // A term the software table relates at least as strongly adds nothing.
                        if !related.iter().any(|&(other, w)| other == id && w >= weight) {
                            add(&mut general, id, weight);
                        }
                    }
                }
                (id, related, general)
            })
            .filter(|(id, related, general)| {
                id.is_some() || !related.is_empty() || !general.is_empty()
            })
            .collect();
        (distinct, terms)
    }

    /// The `k` best documents for `query` among `candidates` (slots, in increasing order),
    /// with their scores: by score, then by slot. Documents that match no term of the query
    /// are not found.
    #[cfg(test)]
    pub(crate) fn top(&self, query: &str, candidates: &[usize], k: usize) -> Vec<(usize, f64)> {
        self.ranked(query, candidates, k)
            .found
            .into_iter()
            .map(|found| (found.slot, found.score))
            .collect()
    }

    /// [`top`](Self::top), with how many of the query's terms each document matched.
    pub(crate) fn ranked(&self, query: &str, candidates: &[usize], k: usize) -> Ranked {
        let mut ranked = Ranked {
            terms: 0,
            found: Vec::new(),
        };
        if k == 0 || candidates.is_empty() {
            return ranked;
        }
        let (distinct, terms) = self.query_terms(query);
        ranked.terms = distinct;
        if terms.is_empty() {
            return ranked;
        }
        let documents = self.lengths.len();
        let mut member = vec![0u64; documents.div_ceil(64)];
        let mut total = 0.0f64;
        let mut counted = 0usize;
        for &slot in candidates {
            if let Some(&length) = self.lengths.get(slot) {
                member[slot / 64] |= 1 << (slot % 64);
                total += f64::from(length);
                counted += 1;
            }
        }
        if counted == 0 {
            return ranked;
        }
        let n = counted as f64;
        let average = if total > 0.0 { total / n } else { 1.0 };
        let is_member = |slot: u32| {
            let slot = slot as usize;
            member[slot / 64] & (1 << (slot % 64)) != 0
        };
        let mut scores = vec![0.0f64; documents];
        let mut touched: Vec<usize> = Vec::new();
        // One query word's score per document: the best of the word's own BM25 term score
        // and its related terms' (weighted by `EXPANSION`), so a word counts once however
        // many of its related words a tool has.
        let mut best = vec![0.0f64; documents];
        let mut matched = vec![0u16; documents];
        let mut reached: Vec<usize> = Vec::new();
        let df_of = |id: usize| {
            self.postings[id]
                .iter()
                .filter(|p| is_member(p.slot))
                .count()
        };
        for (own, related, general) in terms {
            // WordNet's words and the neighbours by meaning only for a query word none of the
            // run's tools has: a word the tools use is matched as itself (and through the
            // software table), not diluted by WordNet's broader senses of it.
            let own_found = own.is_some_and(|id| df_of(id) > 0);
            let general = if own_found { Vec::new() } else { general };
            let alternatives = own
                .map(|id| (id, 1.0))
                .into_iter()
                .chain(related)
                .chain(general);
            for (id, weight) in alternatives {
                let postings = &self.postings[id];
                let df = df_of(id);
                if df == 0 {
                    continue;
                }
                let df = df as f64;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                for posting in postings.iter().filter(|p| is_member(p.slot)) {
                    let slot = posting.slot as usize;
                    let tf = f64::from(posting.frequency);
                    let length = f64::from(self.lengths[slot]);
                    let norm = K1 * (1.0 - B + B * length / average);
                    let score = weight * idf * tf * (K1 + 1.0) / (tf + norm);
                    if best[slot] == 0.0 {
                        reached.push(slot);
                    }
                    if score > best[slot] {
                        best[slot] = score;
                    }
                }
            }
            for slot in reached.drain(..) {
                if scores[slot] == 0.0 {
                    touched.push(slot);
                }
                scores[slot] += best[slot];
                matched[slot] = matched[slot].saturating_add(1);
                best[slot] = 0.0;
            }
        }
        let order = |a: &usize, b: &usize| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b));
        if touched.len() > k {
            touched.select_nth_unstable_by(k - 1, order);
            touched.truncate(k);
        }
        touched.sort_unstable_by(order);
        ranked.found = touched
            .into_iter()
            .map(|slot| Found {
                slot,
                score: scores[slot],
                matched: usize::from(matched[slot]),
            })
            .collect();
        ranked
    }
}

/// Calls `add` with the name (weight [`PARAMETER_NAME`]) of every property, and every
/// `description` and `title` (weight [`PARAMETER_TEXT`]), at any depth of `schema`.
fn schema_texts(schema: &Value, add: &mut dyn FnMut(&str, f32)) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                match (key.as_str(), value) {
                    ("description" | "title", Value::String(text)) => add(text, PARAMETER_TEXT),
                    ("properties", Value::Object(properties)) => {
                        for (name, property) in properties {
                            add(name, PARAMETER_NAME);
                            schema_texts(property, add);
                        }
                    }
                    // Enumerated values and defaults are data, not descriptions.
                    ("enum" | "const" | "default" | "examples", _) => {}
                    (_, value) => schema_texts(value, add),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| schema_texts(item, add)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::dynamic::DynamicTool;
    use serde_json::json;

    fn tool(name: &str, description: &str, parameters: Value) -> Tool {
        let parts = DynamicTool::new(name, description)
            .public()
            .parameters(parameters)
            .handler(|_ctx, _args| Ok::<_, String>(Value::Null))
            .check(&mut Vec::new())
            .expect("a valid tool");
        Tool::from_parts(parts)
    }

    fn empty() -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn index() -> SearchIndex {
        SearchIndex::build(&[
            tool("create_issue", "Open a new issue in a repository.", empty()),
            tool(
                "deploy",
                "Start a deployment of a project.",
                json!({
                    "type": "object",
                    "properties": {"environment": {"type": "string", "description": "Where: staging or production."}}
                }),
            ),
            tool("get_status", "Read the build status of a project.", empty()),
            tool("list_issues", "List the issues of a repository.", empty()),
        ])
    }

    fn names(index: &SearchIndex, query: &str, candidates: &[usize]) -> Vec<usize> {
        index
            .top(query, candidates, 10)
            .into_iter()
            .map(|(slot, _)| slot)
            .collect()
    }

    #[test]
    fn ranks_by_relevance() {
        let index = index();
        let all = [0, 1, 2, 3];
        assert_eq!(names(&index, "deploying to production", &all), [1]);
        assert_eq!(names(&index, "list issues", &all)[0], 3);
        assert_eq!(names(&index, "build status", &all), [2]);
        assert!(names(&index, "the", &all).is_empty());
        assert!(names(&index, "", &all).is_empty());
    }

    #[test]
    fn finds_only_candidates() {
        let index = index();
        assert_eq!(names(&index, "issue", &[0, 3]), [3, 0]);
        assert_eq!(names(&index, "issue", &[3]), [3]);
        assert!(names(&index, "issue", &[1, 2]).is_empty());
        assert!(names(&index, "issue", &[]).is_empty());
    }

    #[test]
    fn scores_depend_on_the_candidates_alone() {
        // The same two tools, alone or among others: the same scores.
        let big = index();
        let small = SearchIndex::build(&[
            tool("create_issue", "Open a new issue in a repository.", empty()),
            tool("list_issues", "List the issues of a repository.", empty()),
        ]);
        let from_big = big.top("repository issues", &[0, 3], 10);
        let from_small = small.top("repository issues", &[0, 1], 10);
        let scores = |found: &[(usize, f64)]| found.iter().map(|f| f.1).collect::<Vec<_>>();
        assert_eq!(scores(&from_big), scores(&from_small));
    }

    #[test]
    fn ties_go_by_name_and_k_cuts() {
        let twins = SearchIndex::build(&[
            tool("a_tool", "Send a message.", empty()),
            tool("b_tool", "Send a message.", empty()),
            tool("c_tool", "Send a message.", empty()),
        ]);
        assert_eq!(names(&twins, "message", &[0, 1, 2]), [0, 1, 2]);
        let two: Vec<usize> = twins
            .top("message", &[0, 1, 2], 2)
            .iter()
            .map(|f| f.0)
            .collect();
        assert_eq!(two, [0, 1]);
        assert!(twins.top("message", &[0, 1, 2], 0).is_empty());
    }

    #[test]
    fn related_words_are_found_below_the_words_themselves() {
        let index = SearchIndex::build(&[
            tool("delete_file", "Delete a file.", empty()),
            tool("remove_directory", "Remove a directory.", empty()),
            tool("read_file", "Read a file.", empty()),
        ]);
        let all = [0, 1, 2];
        // "folder" is no tool's word: its related word "directory" is (and "file", nearer by
        // meaning than by the table, comes after).
        assert_eq!(names(&index, "folder", &all), [1, 0, 2]);
        // "erase" finds the delete tool first (the table), then the remove one (by meaning).
        assert_eq!(names(&index, "erase", &all), [0, 1]);
        // Both words, one of them through its related word, rank above one word alone.
        assert_eq!(names(&index, "remove file", &all), [0, 1, 2]);
        // The query's own word ranks above its related word.
        let own = index.top("remove", &all, 3);
        assert_eq!(own.iter().map(|f| f.0).collect::<Vec<_>>(), [1, 0]);
        assert!(own[0].1 > own[1].1);
        // A relation goes one way: "remove" finds `delete`, "delete" not `remove` (through
        // this table; WordNet may relate them too, at its own lower weight).
        assert!(synonyms::RELATED.contains(&("remove", &["delete"])));
        assert!(!synonyms::RELATED.iter().any(|(word, _)| *word == "delete"));
    }

    #[test]
    fn wordnet_relates_words_the_hand_written_table_does_not() {
        let index = SearchIndex::build(&[
            tool("list_servers", "List the servers.", empty()),
            tool("stop_server", "Stop a server.", empty()),
            tool("halt_job", "Halt a job.", empty()),
        ]);
        // "halt" is in no pair of the software table; WordNet has "stop" among its synonyms.
        // In a run that sees no tool with the word "halt", it finds the stop tool.
        let found = index.top("halt", &[0, 1], 5);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, 1);
        // Below the word itself.
        assert!(found[0].1 < index.top("stop", &[0, 1], 5)[0].1);
        // In a run that sees a tool with the word, WordNet is not asked: "halt" is that tool's
        // word, and finds it alone.
        assert_eq!(names(&index, "halt", &[0, 1, 2]), [2]);
    }

    #[test]
    fn neighbours_by_meaning_relate_words_no_table_has() {
        let index = SearchIndex::build(&[
            tool("create_coupon", "Create a coupon.", empty()),
            tool("list_customers", "List the customers.", empty()),
            tool("list_prices", "List the prices.", empty()),
        ]);
        // "discount" is in neither the software table nor any tool: its nearest words by
        // meaning are "price" (0.72) and "coupon" (0.64), both found, the nearer first.
        assert!(
            !synonyms::RELATED
                .iter()
                .any(|(word, _)| *word == "discount")
        );
        let found = index.top("discount", &[0, 1, 2], 5);
        assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), [2, 0]);
        // Below the words themselves.
        assert!(found[1].1 < index.top("coupon", &[0, 1, 2], 5)[0].1);
        // A word the run's tools have is matched as itself only.
        let run = SearchIndex::build(&[
            tool("create_coupon", "Create a coupon.", empty()),
            tool("apply_discount", "Apply a discount.", empty()),
        ]);
        assert_eq!(names(&run, "discount", &[0, 1]), [1]);
        // Another word of the tools near no query word finds nothing.
        assert!(names(&index, "discount", &[1]).is_empty());
    }

    #[test]
    fn long_queries_are_bounded() {
        let index = index();
        let long = "deploy ".repeat(10_000);
        assert_eq!(names(&index, &long, &[0, 1, 2, 3]), [1]);
        let many: String = (0..100).map(|i| format!("word{i} ")).collect::<String>() + "deploy";
        assert!(names(&index, &many, &[0, 1, 2, 3]).is_empty());
        let _ = index.top(&"é".repeat(2000), &[0, 1], 5);
    }
}
