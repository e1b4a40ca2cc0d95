//! Deferred loading: a session of a run whose first request shows the model a few tools and
//! a search tool, and which loads, inside the run's allowed set, the tools the model finds.
//!
//! Tests: `tests/tests/deferred.rs`, and `tests/tests/integration/mcp_deferred.rs` over MCP.
//!
//! | profile | first request (`export`) | the search tool | its answer | loading |
//! | --- | --- | --- | --- | --- |
//! | OpenAI Responses | the loaded functions, each in its namespace (`{type: "namespace", name, description, tools}`), then `{type: "tool_search", execution: "client", description, parameters}` | `tool_search_call` items | a `tool_search_output` item whose `tools` are the newly loaded functions, in their namespaces, `defer_loading: true` | in the conversation: `export` does not change |
//! | Anthropic | every allowed tool, those not loaded `defer_loading: true`, then the search tool | a `tool_use` of the search tool | a `tool_result` of `tool_reference` blocks | in the conversation: `export` does not change |
//! | OpenAI Chat, Gemini, MCP | the loaded tools, then the search tool | a call of the search tool | the found tools' names and descriptions | the found tools are appended to `export` |
//!
//! The search tool is `search_tools` unless [`DeferredOptions::search_tool_name`] says
//! otherwise; it takes `{"query": "..."}`.
//!
//! A session is opened with [`Run::deferred`](crate::Run::deferred).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};

use crate::audit::{AuditEvent, DiscoveryEvent, DiscoveryKind};
use crate::discover::allowed::AllowedSet;
use crate::discover::run::Run;
use crate::discover::search::{QueryVector, SearchHit, query_vector, search_with};
use crate::execute::observation::{ErrorKind, Observation};
use crate::execute::tool::Tool;
use crate::present::export::{exported_object, tool_list};
use crate::present::provider::{anthropic, openai};
use crate::present::reader::{ParseError, Reader};
use crate::project::discovery::Snapshot;
use crate::register::dynamic::DynamicTool;
use crate::register::registry::Registry;
use crate::resolve::call::ToolCall;
use crate::shared::profile::{CompatibilityError, Incompatibility, Profile};

/// The name of the search tool unless the options name another.
pub const SEARCH_TOOL_NAME: &str = "search_tools";

/// How many tools a search finds and loads at most, unless the options say otherwise.
const RESULTS: usize = 5;

/// The most tools one search may find, whatever the options say.
const MAX_RESULTS: usize = 50;

/// How many more tools a session's search asks for, in case some cannot be expressed in
/// its profile.
const SPARE: usize = 8;

/// The most namespaces the search tool's description names.
const NAMED_NAMESPACES: usize = 20;

/// What a deferred session loads first, and how it searches.
///
/// ```
/// use registry_core::deferred::DeferredOptions;
///
/// let options = DeferredOptions::new()
///     .load(["get_status"])
///     .results(3)
///     .namespace_description("builds", "Build pipelines: status, logs and artifacts.");
/// ```
#[derive(Debug, Clone)]
#[must_use = "options do nothing until they are given to `Run::deferred`"]
pub struct DeferredOptions {
    load: Vec<String>,
    results: usize,
    search_tool_name: String,
    namespaces: BTreeMap<String, String>,
}

impl Default for DeferredOptions {
    fn default() -> Self {
        DeferredOptions {
            load: Vec::new(),
            results: RESULTS,
            search_tool_name: SEARCH_TOOL_NAME.to_owned(),
            namespaces: BTreeMap::new(),
        }
    }
}

impl DeferredOptions {
    /// Loads only the `always_loaded` tools first; a search finds 5 tools.
    pub fn new() -> Self {
        DeferredOptions::default()
    }

    /// Loads these tools in the first request too, besides the `always_loaded` ones. A name
    /// the run may not use is left out, without a word (a session never mentions a hidden
    /// tool); [`DeferredSession::loaded`] says what was loaded.
    pub fn load<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.load.extend(names.into_iter().map(Into::into));
        self
    }

    /// How many tools a search finds (and loads) at most: 5 unless set; between 1 and 50.
    pub fn results(mut self, results: usize) -> Self {
        self.results = results.clamp(1, MAX_RESULTS);
        self
    }

    /// Names the search tool (`search_tools` unless set) where the provider calls it by name
    /// (all but OpenAI Responses, whose `tool_search` has none). It must follow the tool-name
    /// rule and name no tool of the run, or the export fails saying so.
    pub fn search_tool_name(mut self, name: impl Into<String>) -> Self {
        self.search_tool_name = name.into();
        self
    }

    /// The description of the namespace `namespace` where OpenAI Responses shows it (default:
    /// "Tools of the `<namespace>` group."). Say what its tools are for: the model reads it.
    pub fn namespace_description(
        mut self,
        namespace: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        self.namespaces.insert(namespace.into(), description.into());
        self
    }
}

