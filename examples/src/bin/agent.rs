//! The model–tool loop over one run of the example tools, against any of the three model
//! APIs (registry-agent).
//!
//! ```sh
//! cargo run -p registry-examples --bin agent -- \
//!   --api openai-chat --base-url http://127.0.0.1:8080/v1 --model qwen2.5-0.5b-instruct \
//!   --tenant acme --scopes build:read,deploy:write --approve never \
//!   --max-turns 8 --prompt "Is the web build green? Deploy it to staging." \
//!   --transcript transcript.json
//! ```
//!
//! The tools are the examples' `#[tool]`s, projected for the tenant and scopes given: the
//! model is shown the run's tools and no other, and every call it makes goes through the run
//! (its allowed set, the arguments' schema, the gate). The key is read from `AGENT_API_KEY`
//! when set. A call that needs a person is decided by `--approve`: `never` denies it with a
//! reason, `always` approves it; either way the loop pauses, the verdict is given, and it
//! resumes. `--transcript FILE` writes what happened as JSON:
//! `{"outcome": "answered"|"paused"|"budget_spent"|"error", "turns": N, "calls": [{"id",
//! "name", "outcome": "ok"|"<error kind>", "ran": bool}], "answer": "..."}`. The exit status is
//! 0 when the model answered, 3 when a budget was spent, 1 on an error (2 for bad flags).
//!
//! The key and the conversation go to the base URL's host only: a redirect is not followed
//! (the run ends as an error, status 1, naming where it pointed), and a plain `http://` base
//! URL to a host that is not loopback is refused (status 1) unless `--allow-insecure-http`
//! says the network path is trusted.
//!
//! `--tool-choice auto|required|none|NAME` is what every request tells the model about
//! calling tools, `--first-turn-tool-choice` the same for the first request only (a weak
//! model that answers around its tools: `--first-turn-tool-choice required`). A NAME the run
//! may not call is refused before any request (status 1).
//!
//! `--deferred` sends the run in its deferred form (registry-agent's `Agent::defer_above(0)`):
//! the model is shown a search tool (`search_tools`) and the tools its searches load, from the
//! run's allowed set only. `--model-dir DIR` makes those searches rank by meaning as well as
//! by words, with the sentence-transformers model in DIR run in this process
//! (`registry_embed::LocalEmbedder`; `bash .ci/fetch-model DIR` fetches all-MiniLM-L6-v2),
//! the tools embedded before the loop starts; `--embed-cache FILE` keeps the vectors
//! between runs. A DIR that is not such a model is a bad flag (status 2).
//!
//! `--otlp ENDPOINT` (an OTLP/HTTP collector's base URL, e.g. `http://127.0.0.1:4318`)
//! exports the loop's spans (`invoke_agent`, `chat {model}`, `execute_tool {name}`, with the
//! GenAI semantic conventions' attributes) as OTLP protobuf to `ENDPOINT/v1/traces`, service
//! `registry-agent-example`, through `tracing-opentelemetry`. The last spans are flushed
//! before the process exits, whatever its status; an export that fails (a collector that is
//! down, slow or answers an error) is a warning on stderr, bounded in time (a request 2 s at
//! most, a batch with its retries 4 s, the flush at exit 7 s), and never changes the status.

use std::path::PathBuf;
use std::process::ExitCode;

use registry_agent::{
    Agent, AgentEnd, AgentFailure, AgentState, Api, Budget, ModelConfig, ToolChoice,
};
use registry_core::Subject;
use registry_core::approval::Verdict;
use registry_embed::LocalEmbedder;
use registry_examples::embed::{self, EmbedFlags};
use serde_json::json;

