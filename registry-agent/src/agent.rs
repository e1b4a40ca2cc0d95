//! [`Agent`]: the model–tool loop over one run.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use registry_core::approval::{ApprovalRequest, Settled, Verdict};
use registry_core::deferred::{
    DeferredOptions, DeferredSession, EmbeddedQuery, QueryEmbedding, SearchAnswer, SessionCall,
};
use registry_core::{ErrorKind, Observation, Run, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::Instrument;

use crate::api::{Api, Request, ToolChoice};
use crate::budget::{Budget, Spent};
use crate::error::AgentError;
use crate::http::{self, Retries};

/// What the model is told of an approval that could not be applied (decided elsewhere, a
/// store that failed): nothing of who decided or of the store, which go to the log.
pub(crate) const APPROVAL_NOT_APPLIED: &str = "the approval could not be applied (it was decided elsewhere, or cannot be applied now); nothing was done";

/// Where the model is and how to reach it.
///
/// ```
/// use registry_agent::{Api, ModelConfig};
///
/// let config = ModelConfig::new(Api::OpenAiChat, "http://127.0.0.1:8080/v1", "qwen2.5-0.5b")
///     .api_key_from_env("AGENT_API_KEY");
/// assert_eq!(config.api, Api::OpenAiChat);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ModelConfig {
    /// The API the server speaks.
    pub api: Api,
    /// The base URL, the API's path appended (`https://api.openai.com/v1`,
    /// `https://api.anthropic.com/v1`, a local OpenAI-compatible server's `/v1`).
    pub base_url: String,
    /// The model's name.
    pub model: String,
    /// The key, sent as the API wants it (`Authorization: Bearer`, `x-api-key`).
    pub api_key: Option<String>,
    /// The most tokens one answer may have (default 1024; Anthropic requires a value).
    pub max_output_tokens: u32,
    /// The longest one request may take, retries apart (default 120 s).
    pub timeout: Duration,
    /// How 429 and 5xx answers are retried.
    pub retries: Retries,
    /// Whether a plain `http://` base URL to a host that is not loopback is accepted (default
    /// `false`): the key and the whole conversation would travel in clear, readable and
    /// changeable on the way. `https://` and `http://` to loopback (`localhost`,
    /// `127.0.0.0/8`, `[::1]`) are always accepted. Set it with
    /// [`ModelConfig::allow_insecure_http`].
    pub allow_insecure_http: bool,
    /// Whether Chat Completions requests also carry the older `max_tokens` beside
    /// `max_completion_tokens` (default `false`). Set it with
    /// [`ModelConfig::legacy_max_tokens`].
    pub legacy_max_tokens: bool,
}

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfig")
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("max_output_tokens", &self.max_output_tokens)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field("allow_insecure_http", &self.allow_insecure_http)
            .field("legacy_max_tokens", &self.legacy_max_tokens)
            .finish()
    }
}

impl ModelConfig {
    /// `model` of `api` at `base_url`, without a key.
    pub fn new(api: Api, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ModelConfig {
            api,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model.into(),
            api_key: None,
            max_output_tokens: 1024,
            timeout: Duration::from_secs(120),
            retries: Retries::default(),
            allow_insecure_http: false,
            legacy_max_tokens: false,
        }
    }

    /// The key.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The key from the environment variable `name`, if it is set and not empty.
    #[must_use]
    pub fn api_key_from_env(mut self, name: &str) -> Self {
        if let Ok(key) = std::env::var(name)
            && !key.is_empty()
        {
            self.api_key = Some(key);
        }
        self
    }

    /// How requests are retried.
    #[must_use]
    pub fn retries(mut self, retries: Retries) -> Self {
        self.retries = retries;
        self
    }

    /// The most tokens one answer may have.
    #[must_use]
    pub fn max_output_tokens(mut self, tokens: u32) -> Self {
        self.max_output_tokens = tokens;
        self
    }

    /// Accepts a plain `http://` base URL to a host that is not loopback, which
    /// [`Agent::new`] otherwise refuses: the key and the whole conversation then travel in
    /// clear. Say it only when the network path is trusted (a private link, a service mesh
    /// that encrypts). `https://` (feature `tls`) and `http://` to loopback (`localhost`,
    /// `127.0.0.0/8`, `[::1]`: a model served on this machine) need no opt-out.
    ///
    /// ```
    /// use registry_agent::{Agent, Api, ModelConfig};
    ///
    /// let config = ModelConfig::new(Api::OpenAiChat, "http://gpu-box.internal:8080/v1", "m");
    /// assert!(Agent::new(config.clone()).is_err());
    /// assert!(Agent::new(config.allow_insecure_http()).is_ok());
    /// ```
    #[must_use]
    pub fn allow_insecure_http(mut self) -> Self {
        self.allow_insecure_http = true;
        self
    }