/// A run's tools as a model meets them a few at a time: the first request holds the tools
/// loaded first and a search tool, and each search loads, from the run's allowed set only,
/// the tools it finds. Made by [`Run::deferred`].
///
/// The session keeps the *loaded* set: it starts with the run's `always_loaded` tools and
/// those named in [`DeferredOptions::load`], and grows by what searches find. Loading only
/// appends: the tool objects of an earlier export never move nor change a byte, so a
/// provider's prompt cache survives (where loading happens in the conversation, OpenAI
/// Responses and Anthropic, the export does not change at all).
///
/// **Calls.** [`parse_calls`](Self::parse_calls) reads a model response into searches, which
/// [`search`](Self::search) answers, and tool calls, which the run resolves as always
/// ([`Run::call`]). The allowed set is the boundary, not the loaded set: a call to a tool of
/// the run that is not loaded yet is resolved like any other, its arguments validated against
/// its full schema. Anthropic can send one (deferred tools are in its request); elsewhere the
/// model never had the tool's definition, and read its name at most in a search answer that
/// could not load it (the request was full). Calling a tool does not load it. Nothing outside
/// the allowed set is ever found, loaded, exported or named.
///
/// A session is `Send + Sync`: searches may come from several tasks; each is answered whole.
///
/// ```standalone_crate
/// use registry_core::{tool, deferred::DeferredOptions, Profile, Registry, deferred::SessionCall, Subject};
/// use serde_json::json;
///
/// /// Read the build status of a project.
/// #[tool(scopes = "build:read", read_only, always_loaded)]
/// fn get_status(project: String) -> String {
///     format!("{project}: passed")
/// }
///
/// /// Roll a deployment back to the previous release.
/// #[tool(scopes = "deploy:write", destructive)]
/// fn rollback(project: String) -> String {
///     format!("{project}: rolled back")
/// }
///
/// let registry = Registry::from_inventory().unwrap();
/// let run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["build:read", "deploy:write"]));
/// let session = run.deferred(Profile::OpenAiChat { strict: false }, DeferredOptions::new());
///
/// // The first request: the always-loaded tool and the search tool.
/// let tools = session.export().unwrap();
/// let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
/// assert_eq!(names, ["get_status", "search_tools"]);
///
/// // The model searches; the answer loads what it found.
/// let response = json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
///     "function": {"name": "search_tools", "arguments": "{\"query\": \"undo a bad deployment\"}"}}]});
/// let calls = session.parse_calls(&response).unwrap();
/// let [SessionCall::Search(search)] = calls.as_slice() else { panic!("one search") };
/// let answer = session.search(search);
/// assert_eq!(answer.loaded(), ["rollback"]);
/// assert_eq!(answer.message()["role"], "tool");
///
/// // The next request appends it: what was sent before is a prefix of what is sent now.
/// let after = session.export().unwrap();
/// assert_eq!(after.as_array().unwrap()[..2], tools.as_array().unwrap()[..]);
/// assert_eq!(after[2]["function"]["name"], "rollback");
/// ```
pub struct DeferredSession {
    profile: Profile,
    registry: Registry,
    snapshot: Arc<Snapshot>,
    allowed: AllowedSet,
    /// The search tool, or why it cannot be made (an invalid name).
    search_tool: Result<Tool, String>,
    search_tool_name: String,
    results: usize,
    namespaces: BTreeMap<String, String>,
    /// The tools loaded first, in name order: the start of every export.
    first: Vec<Tool>,
    /// The tools loaded by searches, in the order they were loaded.
    later: Mutex<Vec<Tool>>,
    /// The run's tenant and principal, for the audit of searches.
    tenant: String,
    principal: Option<String>,
    /// The last search that found tools, none of which has been called since: recorded as
    /// [`DiscoveryKind::NotCalled`] at the next search, or when the session ends.
    pending: Mutex<Option<DiscoveryEvent>>,
}

impl std::fmt::Debug for DeferredSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredSession")
            .field("profile", &self.profile)
            .field("run", &self.allowed.run_id())
            .field("loaded", &self.loaded())
            .finish_non_exhaustive()
    }
}