const USAGE: &str = "\
usage: agent --api openai-chat|openai-responses|anthropic --base-url URL --model NAME
             [--tenant T] [--scopes A,B] [--approve never|always] [--max-turns N]
             --prompt TEXT [--transcript FILE] [--otlp ENDPOINT] [--allow-insecure-http]
             [--tool-choice auto|required|none|NAME] [--first-turn-tool-choice ...]
             [--max-output-tokens N] [--legacy-max-tokens]
             [--deferred] [--model-dir DIR [--embed-cache FILE]]

  --api          the model API the server speaks
  --base-url     its base URL, e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1
  --model        the model's name
  --tenant       the run's tenant (default acme)
  --scopes       the run's scopes, comma-separated (default none: the public tools only)
  --approve      what a person says to a call that needs one: never (the default) or always
  --max-turns    model requests at most (default 8)
  --prompt       the user's message
  --transcript   write the outcome, turns, calls and answer to FILE as JSON
  --otlp         export the loop's spans over OTLP/HTTP to ENDPOINT/v1/traces,
                 e.g. http://127.0.0.1:4318 (a failed export is a warning only)
  --tool-choice  what every request tells the model: auto, required (some tool), none,
                 or a tool's name (one of the run's tools; any other is refused, status 1)
  --first-turn-tool-choice
                 the same, for the first request only (e.g. required, then the model's
                 choice)
  --max-output-tokens
                 the most tokens one answer may have (default 1024)
  --legacy-max-tokens
                 also send that bound as max_tokens (openai-chat), for servers that read
                 only the older name (llama-cpp-python's)
  --deferred     send the run in its deferred form: the model is shown search_tools
                 and the tools its searches load (from the run's tools only)
  --model-dir    rank those searches by meaning as well as by words, with the
                 sentence-transformers model in DIR (config.json, tokenizer.json,
                 model.safetensors) run in this process; `bash .ci/fetch-model DIR`
                 fetches all-MiniLM-L6-v2 (a DIR that is not such a model: status 2)
  --embed-cache  keep the tools' vectors the model computes (never the queries') in
                 FILE between runs, keyed by SHA-256 digests (needs --model-dir)
  --allow-insecure-http
                 accept a plain http:// base URL to a host that is not loopback (the key
                 and the conversation travel in clear); redirects are never followed
The key is read from AGENT_API_KEY. Exit status: 0 answered, 3 budget spent, 1 error.";

#[derive(Debug)]
struct Args {
    api: Api,
    base_url: String,
    model: String,
    tenant: String,
    scopes: Vec<String>,
    approve: bool,
    max_turns: u32,
    prompt: String,
    transcript: Option<PathBuf>,
    otlp: Option<String>,
    allow_insecure_http: bool,
    max_output_tokens: Option<u32>,
    legacy_max_tokens: bool,
    tool_choice: Option<ToolChoice>,
    first_turn_tool_choice: Option<ToolChoice>,
    deferred: bool,
    embed: EmbedFlags,
}

fn args() -> Result<Args, String> {
    let mut api = None;
    let mut base_url = None;
    let mut model = None;
    let mut tenant = "acme".to_owned();
    let mut scopes = Vec::new();
    let mut approve = false;
    let mut max_turns = 8;
    let mut prompt = None;
    let mut transcript = None;
    let mut otlp = None;
    let mut allow_insecure_http = false;
    let mut max_output_tokens = None;
    let mut legacy_max_tokens = false;
    let mut tool_choice = None;
    let mut first_turn_tool_choice = None;
    let mut deferred = false;
    let mut embed = EmbedFlags::default();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--api" => api = Some(value()?.parse::<Api>()?),
            "--base-url" => base_url = Some(value()?),
            "--model" => model = Some(value()?),
            "--tenant" => tenant = value()?,
            "--scopes" => {
                scopes = value()?
                    .split(',')
                    .map(str::trim)
                    .filter(|scope| !scope.is_empty())
                    .map(str::to_owned)
                    .collect();
            }
            "--approve" => {
                approve = match value()?.as_str() {
                    "never" => false,
                    "always" => true,
                    other => return Err(format!("--approve {other:?}: never or always")),
                }
            }
            "--max-turns" => {
                let text = value()?;
                max_turns = text
                    .parse()
                    .map_err(|_| format!("--max-turns {text:?}: a whole number"))?;
            }
            "--prompt" => prompt = Some(value()?),
            "--transcript" => transcript = Some(PathBuf::from(value()?)),
            "--otlp" => otlp = Some(otlp::endpoint(&value()?)?),
            "--allow-insecure-http" => allow_insecure_http = true,
            "--max-output-tokens" => {
                let text = value()?;
                max_output_tokens = Some(
                    text.parse()
                        .map_err(|_| format!("--max-output-tokens {text:?}: a whole number"))?,
                );
            }
            "--legacy-max-tokens" => legacy_max_tokens = true,
            "--tool-choice" => tool_choice = Some(value()?.parse::<ToolChoice>()?),
            "--first-turn-tool-choice" => {
                first_turn_tool_choice = Some(value()?.parse::<ToolChoice>()?);
            }
            "--deferred" => deferred = true,
            "--model-dir" => embed.model_dir = Some(PathBuf::from(value()?)),
            "--embed-cache" => embed.cache = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    embed.check()?;
    Ok(Args {
        api: api.ok_or("--api is required")?,
        base_url: base_url.ok_or("--base-url is required")?,
        model: model.ok_or("--model is required")?,
        tenant,
        scopes,
        approve,
        max_turns,
        prompt: prompt.ok_or("--prompt is required")?,
        transcript,
        otlp,
        allow_insecure_http,
        max_output_tokens,
        legacy_max_tokens,
        tool_choice,
        first_turn_tool_choice,
        deferred,
        embed,
    })
}