    /// Sends the answer's bound under the older name `max_tokens` too, beside
    /// `max_completion_tokens` (Chat Completions only). OpenAI reads the new name and its
    /// reasoning models refuse the old one, but some OpenAI-compatible servers read only the
    /// old one: llama-cpp-python's server (0.3) ignores `max_completion_tokens`, and a small
    /// model held to a tool's JSON grammar can then write until its context is full, past
    /// the request's timeout.
    ///
    /// ```
    /// use registry_agent::{Api, ModelConfig};
    ///
    /// let config = ModelConfig::new(Api::OpenAiChat, "http://127.0.0.1:8080/v1", "local")
    ///     .max_output_tokens(256)
    ///     .legacy_max_tokens();
    /// assert!(config.legacy_max_tokens);
    /// ```
    #[must_use]
    pub fn legacy_max_tokens(mut self) -> Self {
        self.legacy_max_tokens = true;
        self
    }
}

/// The bounds of what the loop accepts from the model.
#[deprecated(note = "use `AgentLimits`")]
pub type Limits = AgentLimits;

/// The bounds of what the loop accepts from the model (as
/// [`ArgumentLimits`](registry_core::call::ArgumentLimits) and
/// [`TaskLimits`](registry_core::task::TaskLimits) bound arguments and tasks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentLimits {
    /// The largest response body, in bytes (default 8 MiB).
    pub max_body: usize,
    /// The most tool calls in one response (default 64): more is an error, and none runs.
    pub max_calls_per_turn: usize,
    /// The largest conversation, in bytes of JSON (default 16 MiB).
    pub max_conversation: usize,
}

impl Default for AgentLimits {
    fn default() -> Self {
        AgentLimits {
            max_body: 8 << 20,
            max_calls_per_turn: 64,
            max_conversation: 16 << 20,
        }
    }
}

impl AgentLimits {
    /// The largest response body, in bytes.
    #[must_use]
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// The most tool calls in one response.
    #[must_use]
    pub fn max_calls_per_turn(mut self, calls: usize) -> Self {
        self.max_calls_per_turn = calls;
        self
    }

    /// The largest conversation, in bytes of JSON.
    #[must_use]
    pub fn max_conversation(mut self, bytes: usize) -> Self {
        self.max_conversation = bytes;
        self
    }
}

/// One tool call the loop made, as the transcript shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The call's id, as the model gave it.
    pub id: String,
    /// The tool the model named (as it named it: unknown and hidden names too).
    pub name: String,
    /// `ok`, or the [`ErrorKind`] as text (`not_allowed`, `invalid_arguments`, `denied`...);
    /// `approval_required` while a person has not decided.
    pub outcome: String,
    /// Whether the tool's code ran (it did for `ok`, `execution_failed`, `panicked`,
    /// `timed_out` and `cancelled`).
    pub ran: bool,
}

impl CallRecord {
    fn of(observation: &Observation) -> CallRecord {
        let (outcome, ran) = match observation.error_kind() {
            None => ("ok".to_owned(), true),
            Some(kind) => (
                kind.as_str().to_owned(),
                matches!(
                    kind,
                    ErrorKind::ExecutionFailed
                        | ErrorKind::Panicked
                        | ErrorKind::TimedOut
                        | ErrorKind::Cancelled
                ),
            ),
        };
        CallRecord {
            id: observation.call_id().to_owned(),
            name: observation.tool_name().to_owned(),
            outcome,
            ran,
        }
    }
}

/// A call's place in a paused turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum Slot {
    /// Answered: its result message.
    Done { result: Value },
    /// Waiting for a person.
    Waiting {
        call_id: String,
        name: String,
        approval_id: String,
    },
}

/// Where a loop stands: the conversation so far, what it spent, and a paused turn's calls.
/// Serializable, so that a paused loop can be kept (a file, a database) and resumed later,
/// in another process, with [`Agent::resume`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    api: Api,
    conversation: Vec<Value>,
    turns: u32,
    tokens: u64,
    /// Wall time spent so far, in milliseconds (pauses excluded).
    elapsed_ms: u64,
    calls: Vec<CallRecord>,
    /// The searches answered, for a run sent in the deferred form.
    #[serde(default, skip_serializing_if = "is_zero")]
    searches: u32,
    /// The tools those searches loaded, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    loaded: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    paused: Option<Vec<Slot>>,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

impl AgentState {
    /// Model requests made.
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// Tokens used, as the API reported them.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Every tool call made, in order.
    pub fn calls(&self) -> &[CallRecord] {
        &self.calls
    }

    /// The conversation as the API takes it (the prompt, the model's turns, the results).
    pub fn conversation(&self) -> &[Value] {
        &self.conversation
    }

    /// The searches the model made, for a run sent in the deferred form (see
    /// [`Agent::defer_above`]).
    pub fn searches(&self) -> u32 {
        self.searches
    }

    /// The tools the model's searches loaded, in the order they were loaded (none for a run
    /// sent whole).
    pub fn loaded(&self) -> &[String] {
        &self.loaded
    }

    /// The approval requests a paused loop waits for (their ids), in the model's order.
    pub fn waiting_for(&self) -> Vec<&str> {
        self.paused
            .iter()
            .flatten()
            .filter_map(|slot| match slot {
                Slot::Waiting { approval_id, .. } => Some(approval_id.as_str()),
                Slot::Done { .. } => None,
            })
            .collect()
    }
}