impl Run {
    /// A deferred session of this run for `profile`: its first request holds the tools
    /// loaded first (the `always_loaded` ones and those `options` names, of this run's allowed
    /// set) and a search tool; each search loads the tools it finds, from the allowed set
    /// only. See [`DeferredSession`].
    #[must_use = "a session does nothing until its export is sent to the model"]
    pub fn deferred(&self, profile: Profile, options: DeferredOptions) -> DeferredSession {
        let allowed = self.allowed().clone();
        let wanted: BTreeSet<&str> = options.load.iter().map(String::as_str).collect();
        let first: Vec<Tool> = allowed
            .entries()
            .iter()
            .filter(|entry| {
                entry.tool.settings().always_loaded || wanted.contains(entry.tool.name())
            })
            .map(|entry| entry.tool.clone())
            .collect();
        let description = search_description(&allowed, &first);
        let search_tool = search_tool(&options.search_tool_name, &description);
        DeferredSession {
            profile,
            registry: self.origin().clone(),
            snapshot: self.shared_snapshot(),
            allowed,
            search_tool,
            search_tool_name: options.search_tool_name,
            results: options.results,
            namespaces: options.namespaces,
            first,
            later: Mutex::new(Vec::new()),
            tenant: self.subject().tenant().to_owned(),
            principal: self.subject().principal().map(str::to_owned),
            pending: Mutex::new(None),
        }
    }
}

/// A hit that matches at most this share of the query's words, and is not near it by
/// meaning, is no match: a search whose hits are all like it answers that nothing matched.
pub const NO_MATCH_COVERAGE: f64 = 0.2;
/// Below this share of the query's words matched by the best hit (and without a near
/// meaning), the answer says the matches are weak and how to narrow the query.
pub const WEAK_COVERAGE: f64 = 0.5;
/// A hit whose cosine similarity with the query (with an embedder) is at least this is a
/// good one, whatever its words.
pub const GOOD_SIMILARITY: f32 = 0.5;

/// How good a search's best hit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quality {
    Good,
    Weak,
    None,
}

fn quality(hits: &[SearchHit]) -> Quality {
    let near = |hit: &SearchHit| hit.similarity().is_some_and(|s| s >= GOOD_SIMILARITY);
    if hits
        .iter()
        .any(|hit| near(hit) || hit.coverage() >= WEAK_COVERAGE)
    {
        Quality::Good
    } else if hits.iter().any(|hit| hit.coverage() > NO_MATCH_COVERAGE) {
        Quality::Weak
    } else {
        Quality::None
    }
}

/// The search tool's description: what it does, and how many tools (in which namespaces)
/// it can find; fixed when the session starts.
fn search_description(allowed: &AllowedSet, first: &[Tool]) -> String {
    let deferred: Vec<&Tool> = allowed
        .entries()
        .iter()
        .map(|entry| &entry.tool)
        .filter(|tool| !first.iter().any(|loaded| loaded.name() == tool.name()))
        .collect();
    let namespaces: BTreeSet<&str> = deferred
        .iter()
        .filter_map(|tool| tool.settings().namespace.as_deref())
        .collect();
    let count = deferred.len();
    let mut text = String::from(
        "Find tools by what they do. Give a few words saying what you need done (for example \
         \"restart a web server\"); the best matches are loaded and can then be called by name.",
    );
    text.push_str(&match count {
        0 => " No more tools can be loaded.".to_owned(),
        1 => " 1 more tool can be loaded".to_owned(),
        _ => format!(" {count} more tools can be loaded"),
    });
    if count > 0 {
        if !namespaces.is_empty() {
            let mut named: Vec<&str> = namespaces.iter().copied().take(NAMED_NAMESPACES).collect();
            let more = namespaces.len() - named.len();
            let rest = format!("{more} more");
            if more > 0 {
                named.push(&rest);
            }
            text.push_str(", in the groups: ");
            text.push_str(&named.join(", "));
        }
        text.push('.');
    }
    text
}

/// The arguments schema of the search tool.
fn search_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What you need done, in a few words.",
            },
        },
        "required": ["query"],
        "additionalProperties": false,
    })
}

/// The search tool, exported like any tool; it never runs (the session answers it).
fn search_tool(name: &str, description: &str) -> Result<Tool, String> {
    let mut problems = Vec::new();
    DynamicTool::new(name, description)
        .public()
        .parameters(search_parameters())
        .read_only()
        .handler(|_ctx, _args| Err::<Value, _>("the deferred session answers this tool"))
        .check(&mut problems)
        .map(Tool::from_parts)
        .ok_or_else(|| {
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        })
}

impl DeferredSession {
    /// The profile it exports for.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The name of the search tool where the provider calls it by name.
    pub fn search_tool_name(&self) -> &str {
        &self.search_tool_name
    }

    /// The run's allowed set: everything a search may find.
    pub fn allowed(&self) -> &AllowedSet {
        &self.allowed
    }

    /// The loaded tools' names: those loaded first, in name order, then those searches
    /// loaded, in the order they were.
    pub fn loaded(&self) -> Vec<String> {
        let later = self.lock();
        self.first
            .iter()
            .chain(later.iter())
            .map(|tool| tool.name().to_owned())
            .collect()
    }