/// The transcript's JSON for how the loop ended.
fn transcript(outcome: &str, state: &AgentState, answer: &str) -> serde_json::Value {
    json!({
        "outcome": outcome,
        "turns": state.turns(),
        "calls": state.calls(),
        "answer": answer,
    })
}

async fn run(
    args: &Args,
    embedder: Option<LocalEmbedder>,
) -> Result<(ExitCode, serde_json::Value), Box<dyn std::error::Error>> {
    let mut builder = registry_examples::registry();
    if let Some(embedder) = &embedder {
        builder = builder.embedder(embedder.clone());
    }
    let registry = builder.build()?;
    if let Some(embedder) = embedder {
        // The tools are embedded now, on a blocking thread, rather than by the first search.
        let registry = registry.clone();
        tokio::task::spawn_blocking(move || embed::prepare(&registry, &embedder)).await?;
    }
    let subject = Subject::new(args.tenant.as_str())
        .with_scopes(args.scopes.iter().map(String::as_str))
        .with_agent("example-agent");
    let run = registry.open_run(format!("agent-{}", std::process::id()), &subject);
    tracing::info!(tools = ?run.allowed().names().collect::<Vec<_>>(), "the run's tools");
    let mut config =
        ModelConfig::new(args.api, &args.base_url, &args.model).api_key_from_env("AGENT_API_KEY");
    if args.allow_insecure_http {
        config = config.allow_insecure_http();
    }
    if let Some(tokens) = args.max_output_tokens {
        config = config.max_output_tokens(tokens);
    }
    if args.legacy_max_tokens {
        config = config.legacy_max_tokens();
    }
    let mut agent = Agent::new(config)?
        .budget(Budget::default().max_turns(args.max_turns))
        .instructions("You operate the build and deploy tools of this project. Use a tool when it helps; answer briefly.");
    if args.deferred {
        agent = agent.defer_above(0);
    }
    if let Some(choice) = &args.tool_choice {
        agent = agent.tool_choice(choice.clone());
    }
    if let Some(choice) = &args.first_turn_tool_choice {
        agent = agent.first_turn_tool_choice(choice.clone());
    }
    let mut outcome = agent.run(&run, &args.prompt).await;
    loop {
        match outcome {
            Ok(AgentEnd::Paused { requests, state }) => {
                // The person's verdicts: `--approve` decides them all.
                let verdicts = requests.iter().map(|request| {
                    let verdict = if args.approve {
                        Verdict::approve().by("agent --approve always")
                    } else {
                        Verdict::deny(
                            "the operator does not approve calls in this session (--approve never)",
                        )
                        .by("agent --approve never")
                    };
                    tracing::info!(
                        tool = request.tool_name(),
                        approved = args.approve,
                        "a call needed a person"
                    );
                    (request.id().to_owned(), verdict)
                });
                outcome = agent
                    .resume(&run, state, verdicts.collect::<Vec<_>>())
                    .await;
            }
            Ok(AgentEnd::Answered { answer, state }) => {
                println!("{answer}");
                return Ok((ExitCode::SUCCESS, transcript("answered", &state, &answer)));
            }
            Ok(AgentEnd::BudgetSpent { spent, state }) => {
                eprintln!("agent: the {spent} budget is spent");
                return Ok((ExitCode::from(3), transcript("budget_spent", &state, "")));
            }
            Ok(other) => {
                return Ok((ExitCode::FAILURE, transcript("error", other.state(), "")));
            }
            Err(AgentFailure { error, state }) => {
                eprintln!("agent: {error}");
                return Ok((ExitCode::FAILURE, transcript("error", &state, "")));
            }
        }
    }
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(args) => args,
        Err(message) if message.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("agent: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("agent: {error}");
            return ExitCode::FAILURE;
        }
    };
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".to_owned());
    let exporter = match &args.otlp {
        None => registry_mcp::logging::init(registry_mcp::logging::LogFormat::Text, &filter)
            .map(|()| None)
            .map_err(|error| format!("RUST_LOG: {error}")),
        Some(endpoint) => otlp::init(endpoint, &filter, runtime.handle().clone()).map(Some),
    };
    let exporter = match exporter {
        Ok(exporter) => exporter,
        Err(error) => {
            eprintln!("agent: {error}");
            return ExitCode::from(2);
        }
    };
    // The model's weights are read and checked before the loop; a bad --model-dir is a bad
    // flag.
    let code = match args.embed.load() {
        Ok(embedder) => finish(&args, &runtime, embedder),
        Err(message) => {
            eprintln!("agent: {message}");
            ExitCode::from(2)
        }
    };
    // Every exit from here on: the spans still queued go out (or a warning says why not)
    // while the runtime that sends them is still there.
    if let Some(exporter) = exporter {
        exporter.shutdown();
    }
    code
}