/// How a loop ended.
#[deprecated(note = "use `AgentEnd`")]
pub type AgentOutcome = AgentEnd;

/// How a loop ended (as [`TaskEnd`](registry_core::task::TaskEnd) says how a task ended).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentEnd {
    /// The model answered without calling a tool.
    Answered {
        /// Its answer's text.
        answer: String,
        /// The loop's state at the end.
        state: AgentState,
    },
    /// A call waits for a person: decide each request and [`Agent::resume`] with the verdicts.
    /// The turn's other calls have run; none runs again.
    Paused {
        /// What the person is asked, in the model's order.
        requests: Vec<ApprovalRequest>,
        /// The state to resume.
        state: AgentState,
    },
    /// A budget was spent before the model answered.
    BudgetSpent {
        /// Which.
        spent: Spent,
        /// The loop's state when it stopped.
        state: AgentState,
    },
}

impl AgentEnd {
    /// The state, however the loop ended.
    pub fn state(&self) -> &AgentState {
        match self {
            AgentEnd::Answered { state, .. }
            | AgentEnd::Paused { state, .. }
            | AgentEnd::BudgetSpent { state, .. } => state,
        }
    }
}

/// The model–tool loop over one [`Run`]: the run's export is what the model is shown (never a
/// tool outside its allowed set), each call the model makes goes through
/// [`Run::call`](registry_core::Run::call) (the gate, the arguments' schema, the policies),
/// calls of one turn run concurrently and are answered in the model's order, and the loop
/// repeats until the model answers without calling a tool, a call waits for a person
/// ([`AgentEnd::Paused`]), or a [`Budget`] is spent.
///
/// The model's output is untrusted: an unknown or hidden tool, malformed or invalid
/// arguments come back to the model as the run's observation; what a tool returns changes
/// nothing the model may call (the tools sent are fixed when the run opened).
///
/// A run with many tools (more than 64 unless [`defer_above`](Agent::defer_above) says
/// otherwise) is sent in the deferred form: the tools loaded first and a search tool, each
/// search loading, from the run's allowed set only, the tools it finds
/// ([`Run::deferred`](registry_core::Run::deferred)).
#[derive(Debug, Clone)]
pub struct Agent {
    config: ModelConfig,
    budget: Budget,
    limits: AgentLimits,
    instructions: Option<String>,
    defer_above: usize,
    deferred: DeferredOptions,
    record_content: bool,
    tool_choice: Option<ToolChoice>,
    first_turn_tool_choice: Option<ToolChoice>,
    http: reqwest::Client,
}

/// Refuses a base URL that is not `http://` or `https://`, `https://` without the `tls`
/// feature, and plain `http://` to a host that is not loopback unless the configuration
/// allows it.
fn check_base_url(config: &ModelConfig) -> Result<(), AgentError> {
    let shown = crate::bounded(&config.base_url);
    let url = reqwest::Url::parse(&config.base_url).map_err(|error| {
        AgentError::Config(format!(
            "the base URL {shown} is not a URL ({error}): give one such as \
             https://api.openai.com/v1 or http://127.0.0.1:8080/v1"
        ))
    })?;
    match url.scheme() {
        "https" if cfg!(feature = "tls") => Ok(()),
        "https" => Err(AgentError::Config(format!(
            "{shown} is https: build registry-agent with its `tls` feature"
        ))),
        "http" if config.allow_insecure_http || is_loopback(&url) => Ok(()),
        "http" => Err(AgentError::Config(format!(
            "the base URL {shown} is plain http:// to a host that is not loopback: the key and \
             the conversation would travel in clear; use https:// (registry-agent's `tls` \
             feature), or, if the network path is trusted, say so with \
             `ModelConfig::allow_insecure_http`"
        ))),
        other => Err(AgentError::Config(format!(
            "the base URL {shown} has the scheme {:?}: give an https:// URL (or http:// to \
             loopback)",
            crate::bounded(other)
        ))),
    }
}

/// Whether `url`'s host is this machine: `localhost`, `127.0.0.0/8` or `[::1]`.
fn is_loopback(url: &reqwest::Url) -> bool {
    url.host_str().is_some_and(registry_lint::is_loopback_host)
}

/// Runs with more tools than this are sent in the deferred form, unless the agent says
/// otherwise: past a few dozen tools, models choose worse, and every request pays for every
/// definition (OpenAI takes at most 128 in a request).
pub const DEFER_ABOVE: usize = 64;