    /// Whether the tool named `name` is loaded.
    pub fn is_loaded(&self, name: &str) -> bool {
        self.first.iter().any(|tool| tool.name() == name)
            || self.lock().iter().any(|tool| tool.name() == name)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Tool>> {
        self.later.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Exactly the JSON the profile's consumer takes as its list of tools, for the session's
    /// next request (see the table of [`DeferredSession`]): byte-identical from call to call
    /// while nothing is loaded, and after loading, the earlier tool objects first, unchanged.
    ///
    /// Fails, listing every problem, if a loaded tool or the search tool cannot be expressed
    /// in the profile, if the search tool's name is not a valid tool name, or if a tool of the
    /// run has the search tool's name.
    #[must_use = "the export is what the model is shown: send it with the request"]
    pub fn export(&self) -> Result<Value, CompatibilityError> {
        let mut problems = Vec::new();
        let search_tool = self.checked_search_tool(&mut problems);
        let mut object = |tool: &Tool| match exported_object(self.profile, tool) {
            Ok(object) => Some(object),
            Err(found) => {
                problems.extend(found.iter().cloned());
                None
            }
        };
        let list = match self.profile {
            Profile::OpenAiResponses { .. } => {
                let mut items = self.responses_items(&self.first, false, &mut object);
                if let Some(tool) = search_tool {
                    let definition = tool.definition_ref();
                    items.push(openai::responses_tool_search(
                        &definition.description,
                        &definition.parameters,
                    ));
                }
                Value::Array(items)
            }
            Profile::Anthropic => {
                let mut items: Vec<Value> = Vec::new();
                for entry in self.allowed.entries() {
                    let loaded = self
                        .first
                        .iter()
                        .any(|tool| tool.name() == entry.tool.name());
                    if let Some(item) = object(&entry.tool) {
                        items.push(if loaded {
                            item
                        } else {
                            anthropic::deferred(item)
                        });
                    }
                }
                items.extend(search_tool.and_then(&mut object));
                Value::Array(items)
            }
            Profile::OpenAiChat { .. } | Profile::Gemini | Profile::Mcp => {
                let later = self.lock().clone();
                let mut items: Vec<Value> = self.first.iter().filter_map(&mut object).collect();
                items.extend(search_tool.and_then(&mut object));
                items.extend(later.iter().filter_map(&mut object));
                tool_list(self.profile, items)
            }
        };
        if problems.is_empty() {
            Ok(list)
        } else {
            Err(CompatibilityError(problems))
        }
    }

    /// The search tool, or the problem that keeps it out of the export.
    fn checked_search_tool(&self, problems: &mut Vec<Incompatibility>) -> Option<&Tool> {
        let problem = |rule: String, fix: &str| Incompatibility {
            profile: self.profile,
            tool: self.search_tool_name.clone(),
            pointer: String::new(),
            rule,
            fix: fix.to_owned(),
        };
        match &self.search_tool {
            Err(reason) => {
                problems.push(problem(
                    format!("the deferred session's search tool cannot be made: {reason}"),
                    "give `DeferredOptions::search_tool_name` a valid tool name",
                ));
                None
            }
            Ok(tool) => {
                let named = !matches!(self.profile, Profile::OpenAiResponses { .. });
                if named && self.allowed.permits(tool.name()) {
                    problems.push(problem(
                        format!(
                            "the deferred session's search tool is named {:?}, as is a tool of the run",
                            tool.name()
                        ),
                        "name the search tool otherwise with `DeferredOptions::search_tool_name`",
                    ));
                    return None;
                }
                Some(tool)
            }
        }
    }

    /// OpenAI Responses items for `tools`: each in its namespace (namespaces and lone
    /// functions in name order, a namespace's functions in name order), `defer_loading: true`
    /// if `deferred`.
    fn responses_items(
        &self,
        tools: &[Tool],
        deferred: bool,
        object: &mut dyn FnMut(&Tool) -> Option<Value>,
    ) -> Vec<Value> {
        let mut groups: BTreeMap<&str, Vec<(&str, Value)>> = BTreeMap::new();
        let mut lone: Vec<(&str, Value)> = Vec::new();
        for tool in tools {
            let Some(mut function) = object(tool) else {
                continue;
            };
            if deferred {
                function = openai::responses_deferred(function);
            }
            match tool.settings().namespace.as_deref() {
                Some(namespace) => groups
                    .entry(namespace)
                    .or_default()
                    .push((tool.name(), function)),
                None => lone.push((tool.name(), function)),
            }
        }
        let mut items: Vec<(&str, Value)> = lone;
        for (namespace, mut functions) in groups {
            functions.sort_by(|a, b| a.0.cmp(b.0));
            let functions = functions
                .into_iter()
                .map(|(_, function)| function)
                .collect();
            let description = self.namespace_description(namespace);
            items.push((
                namespace,
                openai::responses_namespace(namespace, &description, functions),
            ));
        }
        items.sort_by(|a, b| a.0.cmp(b.0));
        items.into_iter().map(|(_, item)| item).collect()
    }

    fn namespace_description(&self, namespace: &str) -> Cow<'_, str> {
        match self.namespaces.get(namespace) {
            Some(description) => Cow::Borrowed(description),
            None => Cow::Owned(format!("Tools of the `{namespace}` group.")),
        }
    }

    /// The searches and tool calls in `response`, a provider response as JSON, in order: as
    /// [`Profile::parse_calls`] reads them, with the search tool's calls (OpenAI Responses'
    /// `tool_search_call` items) as [`SessionCall::Search`].
    #[must_use = "the calls read do nothing until they are searched or run"]
    pub fn parse_calls(&self, response: &Value) -> Result<Vec<SessionCall>, ParseError> {
        let responses = matches!(self.profile, Profile::OpenAiResponses { .. });
        let mut reader = Reader {
            profile: self.profile,
            calls: Vec::new(),
            searches: responses.then(Vec::new),
        };
        reader.read(response)?;
        let mut searches = reader.searches.unwrap_or_default().into_iter().peekable();
        let mut read = Vec::new();
        for (position, call) in reader.calls.into_iter().enumerate() {
            while let Some((_, id, arguments)) =
                searches.next_if(|(before, _, _)| *before <= position)
            {
                read.push(SessionCall::Search(SearchCall::new(id, arguments)));
            }
            if !responses && call.name() == self.search_tool_name {
                read.push(SessionCall::Search(SearchCall::from_call(
                    call,
                    &self.registry,
                )));
            } else {
                self.called(call.name());
                read.push(SessionCall::Call(call));
            }
        }
        for (_, id, arguments) in searches {
            read.push(SessionCall::Search(SearchCall::new(id, arguments)));
        }
        Ok(read)
    }

    /// Answers `call`: finds the best tools of the run's allowed set for its query (those its
    /// calls would refuse, revoked or not ready, left out), loads those not loaded yet, and
    /// makes the profile's answer (see the table of [`DeferredSession`]).
    ///
    /// A provider that takes at most so many tools in a request (OpenAI: 128, Gemini: 512)
    /// is never sent more: what would not fit is not loaded, and the answer says so. Invalid
    /// arguments (not `{"query": "<text>"}`) are answered as an error the model can correct,
    /// or, for OpenAI Responses, whose answer holds tools only, with no tools.
    ///
    /// With an embedder, this calls it on this thread (the query, and the first time the
    /// snapshot's tools): an async server or loop should make the embedding first, off its
    /// workers, with [`embedding`](Self::embedding), then answer with
    /// [`search_embedded`](Self::search_embedded).
    pub fn search(&self, call: &SearchCall) -> SearchAnswer {
        let embedded = self.embedding(call).map(QueryEmbedding::embed);
        self.search_embedded(call, embedded.as_ref())
    }

    /// What [`search`](Self::search) of `call` needs of the registry's embedder, to be made
    /// apart from the search (on a blocking thread, outside any lock of the caller's) with
    /// [`QueryEmbedding::embed`]; `None` if it needs nothing: the registry has no embedder,
    /// or `call` holds no query.
    ///
    /// ```
    /// use registry_core::deferred::{DeferredOptions, SearchCall};
    /// use registry_core::{DynamicTool, Profile, Registry, Subject};
    /// use serde_json::json;
    ///
    /// let registry = Registry::builder()
    ///     .tool(DynamicTool::new("rollback", "Roll a deployment back.").public()
    ///         .handler(|_ctx, _args| Ok::<_, String>(json!("done"))))
    ///     .build()
    ///     .unwrap();
    /// let run = registry.open_run("run-1", &Subject::new("acme"));
    /// let session = run.deferred(Profile::Mcp, DeferredOptions::new());
    /// let call = SearchCall::new("c1", json!({"query": "undo a deployment"}));
    /// // Without an embedder there is nothing to embed: the search is lexical.
    /// let embedded = session.embedding(&call).map(|pending| pending.embed());
    /// assert!(embedded.is_none());
    /// let answer = session.search_embedded(&call, embedded.as_ref());
    /// assert_eq!(answer.loaded(), ["rollback"]);
    /// ```
    pub fn embedding(&self, call: &SearchCall) -> Option<QueryEmbedding> {
        self.registry.embedder()?;
        let query = call.query().ok()?;
        Some(QueryEmbedding {
            registry: self.registry.clone(),
            snapshot: self.snapshot.clone(),
            query: query.to_owned(),
        })
    }

    /// [`search`](Self::search) with the query's embedding made beforehand
    /// ([`embedding`](Self::embedding)): never calls the embedder, so it may be answered on an
    /// async worker and under a lock. The search is lexical if `embedded` is `None`, is of
    /// another query, or was made for another registry snapshot than this session's whose
    /// tools' vectors are not built yet.
    pub fn search_embedded(
        &self,
        call: &SearchCall,
        embedded: Option<&EmbeddedQuery>,
    ) -> SearchAnswer {
        let query = match call.query() {
            Ok(query) => query,
            Err(problem) => return self.invalid(call, &problem),
        };
        // A tool the profile cannot express is never found (a startup `Registry::check`
        // keeps there from being any): a few more are asked for to make up for them.
        let mut hits = search_with(
            &self.registry,
            &self.snapshot,
            &self.allowed,
            query,
            self.results + SPARE,
            embedded.and_then(|embedded| embedded.vector.as_ref()),
        );
        hits.retain(|hit| hit.tool().lowered(self.profile).is_ok());
        hits.truncate(self.results);
        let quality = quality(&hits);
        if quality == Quality::None {
            // Noise: nothing is loaded, and the answer says so.
            hits.clear();
        }
        self.audit_search(call, query, &hits);
        let capacity = self
            .profile
            .rules()
            .max_tools
            .map_or(usize::MAX, |max| max.saturating_sub(1));
        let mut later = self.lock();
        let mut loaded = Vec::new();
        let mut full = 0;
        for hit in &hits {
            let known = self
                .first
                .iter()
                .chain(later.iter())
                .any(|tool| tool.name() == hit.name());
            if known {
                continue;
            }
            if self.first.len() + later.len() >= capacity {
                full += 1;
                continue;
            }
            later.push(hit.tool().clone());
            loaded.push(hit.tool().clone());
        }
        drop(later);
        let message = self.answer(call, &hits, &loaded, full, quality);
        let export_changed = !loaded.is_empty()
            && matches!(
                self.profile,
                Profile::OpenAiChat { .. } | Profile::Gemini | Profile::Mcp
            );
        SearchAnswer {
            message,
            hits,
            loaded: loaded.iter().map(|tool| tool.name().to_owned()).collect(),
            export_changed,
        }
    }

    /// The profile's answer to a search that found `hits` and loaded `loaded`; `full` found
    /// tools did not fit in the request.
    fn answer(
        &self,
        call: &SearchCall,
        hits: &[SearchHit],
        loaded: &[Tool],
        full: usize,
        quality: Quality,
    ) -> Value {
        let text = || found_text(hits, full, quality, &self.namespace_names());
        match self.profile {
            Profile::OpenAiResponses { .. } => {
                let mut object = |tool: &Tool| exported_object(self.profile, tool).ok();
                let tools = self.responses_items(loaded, true, &mut object);
                openai::responses_search_output(&call.id, tools)
            }
            Profile::Anthropic => {
                // Only deferred tools can be referenced; those loaded first are in context.
                let references: Vec<&str> = hits
                    .iter()
                    .map(SearchHit::name)
                    .filter(|name| !self.first.iter().any(|tool| tool.name() == *name))
                    .collect();
                if references.is_empty() {
                    self.render(call, text())
                } else {
                    anthropic::search_result(&call.id, &references)
                }
            }
            Profile::OpenAiChat { .. } | Profile::Gemini | Profile::Mcp => {
                self.render(call, text())
            }
        }
    }

    /// The profile's result message for the search tool's call, holding `content`.
    fn render(&self, call: &SearchCall, content: Value) -> Value {
        let observation = Observation::success(
            call.id.clone(),
            self.search_tool_name.clone(),
            content.into(),
        )
        .with_generated_id(call.generated_id);
        self.profile.render(&observation)
    }

    /// The namespaces of the run's tools, at most `NAMED_NAMESPACES` (20), in name order.
    fn namespace_names(&self) -> Vec<&str> {
        let names: BTreeSet<&str> = self
            .allowed
            .entries()
            .iter()
            .filter_map(|entry| entry.tool.settings().namespace.as_deref())
            .collect();
        names.into_iter().take(NAMED_NAMESPACES).collect()
    }

    /// Records what became of the previous search, if none of its tools was called, and of
    /// this one if it found nothing; keeps this one's tools to see if one is called.
    fn audit_search(&self, call: &SearchCall, query: &str, hits: &[SearchHit]) {
        let (query_bytes, query_hash) = crate::shared::audit_key::argument_fingerprint(
            self.registry.audit_key(),
            &json!(query),
        );
        let event = DiscoveryEvent {
            run_id: self.allowed.run_id().to_owned(),
            tenant: self.tenant.clone(),
            principal: self.principal.clone(),
            fingerprint: self.allowed.fingerprint(),
            kind: if hits.is_empty() {
                DiscoveryKind::NothingFound
            } else {
                DiscoveryKind::NotCalled
            },
            call_id: call.id.clone(),
            query_bytes,
            query_hash,
            found: hits.iter().map(|hit| hit.name().to_owned()).collect(),
        };
        let previous = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            if hits.is_empty() {
                pending.take()
            } else {
                pending.replace(event.clone())
            }
        };
        let sink = self.registry.audit_sink();
        if let Some(previous) = previous {
            crate::audit::emit(sink, AuditEvent::Discovery(previous));
        }
        if hits.is_empty() {
            crate::audit::emit(sink, AuditEvent::Discovery(event));
        }
    }