/// Runs the loop and writes the transcript; the exit status.
fn finish(
    args: &Args,
    runtime: &tokio::runtime::Runtime,
    embedder: Option<LocalEmbedder>,
) -> ExitCode {
    let (code, written) = match runtime.block_on(run(args, embedder)) {
        Ok(result) => result,
        Err(error) => {
            eprintln!("agent: {error}");
            (
                ExitCode::FAILURE,
                json!({"outcome": "error", "turns": 0, "calls": [], "answer": ""}),
            )
        }
    };
    if let Some(path) = &args.transcript
        && let Err(error) = std::fs::write(path, format!("{written:#}\n"))
    {
        eprintln!("agent: cannot write {}: {error}", path.display());
        return ExitCode::FAILURE;
    }
    code
}

/// `--otlp`: the loop's spans, exported over OTLP/HTTP (protobuf) with `tracing-opentelemetry`.
mod otlp {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
    use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use registry_mcp::logging::{self, LogFormat};
    use tracing_subscriber::Layer;
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    /// The service the spans are of.
    pub(crate) const SERVICE_NAME: &str = "registry-agent-example";
    /// One export request, connection and response body included.
    const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
    /// One batch, its retries included (the exporter's deadline).
    const EXPORT_TIMEOUT: Duration = Duration::from_secs(4);
    /// The flush at exit: past it the process exits without the spans still unsent.
    const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(7);
    /// A collector's answer is a few bytes; more than this is not read.
    const MAX_RESPONSE: usize = 64 * 1024;

    /// The URL the spans are posted to, from `--otlp`'s base URL (one that already ends in
    /// `/v1/traces` is taken as it is).
    pub(crate) fn endpoint(base: &str) -> Result<String, String> {
        let base = base.trim().trim_end_matches('/');
        let Some(rest) = base.strip_prefix("http://") else {
            return Err(format!(
                "--otlp {base:?}: an http:// URL, e.g. http://127.0.0.1:4318 (this example speaks plain HTTP to the collector)"
            ));
        };
        if rest.is_empty() {
            return Err(format!("--otlp {base:?}: the URL names no host"));
        }
        Ok(if base.ends_with("/v1/traces") {
            base.to_owned()
        } else {
            format!("{base}/v1/traces")
        })
    }

    /// The exporter's HTTP client: the workspace's reqwest 0.13, its requests run on the
    /// program's tokio runtime. The SDK's batch processor exports from a thread of its own,
    /// outside any runtime, where reqwest's async client cannot run (and its blocking client
    /// is a second stack): each request is spawned on the runtime, and the batch thread waits
    /// for its answer.
    #[derive(Debug, Clone)]
    struct Client {
        http: reqwest::Client,
        runtime: tokio::runtime::Handle,
        /// Why the last export request failed, if it did.
        failure: Arc<Mutex<Option<String>>>,
    }