impl Agent {
    /// An agent for the model of `config`, with the default budget and limits.
    ///
    /// # Errors
    ///
    /// [`AgentError::Config`] for a base URL that is not `http://` or `https://`, `https://`
    /// without the `tls` feature, or plain `http://` to a host that is not loopback unless
    /// [`ModelConfig::allow_insecure_http`] says the path is trusted. No request is made.
    ///
    /// Redirects are never followed: a model API that answers 3xx ends the loop with
    /// [`AgentError::Api`] naming where it pointed, so the key and the conversation go to the
    /// base URL's host and no other.
    pub fn new(config: ModelConfig) -> Result<Agent, AgentError> {
        check_base_url(&config)?;
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            // A redirect would take the key (`x-api-key` is not a header reqwest strips) and,
            // on 307/308, the whole conversation to another host: never followed.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| AgentError::Config(error.to_string()))?;
        Ok(Agent {
            config,
            budget: Budget::default(),
            limits: AgentLimits::default(),
            instructions: None,
            defer_above: DEFER_ABOVE,
            deferred: DeferredOptions::new(),
            record_content: false,
            tool_choice: None,
            first_turn_tool_choice: None,
            http,
        })
    }

    /// Runs whose allowed set has more than `tools` tools are sent in the deferred form
    /// (default [`DEFER_ABOVE`]): `0` sends every run so, `usize::MAX` none.
    ///
    /// ```
    /// use registry_agent::{Agent, Api, ModelConfig};
    /// use registry_core::deferred::DeferredOptions;
    ///
    /// let agent = Agent::new(ModelConfig::new(Api::OpenAiChat, "http://127.0.0.1:8080/v1", "m"))?
    ///     .defer_above(20)
    ///     .deferred_options(DeferredOptions::new().load(["get_status"]).results(3));
    /// # Ok::<(), registry_agent::AgentError>(())
    /// ```
    #[must_use]
    pub fn defer_above(mut self, tools: usize) -> Self {
        self.defer_above = tools;
        self
    }

    /// Records each call's arguments and result on its `execute_tool` span, as the GenAI
    /// conventions' opt-in attributes `gen_ai.tool.call.arguments` and
    /// `gen_ai.tool.call.result` (each at most 4 KiB, control and bidi characters escaped).
    /// Off by default: what a tool is given and returns may be personal or secret, and a
    /// trace backend keeps it.
    ///
    /// ```
    /// use registry_agent::{Agent, Api, ModelConfig};
    ///
    /// let agent = Agent::new(ModelConfig::new(Api::OpenAiChat, "http://127.0.0.1:8080/v1", "m"))?
    ///     .record_content();
    /// # Ok::<(), registry_agent::AgentError>(())
    /// ```
    #[must_use]
    pub fn record_content(mut self) -> Self {
        self.record_content = true;
        self
    }

    /// What a deferred run loads first and how it searches
    /// ([`DeferredOptions`]).
    #[must_use]
    pub fn deferred_options(mut self, options: DeferredOptions) -> Self {
        self.deferred = options;
        self
    }

    /// The budget of each loop.
    #[must_use]
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// The bounds on what the model sends.
    #[must_use]
    pub fn limits(mut self, limits: AgentLimits) -> Self {
        self.limits = limits;
        self
    }