    /// Tells the session that the model called `tool`: a search that found it led to a call,
    /// and is not recorded as [`DiscoveryKind::NotCalled`]. [`parse_calls`](Self::parse_calls)
    /// does it for the calls it reads; a server that receives calls another way (as an MCP
    /// `tools/call`) calls this.
    pub fn called(&self, tool: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending
            .as_ref()
            .is_some_and(|search| search.found.iter().any(|found| found == tool))
        {
            *pending = None;
        }
    }

    /// The answer to a call whose arguments are not a query.
    fn invalid(&self, call: &SearchCall, problem: &str) -> SearchAnswer {
        let message = match self.profile {
            Profile::OpenAiResponses { .. } => {
                openai::responses_search_output(&call.id, Vec::new())
            }
            Profile::Anthropic | Profile::OpenAiChat { .. } | Profile::Gemini | Profile::Mcp => {
                let text = format!(
                    "invalid arguments for \"{}\": {problem}; call it again with {{\"query\": \"<what you need done>\"}}",
                    self.search_tool_name
                );
                let observation = Observation::error(
                    call.id.clone(),
                    self.search_tool_name.clone(),
                    ErrorKind::InvalidArguments,
                    text,
                )
                .with_generated_id(call.generated_id);
                self.profile.render(&observation)
            }
        };
        SearchAnswer {
            message,
            hits: Vec::new(),
            loaded: Vec::new(),
            export_changed: false,
        }
    }
}

