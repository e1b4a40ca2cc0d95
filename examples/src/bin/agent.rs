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

use std::path::PathBuf;
use std::process::ExitCode;

use registry_agent::{Agent, AgentFailure, AgentOutcome, AgentState, Api, Budget, ModelConfig};
use registry_core::Subject;
use registry_core::approval::Verdict;
use serde_json::json;

const USAGE: &str = "\
usage: agent --api openai-chat|openai-responses|anthropic --base-url URL --model NAME
             [--tenant T] [--scopes A,B] [--approve never|always] [--max-turns N]
             --prompt TEXT [--transcript FILE]

  --api          the model API the server speaks
  --base-url     its base URL, e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1
  --model        the model's name
  --tenant       the run's tenant (default acme)
  --scopes       the run's scopes, comma-separated (default none: the public tools only)
  --approve      what a person says to a call that needs one: never (the default) or always
  --max-turns    model requests at most (default 8)
  --prompt       the user's message
  --transcript   write the outcome, turns, calls and answer to FILE as JSON
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
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
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

async fn run(args: &Args) -> Result<(ExitCode, serde_json::Value), Box<dyn std::error::Error>> {
    let registry = registry_examples::registry().build()?;
    let subject = Subject::new(args.tenant.as_str())
        .with_scopes(args.scopes.iter().map(String::as_str))
        .with_agent("example-agent");
    let run = registry.open_run(format!("agent-{}", std::process::id()), &subject);
    tracing::info!(tools = ?run.allowed().names().collect::<Vec<_>>(), "the run's tools");
    let agent = Agent::new(
        ModelConfig::new(args.api, &args.base_url, &args.model).api_key_from_env("AGENT_API_KEY"),
    )?
    .budget(Budget::default().max_turns(args.max_turns))
    .instructions("You operate the build and deploy tools of this project. Use a tool when it helps; answer briefly.");
    let mut outcome = agent.run(&run, &args.prompt).await;
    loop {
        match outcome {
            Ok(AgentOutcome::Paused { requests, state }) => {
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
            Ok(AgentOutcome::Answered { answer, state }) => {
                println!("{answer}");
                return Ok((ExitCode::SUCCESS, transcript("answered", &state, &answer)));
            }
            Ok(AgentOutcome::BudgetSpent { spent, state }) => {
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
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".to_owned());
    if let Err(error) = registry_mcp::logging::init(registry_mcp::logging::LogFormat::Text, &filter)
    {
        eprintln!("agent: RUST_LOG: {error}");
        return ExitCode::from(2);
    }
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
    let (code, written) = match runtime.block_on(run(&args)) {
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