    /// What every request tells the model about calling tools ([`ToolChoice`]; unset, the
    /// API's default, `auto`). [`first_turn_tool_choice`](Agent::first_turn_tool_choice)
    /// overrides it for the loop's first request. A [`ToolChoice::Named`] tool the run may
    /// not call is refused before any request ([`AgentError::Config`]); so is `Required` or
    /// `Named` for a run with no tool.
    ///
    /// `Required` on every request leaves the model no way to answer: the loop then ends on
    /// its budget. To make a weak model start with a tool and then answer, use
    /// `first_turn_tool_choice(ToolChoice::Required)`.
    ///
    /// ```
    /// use registry_agent::{Agent, Api, ModelConfig, ToolChoice};
    ///
    /// let agent = Agent::new(ModelConfig::new(Api::OpenAiChat, "http://127.0.0.1:8080/v1", "m"))?
    ///     .tool_choice(ToolChoice::Auto)
    ///     .first_turn_tool_choice(ToolChoice::Named("get_status".into()));
    /// # Ok::<(), registry_agent::AgentError>(())
    /// ```
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// What the loop's first request (the conversation's first turn, not a resumed loop's
    /// next one) tells the model about calling tools, instead of
    /// [`tool_choice`](Agent::tool_choice). Checked as it is.
    #[must_use]
    pub fn first_turn_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.first_turn_tool_choice = Some(choice);
        self
    }

    /// The system prompt (instructions) of every request.
    #[must_use]
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Runs the loop over `run` from `prompt`.
    pub async fn run(&self, run: &Run, prompt: &str) -> Result<AgentEnd, AgentFailure> {
        let state = AgentState {
            api: self.config.api,
            conversation: self.config.api.start(prompt),
            turns: 0,
            tokens: 0,
            elapsed_ms: 0,
            calls: Vec::new(),
            searches: 0,
            loaded: Vec::new(),
            paused: None,
        };
        self.drive(run, state)
            .instrument(self.agent_span(run))
            .await
    }

    /// The span of one invocation of the loop (`run` or `resume`), parent of its `chat` and
    /// `execute_tool` spans; the conversation is the run.
    fn agent_span(&self, run: &Run) -> tracing::Span {
        tracing::info_span!(
            "invoke_agent",
            otel.name = "invoke_agent",
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.provider.name = provider_name(self.config.api),
            gen_ai.request.model = %self.config.model,
            gen_ai.conversation.id = %run.id(),
        )
    }

    /// Continues a paused loop once each of its requests is decided: `verdicts` gives one
    /// [`Verdict`] per approval request id ([`AgentState::waiting_for`]). Each is passed to
    /// [`Run::decide`](registry_core::Run::decide) (the call runs then, once, or is denied),
    /// the turn's results go back to the model in its order, and the loop goes on.
    ///
    /// `run` is the run that paused or one reopened for the same subject (a person's
    /// decision is checked against it). A state that is not paused, of another API, or
    /// verdicts that do not match its requests one for one, are refused before anything runs.
    pub async fn resume(
        &self,
        run: &Run,
        state: AgentState,
        verdicts: impl IntoIterator<Item = (String, Verdict)>,
    ) -> Result<AgentEnd, AgentFailure> {
        let verdicts: HashMap<String, Verdict> = verdicts.into_iter().collect();
        self.resume_in_span(run, state, verdicts)
            .instrument(self.agent_span(run))
            .await
    }

    async fn resume_in_span(
        &self,
        run: &Run,
        mut state: AgentState,
        mut verdicts: HashMap<String, Verdict>,
    ) -> Result<AgentEnd, AgentFailure> {
        if state.api != self.config.api {
            let error = AgentError::Resume(format!(
                "the state is of {}, this agent speaks {}",
                state.api, self.config.api
            ));
            return Err(AgentFailure::new(error, state));
        }
        let Some(slots) = state.paused.take() else {
            return Err(AgentFailure::new(
                AgentError::Resume("the state is not paused".into()),
                state,
            ));
        };
        let waiting: Vec<&str> = slots
            .iter()
            .filter_map(|slot| match slot {
                Slot::Waiting { approval_id, .. } => Some(approval_id.as_str()),
                Slot::Done { .. } => None,
            })
            .collect();
        let problem = if let Some(missing) = waiting.iter().find(|id| !verdicts.contains_key(**id))
        {
            Some(format!("no verdict for the request {missing}"))
        } else {
            verdicts
                .keys()
                .find(|id| !waiting.contains(&id.as_str()))
                .map(|extra| format!("a verdict for {extra}, which this state does not wait for"))
        };
        if let Some(problem) = problem {
            state.paused = Some(slots);
            return Err(AgentFailure::new(AgentError::Resume(problem), state));
        }
        let api = self.config.api;
        let profile = api.profile();
        let mut results = Vec::with_capacity(slots.len());
        for slot in slots {
            match slot {
                Slot::Done { result } => results.push(result),
                Slot::Waiting {
                    call_id,
                    name,
                    approval_id,
                } => {
                    // Checked above: every waiting request has its verdict.
                    let verdict = verdicts
                        .remove(&approval_id)
                        .unwrap_or_else(|| Verdict::deny("no verdict was given for this request"));
                    let decided = run
                        .decide(&approval_id, verdict)
                        .instrument(tool_span(&name, &call_id))
                        .await;
                    let record = state.calls.iter_mut().rev().find(|record| {
                        record.id == call_id && record.outcome == "approval_required"
                    });
                    // The agent calls its tools, it starts no tasks: a request answered by
                    // a task that started is not this conversation's call.
                    let decided = match decided {
                        Ok(Settled::Answered(observation)) => Ok(observation),
                        Ok(Settled::Started(task)) => Err(format!(
                            "the request started task {}, not a call of this conversation",
                            task.id()
                        )),
                        Err(error) => Err(error.to_string()),
                    };
                    match decided {
                        Ok(observation) => {
                            if let Some(record) = record {
                                *record = CallRecord::of(&observation);
                            }
                            results.push(profile.render(&observation));
                        }
                        // Decided elsewhere, or the store failed: the model is told so in
                        // a generic text (the error may name who decided, or the store's
                        // address), the detail goes to the log, and nothing runs here.
                        Err(error) => {
                            if let Some(record) = record {
                                record.outcome = "approval_failed".into();
                            }
                            tracing::warn!(
                                approval = ?approval_id,
                                call_id = ?call_id,
                                error = ?error,
                                "the approval could not be applied"
                            );
                            results.push(api.refusal(&call_id, APPROVAL_NOT_APPLIED));
                        }
                    }
                }
            }
        }
        api.append_results(&mut state.conversation, results);
        self.drive(run, state).await
    }

    async fn drive(&self, run: &Run, mut state: AgentState) -> Result<AgentEnd, AgentFailure> {
        let api = self.config.api;
        let profile = api.profile();
        let session = (run.allowed().len() > self.defer_above).then(|| {
            // A resumed loop's searches loaded tools: where loading shows in the export
            // (OpenAI Chat), they are loaded again; elsewhere the conversation holds them.
            let mut options = self.deferred.clone();
            if api.loads_in_export() {
                options = options.load(state.loaded.iter().cloned());
            }
            run.deferred(profile, options)
        });
        let mut tools = match tools_text(run, profile, session.as_ref()) {
            Ok(tools) => tools,
            Err(error) => return Err(AgentFailure::new(error, state)),
        };
        for choice in [&self.first_turn_tool_choice, &self.tool_choice]
            .into_iter()
            .flatten()
        {
            if let Err(error) = check_tool_choice(run, session.as_ref(), tools.is_some(), choice) {
                return Err(AgentFailure::new(error, state));
            }
        }
        let started = Instant::now();
        let spent_before = Duration::from_millis(state.elapsed_ms);
        let elapsed = |state: &mut AgentState| {
            let total = spent_before + started.elapsed();
            state.elapsed_ms = u64::try_from(total.as_millis()).unwrap_or(u64::MAX);
            total
        };
        let url = format!("{}{}", self.config.base_url, api.path());
        let headers = api.headers(self.config.api_key.as_deref(), session.is_some());
        loop {
            let spent = elapsed(&mut state);
            if state.turns >= self.budget.turns {
                return Ok(AgentEnd::BudgetSpent {
                    spent: Spent::Turns,
                    state,
                });
            }
            if self.budget.tokens.is_some_and(|max| state.tokens >= max) {
                return Ok(AgentEnd::BudgetSpent {
                    spent: Spent::Tokens,
                    state,
                });
            }
            let Some(left) = self
                .budget
                .wall_time
                .checked_sub(spent)
                .filter(|left| !left.is_zero())
            else {
                return Ok(AgentEnd::BudgetSpent {
                    spent: Spent::WallTime,
                    state,
                });
            };
            let body = api.body(&Request {
                model: &self.config.model,
                instructions: self.instructions.as_deref(),
                conversation: &state.conversation,
                tools: tools.as_deref(),
                tool_choice: if state.turns == 0 {
                    self.first_turn_tool_choice
                        .as_ref()
                        .or(self.tool_choice.as_ref())
                } else {
                    self.tool_choice.as_ref()
                },
                max_output_tokens: self.config.max_output_tokens,
                legacy_max_tokens: self.config.legacy_max_tokens,
            });
            let body = match body {
                Ok(body) if body.len() > self.limits.max_conversation => {
                    let error = AgentError::TooLarge(format!(
                        "the request is {} bytes, past the conversation's bound of {}",
                        body.len(),
                        self.limits.max_conversation
                    ));
                    return Err(AgentFailure::new(error, state));
                }
                Ok(body) => bytes::Bytes::from(body),
                Err(error) => return Err(AgentFailure::new(error, state)),
            };
            let span = tracing::info_span!(
                "chat",
                otel.name = %format!("chat {}", self.config.model),
                otel.kind = "client",
                gen_ai.operation.name = "chat",
                gen_ai.provider.name = provider_name(api),
                gen_ai.request.model = %self.config.model,
                gen_ai.usage.input_tokens = tracing::field::Empty,
                gen_ai.usage.output_tokens = tracing::field::Empty,
                error.r#type = tracing::field::Empty,
            );
            let sent = http::send(
                &self.http,
                &url,
                &headers,
                body,
                self.config.retries,
                self.limits.max_body,
            );
            let sent = sent.instrument(span.clone());
            // The client's own timeout bounds each attempt, and the retries' waits are
            // bounded too: the wall-time budget needs a timer of its own only when it could
            // end first (a timer per request costs a wake-up).
            let retries = self.config.retries;
            let longest = self
                .config
                .timeout
                .saturating_mul(retries.max_retries.saturating_add(1))
                .saturating_add(retries.max_delay.saturating_mul(retries.max_retries));
            let answered = if left < longest {
                tokio::time::timeout(left, sent).await
            } else {
                Ok(sent.await)
            };
            let response = match answered {
                Ok(Ok(response)) => response,
                Ok(Err(error)) => {
                    span.record("error.type", error_type(&error));
                    elapsed(&mut state);
                    return Err(AgentFailure::new(error, state));
                }
                Err(_) => {
                    elapsed(&mut state);
                    return Ok(AgentEnd::BudgetSpent {
                        spent: Spent::WallTime,
                        state,
                    });
                }
            };
            state.turns += 1;
            record_usage(&span, api, &response);
            let read = api.read(&response).and_then(|turn| {
                let calls = match &session {
                    Some(session) => session.parse_calls(&response),
                    None => profile
                        .parse_calls(&response)
                        .map(|calls| calls.into_iter().map(SessionCall::Call).collect()),
                };
                calls
                    .map(|calls| (turn, calls))
                    .map_err(|error| AgentError::Malformed(crate::bounded(&error.to_string())))
            });
            let (turn, calls) = match read {
                Ok(read) => read,
                Err(error) => {
                    span.record("error.type", error_type(&error));
                    elapsed(&mut state);
                    return Err(AgentFailure::new(error, state));
                }
            };
            state.tokens = state.tokens.saturating_add(turn.tokens.unwrap_or(0));
            state.conversation.extend(turn.items);
            if calls.is_empty() {
                elapsed(&mut state);
                return Ok(AgentEnd::Answered {
                    answer: turn.text,
                    state,
                });
            }
            if calls.len() > self.limits.max_calls_per_turn {
                let error = AgentError::TooLarge(format!(
                    "the model asked for {} calls in one turn; the bound is {}",
                    calls.len(),
                    self.limits.max_calls_per_turn
                ));
                return Err(AgentFailure::new(error, state));
            }
            let budget = usize::try_from(self.budget.calls).unwrap_or(usize::MAX);
            let tool_calls = calls
                .iter()
                .filter(|call| matches!(call, SessionCall::Call(_)))
                .count();
            if state.calls.len() + tool_calls > budget {
                elapsed(&mut state);
                return Ok(AgentEnd::BudgetSpent {
                    spent: Spent::Calls,
                    state,
                });
            }
            let record = self.record_content;
            let answers = join_all(
                calls
                    .into_iter()
                    .map(|call| answer(run, session.as_ref(), call, record)),
            )
            .await;
            let mut slots = Vec::with_capacity(answers.len());
            let mut requests = Vec::new();
            let mut export_changed = false;
            for answer in answers {
                let observation = match answer {
                    Answer::Ran(observation) => observation,
                    Answer::Searched(search) => {
                        state.searches = state.searches.saturating_add(1);
                        // A session resumed elsewhere may load a tool again: kept once, so
                        // the list stays within the run's allowed set.
                        for name in search.loaded() {
                            if !state.loaded.contains(name) {
                                state.loaded.push(name.clone());
                            }
                        }
                        export_changed |= search.export_changed();
                        slots.push(Slot::Done {
                            result: search.into_message(),
                        });
                        continue;
                    }
                    Answer::Refused { call_id, text } => {
                        slots.push(Slot::Done {
                            result: api.refusal(&call_id, &text),
                        });
                        continue;
                    }
                };
                let observation = &observation;
                state.calls.push(CallRecord::of(observation));
                match observation.approval() {
                    Some(request)
                        if observation.error_kind() == Some(ErrorKind::ApprovalRequired) =>
                    {
                        slots.push(Slot::Waiting {
                            call_id: observation.call_id().to_owned(),
                            name: observation.tool_name().to_owned(),
                            approval_id: request.id().to_owned(),
                        });
                        requests.push(request.clone());
                    }
                    _ => slots.push(Slot::Done {
                        result: profile.render(observation),
                    }),
                }
            }
            if export_changed {
                tools = match tools_text(run, profile, session.as_ref()) {
                    Ok(tools) => tools,
                    Err(error) => return Err(AgentFailure::new(error, state)),
                };
            }
            if !requests.is_empty() {
                state.paused = Some(slots);
                elapsed(&mut state);
                return Ok(AgentEnd::Paused { requests, state });
            }
            let results = slots
                .into_iter()
                .filter_map(|slot| match slot {
                    Slot::Done { result } => Some(result),
                    Slot::Waiting { .. } => None,
                })
                .collect();
            api.append_results(&mut state.conversation, results);
        }
    }
}