/// What a search tells the model where the answer is text: the tools found, grouped by
/// namespace (in the order of their best hit; tools of no namespace under `null`), each with
/// its description, whether they can be called, and, for a weak query or none, how to narrow
/// it (with the run's namespaces, `namespaces`).
fn found_text(hits: &[SearchHit], full: usize, quality: Quality, namespaces: &[&str]) -> Value {
    let mut groups: Vec<(Option<&str>, Vec<Value>)> = Vec::new();
    for hit in hits {
        let definition = hit.capability().definition;
        let namespace = hit.tool().settings().namespace.as_deref();
        let tool = json!({"name": definition.name, "description": definition.description});
        match groups.iter_mut().find(|(name, _)| *name == namespace) {
            Some((_, tools)) => tools.push(tool),
            None => groups.push((namespace, vec![tool])),
        }
    }
    let narrow = if namespaces.is_empty() {
        "say the action and the thing it acts on (\"create an issue\", \"list invoices\")"
            .to_owned()
    } else {
        format!(
            "say the action and the thing it acts on (\"create an issue\", \"list invoices\"), or name a group: {}",
            namespaces.join(", ")
        )
    };
    let note = if hits.is_empty() {
        format!("No tool matches this query well, so none was loaded. To find one, {narrow}.")
    } else {
        let mut note = if full > 0 {
            format!(
                "The tools found are loaded and can be called by name, except {full} that did not fit: the request holds as many tools as it may."
            )
        } else {
            "These tools are loaded and can be called by name.".to_owned()
        };
        if quality == Quality::Weak {
            note.push_str(&format!(
                " They match the query only in part: if none does what you need, search again; {narrow}."
            ));
        }
        note
    };
    let mut answer = Map::new();
    answer.insert(
        "namespaces".into(),
        Value::Array(
            groups
                .into_iter()
                .map(|(namespace, tools)| json!({"namespace": namespace, "tools": tools}))
                .collect(),
        ),
    );
    answer.insert("note".into(), Value::String(note));
    Value::Object(answer)
}