    impl Client {
        async fn send(
            http: reqwest::Client,
            request: Request<Bytes>,
        ) -> Result<Response<Bytes>, String> {
            let request = reqwest::Request::try_from(request).map_err(|error| error.to_string())?;
            let mut response = http
                .execute(request)
                .await
                .map_err(|error| chain(&error.without_url()))?;
            let mut answer = Response::builder().status(response.status());
            if let Some(headers) = answer.headers_mut() {
                *headers = std::mem::take(response.headers_mut());
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|error| chain(&error))? {
                if body.len() + chunk.len() > MAX_RESPONSE {
                    return Err(format!(
                        "the collector's answer is past {MAX_RESPONSE} bytes"
                    ));
                }
                body.extend_from_slice(&chunk);
            }
            answer
                .body(Bytes::from(body))
                .map_err(|error| error.to_string())
        }
    }

    /// An error and its causes, `: `-separated (reqwest's own text is only the first).
    fn chain(error: &dyn std::error::Error) -> String {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        text
    }

    #[async_trait::async_trait]
    impl HttpClient for Client {
        async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
            let sent = self.runtime.spawn(Self::send(self.http.clone(), request));
            let result = match sent.await {
                Ok(result) => result,
                Err(error) => Err(format!("the export request did not finish: {error}")),
            };
            let failure = match &result {
                Ok(response) if response.status().is_success() => None,
                Ok(response) => Some(format!("the collector answered {}", response.status())),
                Err(error) => Some(error.clone()),
            };
            *self.failure.lock().unwrap_or_else(|e| e.into_inner()) = failure;
            result.map_err(HttpError::from)
        }
    }

    /// The exporter, to shut down before the process exits.
    pub(crate) struct Exporter {
        provider: SdkTracerProvider,
        endpoint: String,
        failure: Arc<Mutex<Option<String>>>,
    }

    impl Exporter {
        /// Sends the spans still queued, waiting [`SHUTDOWN_TIMEOUT`] at most; a failure is a
        /// warning on stderr.
        pub(crate) fn shutdown(self) {
            let shut = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
            let failure = self
                .failure
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            let problem = match shut {
                Err(error) => Some(error.to_string()),
                Ok(()) => failure,
            };
            if let Some(problem) = problem {
                eprintln!(
                    "agent: warning: the spans could not all be exported to {}: {}",
                    self.endpoint,
                    logging::escape(&problem)
                );
            }
        }
    }

    /// Sets the global subscriber: the log lines as without `--otlp` (`filter`, on stderr),
    /// and registry-agent's spans, whatever `filter` says, to the collector at `endpoint`.
    pub(crate) fn init(
        endpoint: &str,
        filter: &str,
        runtime: tokio::runtime::Handle,
    ) -> Result<Exporter, String> {
        let filter: Targets = filter.parse().map_err(|error| {
            let error = logging::LogError::Filter(logging::escape(&format!("{error}")).into());
            format!("RUST_LOG: {error}")
        })?;
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|error| format!("--otlp: {error}"))?;
        let failure = Arc::new(Mutex::new(None));
        let client = Client {
            http,
            runtime,
            failure: failure.clone(),
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(EXPORT_TIMEOUT)
            .with_http_client(client)
            .build()
            .map_err(|error| format!("--otlp {endpoint}: {error}"))?;
        let provider = SdkTracerProvider::builder()
            .with_resource(Resource::builder().with_service_name(SERVICE_NAME).build())
            .with_batch_exporter(exporter)
            .build();
        let spans = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer(SERVICE_NAME))
            .with_filter(Targets::new().with_target("registry_agent", tracing::Level::INFO));
        tracing_subscriber::registry()
            .with(logging::layer(LogFormat::Text).with_filter(filter))
            .with(spans)
            .try_init()
            .map_err(|_| "a global tracing subscriber is already set".to_owned())?;
        Ok(Exporter {
            provider,
            endpoint: endpoint.to_owned(),
            failure,
        })
    }
}