/// A loop that stopped on an error, with its state then (the turns and calls made so far).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentFailure {
    /// What went wrong.
    pub error: AgentError,
    /// The loop's state when it stopped.
    pub state: Box<AgentState>,
}

impl AgentFailure {
    fn new(error: AgentError, state: AgentState) -> AgentFailure {
        AgentFailure {
            error,
            state: Box::new(state),
        }
    }
}

impl std::fmt::Display for AgentFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for AgentFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Refuses a tool choice that cannot be sent: a named tool the run may not call (unknown and
/// hidden read the same), one a deferred run's first request does not hold, or a tool
/// required of a run that has none.
fn check_tool_choice(
    run: &Run,
    session: Option<&DeferredSession>,
    has_tools: bool,
    choice: &ToolChoice,
) -> Result<(), AgentError> {
    match choice {
        ToolChoice::Named(name) if !run.allowed().permits(name) => {
            Err(AgentError::Config(format!(
                "the tool choice names {}, which is not a tool this run may call: name one of \
                 the run's allowed tools, or use auto or required",
                crate::bounded(name)
            )))
        }
        ToolChoice::Named(name) if session.is_some_and(|session| !session.is_loaded(name)) => {
            Err(AgentError::Config(format!(
                "the tool choice names {}, which this run, sent in the deferred form, does not \
                 load in its first request: load it first (`DeferredOptions::load`), or use \
                 required",
                crate::bounded(name)
            )))
        }
        ToolChoice::Named(_) | ToolChoice::Required if !has_tools => {
            Err(AgentError::Config(format!(
                "the tool choice is {}, but this run has no tool to send",
                crate::bounded(choice.as_str())
            )))
        }
        _ => Ok(()),
    }
}

/// The tools' JSON array as text, for the next request: the run's export, or the deferred
/// session's; `None` when there is no tool.
fn tools_text(
    run: &Run,
    profile: registry_core::Profile,
    session: Option<&DeferredSession>,
) -> Result<Option<String>, AgentError> {
    let tools = match session {
        Some(session) => session.export().map(|tools| tools.to_string()),
        None => run.export_text(profile),
    };
    let tools = tools.map_err(|error| AgentError::Export(error.to_string()))?;
    Ok((tools != "[]").then_some(tools))
}

/// What one of the model's calls came to.
enum Answer {
    /// A tool call, through the run.
    Ran(Observation),
    /// A search of a deferred session.
    Searched(SearchAnswer),
    /// Neither: refused with this text.
    Refused { call_id: String, text: String },
}

/// One call of the model's: a tool call through the run, or a search of the session.
async fn answer(
    run: &Run,
    session: Option<&DeferredSession>,
    call: SessionCall,
    record: bool,
) -> Answer {
    match call {
        SessionCall::Call(call) => Answer::Ran(execute(run, call, record).await),
        SessionCall::Search(search) => match session {
            Some(session) => {
                let span = tool_span(session.search_tool_name(), search.id());
                let embedded = match session.embedding(&search) {
                    Some(embedding) => embed(embedding).instrument(span.clone()).await,
                    None => None,
                };
                let _entered = span.enter();
                Answer::Searched(session.search_embedded(&search, embedded.as_ref()))
            }
            // Only a session reads searches: not reached.
            None => Answer::Refused {
                call_id: search.id().to_owned(),
                text: "there is no search tool in this conversation".to_owned(),
            },
        },
        // A kind of call this version does not know: refused, never run.
        _ => Answer::Refused {
            call_id: String::new(),
            text: "a call this loop cannot read".to_owned(),
        },
    }
}

/// A search's query embedded by the registry's embedder (which may block: a local model, an
/// endpoint) on a blocking thread of the Tokio runtime, never on the loop's worker; on the
/// caller's thread only outside a Tokio runtime. `None` if the blocking thread failed (the
/// search is then lexical).
async fn embed(embedding: QueryEmbedding) -> Option<EmbeddedQuery> {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return Some(embedding.embed());
    };
    match runtime.spawn_blocking(move || embedding.embed()).await {
        Ok(embedded) => Some(embedded),
        Err(error) => {
            tracing::warn!(%error, "a search's embedding did not finish: the search is lexical");
            None
        }
    }
}