impl Drop for DeferredSession {
    /// A search whose tools were never called is recorded when the session ends.
    fn drop(&mut self) {
        let pending = self
            .pending
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(search) = pending {
            crate::audit::emit(self.registry.audit_sink(), AuditEvent::Discovery(search));
        }
    }
}

/// What the model sent, read by [`DeferredSession::parse_calls`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SessionCall {
    /// A call of a tool, to resolve in the run ([`Run::call`]) and render with
    /// [`Profile::render`].
    Call(ToolCall),
    /// A search, to answer with [`DeferredSession::search`].
    Search(SearchCall),
}

/// A search the model asked for: the search tool's call, or an OpenAI Responses
/// `tool_search_call`. Untrusted, like any call.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchCall {
    id: String,
    arguments: Result<Value, String>,
    generated_id: bool,
}

impl SearchCall {
    /// A search with call id `id` and these arguments (`{"query": "..."}`): for a server that
    /// receives the search tool's call itself, as an MCP `tools/call`.
    pub fn new(id: impl Into<String>, arguments: Value) -> Self {
        SearchCall {
            id: id.into(),
            arguments: Ok(arguments),
            generated_id: false,
        }
    }

    /// The search of a call of the search tool; its arguments parsed under the registry's
    /// limits.
    fn from_call(call: ToolCall, registry: &Registry) -> Self {
        let generated_id = call.has_generated_id();
        let (header, arguments) = call.into_parts(registry.limits());
        SearchCall {
            id: header.id,
            arguments: arguments.map_err(|problem| problem.to_string()),
            generated_id,
        }
    }