/// The most of a call's arguments or result a span records (with
/// [`Agent::record_content`]).
const MAX_RECORDED: usize = 4096;

/// One call through the run, in its `execute_tool` span; its arguments and result recorded
/// on it if `record`.
async fn execute(run: &Run, call: ToolCall, record: bool) -> Observation {
    let span = tool_span(call.name(), call.id());
    if record {
        let arguments = match (call.arguments_text(), call.arguments()) {
            (Some(text), _) => text.to_owned(),
            (None, Some(value)) => value.to_string(),
            (None, None) => String::new(),
        };
        span.record(
            "gen_ai.tool.call.arguments",
            crate::bounded_to(&arguments, MAX_RECORDED).as_str(),
        );
    }
    let observation = run.call(call).instrument(span.clone()).await;
    if let Some(kind) = observation.error_kind() {
        span.record("error.type", kind.as_str());
    }
    if record {
        span.record(
            "gen_ai.tool.call.result",
            crate::bounded_to(&observation.json().to_string(), MAX_RECORDED).as_str(),
        );
    }
    observation
}

/// The span of one tool's execution, in the GenAI conventions (argument values and results
/// are not recorded).
fn tool_span(name: &str, call_id: &str) -> tracing::Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = %format!("execute_tool {name}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %name,
        gen_ai.tool.call.id = %call_id,
        gen_ai.tool.type = "function",
        gen_ai.tool.call.arguments = tracing::field::Empty,
        gen_ai.tool.call.result = tracing::field::Empty,
        error.r#type = tracing::field::Empty,
    )
}

fn provider_name(api: Api) -> &'static str {
    match api {
        Api::OpenAiChat | Api::OpenAiResponses => "openai",
        Api::Anthropic => "anthropic",
    }
}

fn error_type(error: &AgentError) -> &'static str {
    match error {
        AgentError::Transport(_) => "transport",
        AgentError::Api(_) => "api",
        AgentError::Malformed(_) => "malformed",
        AgentError::TooLarge(_) => "too_large",
        AgentError::Config(_) => "config",
        AgentError::Export(_) => "export",
        AgentError::Resume(_) => "resume",
    }
}

fn record_usage(span: &tracing::Span, api: Api, response: &Value) {
    let (input, output) = match api {
        Api::OpenAiChat => ("/usage/prompt_tokens", "/usage/completion_tokens"),
        Api::OpenAiResponses | Api::Anthropic => ("/usage/input_tokens", "/usage/output_tokens"),
    };
    if let Some(tokens) = response.pointer(input).and_then(Value::as_u64) {
        span.record("gen_ai.usage.input_tokens", tokens);
    }
    if let Some(tokens) = response.pointer(output).and_then(Value::as_u64) {
        span.record("gen_ai.usage.output_tokens", tokens);
    }
}