    /// The call id, which the answer names.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The query, or what is wrong with the arguments.
    pub fn query(&self) -> Result<&str, String> {
        let arguments = self.arguments.as_ref().map_err(Clone::clone)?;
        let Value::Object(object) = arguments else {
            return Err(format!(
                "expected an object with \"query\", got {}",
                crate::present::reader::describe(arguments)
            ));
        };
        let mut problems = Vec::new();
        for key in object.keys().filter(|key| *key != "query") {
            problems.push(format!(
                "unknown property {:?}",
                crate::audit::truncate(key, 40)
            ));
        }
        let query = match object.get("query") {
            Some(Value::String(query)) if !query.trim().is_empty() => Some(query.as_str()),
            Some(Value::String(_)) => {
                problems.push("\"query\" is empty".to_owned());
                None
            }
            Some(other) => {
                problems.push(format!(
                    "\"query\" must be a string, got {}",
                    crate::present::reader::describe(other)
                ));
                None
            }
            None => {
                problems.push("missing required property \"query\"".to_owned());
                None
            }
        };
        match query {
            Some(query) if problems.is_empty() => Ok(query),
            _ => Err(problems.join("; ")),
        }
    }
}

/// The embedding a deferred session's search needs, taken from the session
/// ([`DeferredSession::embedding`]) to be made apart from it: it owns what it needs, so it
/// can be moved to a blocking thread (`tokio::task::spawn_blocking(move || pending.embed())`).
pub struct QueryEmbedding {
    registry: Registry,
    snapshot: Arc<Snapshot>,
    query: String,
}

impl std::fmt::Debug for QueryEmbedding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryEmbedding")
            .field("query_bytes", &self.query.len())
            .finish_non_exhaustive()
    }
}

impl QueryEmbedding {
    /// Calls the registry's embedder: for the query, and, the first time a search of this
    /// registry snapshot needs them, for its tools (built once per snapshot, then shared).
    /// Blocks as long as the embedder does, so call it where blocking is allowed. An embedder
    /// that fails is logged, and the search it is given to is lexical.
    #[must_use]
    pub fn embed(self) -> EmbeddedQuery {
        EmbeddedQuery {
            vector: query_vector(&self.registry, &self.snapshot, &self.query),
        }
    }
}

/// A query's embedding, made by [`QueryEmbedding::embed`], for
/// [`DeferredSession::search_embedded`].
#[derive(Clone)]
pub struct EmbeddedQuery {
    vector: Option<QueryVector>,
}

impl std::fmt::Debug for EmbeddedQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedQuery")
            .field("embedded", &self.vector.is_some())
            .finish()
    }
}

/// The answer to a search: the message to send back, what was found and what was loaded.
#[derive(Debug, Clone)]
pub struct SearchAnswer {
    message: Value,
    hits: Vec<SearchHit>,
    loaded: Vec<String>,
    export_changed: bool,
}

impl SearchAnswer {
    /// The profile's message answering the search: an OpenAI Responses `tool_search_output`
    /// item, an Anthropic `tool_result` block, an OpenAI Chat `tool` message, a Gemini
    /// `functionResponse` part, an MCP `CallToolResult`.
    pub fn message(&self) -> &Value {
        &self.message
    }

    /// The message, taken.
    pub fn into_message(self) -> Value {
        self.message
    }

    /// The tools found, best first (loaded before or not).
    pub fn hits(&self) -> &[SearchHit] {
        &self.hits
    }

    /// The tools this search loaded, in the order they were found: none of them was loaded
    /// before.
    pub fn loaded(&self) -> &[String] {
        &self.loaded
    }

    /// Whether the session's [`export`](DeferredSession::export) changed: tools were appended
    /// to it (OpenAI Chat, Gemini, MCP; Responses and Anthropic load in the conversation). An
    /// MCP server then tells this client, and only it, with
    /// `notifications/tools/list_changed`.
    pub fn export_changed(&self) -> bool {
        self.export_changed
    }
}
