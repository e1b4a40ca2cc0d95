//! The whole library in one offline run: tools declared in two modules and a tools crate,
//! two subjects and what each is shown, the export for each provider, then a bundled
//! transcript of model calls (valid and hostile) arriving in a provider's format, with the
//! observation each one gets and the result message rendered back; the gate at work (a
//! production deploy and a destructive tool waiting for a person, approved and denied, a rate
//! limit, a tool that is not ready); a revocation in the middle, and the audit log at the end.
//! No network, no key.
//!
//! Run it with `cargo run -p registry-examples --bin demo`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use registry_core::approval::Verdict;
use registry_core::{Profile, Run, Subject, access::Access, audit::AuditEvent};
use serde::Deserialize;
use serde_json::{Value, json};

/// The transcript bundled with the example.
const TRANSCRIPT: &str = include_str!("../../transcripts/transcript.json");

#[derive(Deserialize)]
struct Transcript {
    subjects: BTreeMap<String, SubjectSpec>,
    steps: Vec<Step>,
}

#[derive(Deserialize)]
struct SubjectSpec {
    tenant: String,
    scopes: Vec<String>,
    #[serde(default)]
    read_only: bool,
    agent: Option<String>,
    /// The provider whose format the subject's model speaks.
    provider: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Step {
    Call {
        run: String,
        note: String,
        call: CallSpec,
    },
    Revoke {
        revoke: String,
        reason: String,
    },
    /// A person approves the call with this id, which waits for approval.
    Approve {
        approve: String,
        by: String,
    },
    /// A person denies it.
    Deny {
        deny: String,
        by: String,
        reason: String,
    },
}

/// A call that waits for a person: its run and the request's id.
struct Waiting {
    run: String,
    id: String,
}

#[derive(Deserialize)]
struct CallSpec {
    id: String,
    name: String,
    arguments: Option<Value>,
    arguments_text: Option<String>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A panicking tool is caught by the run and its message goes to the audit log; keep the
    // default hook from also printing it (and a backtrace) in the middle of the transcript.
    std::panic::set_hook(Box::new(|_| {}));
    let transcript: Transcript = serde_json::from_str(TRANSCRIPT)?;
    let audit_log = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let log = audit_log.clone();
        move |event: &AuditEvent| log.lock().unwrap().push(event.clone())
    };
    let registry = registry_examples::registry().audit_sink(sink).build()?;
    println!(
        "The registry has {} tools: {}\n",
        registry.len(),
        join(registry.names())
    );

    let mut runs = BTreeMap::new();
    for (name, spec) in &transcript.subjects {
        let mut subject = Subject::new(spec.tenant.as_str()).with_scopes(spec.scopes.clone());
        if spec.read_only {
            subject = subject.with_access(Access::ReadOnly);
        }
        if let Some(agent) = &spec.agent {
            subject = subject.with_agent(agent.as_str());
        }
        let run = registry.open_run(format!("run-{name}"), &subject);
        show_run(name, spec, &run);
        runs.insert(name.clone(), run);
    }

    show_exports(&runs["reader"]);

    println!("== The transcript\n");
    let mut waiting: BTreeMap<String, Waiting> = BTreeMap::new();
    for step in transcript.steps {
        match step {
            Step::Approve { approve, by } => {
                let Some(call) = waiting.remove(&approve) else {
                    return Err(format!(
                        "the transcript approves {approve:?}, which waits for nothing"
                    )
                    .into());
                };
                println!("[{by}] approves {approve}");
                let settled = runs[&call.run]
                    .decide_blocking(&call.id, Verdict::approve().by(by.as_str()))?;
                let Some(observation) = settled.answer() else {
                    return Err(format!("{approve:?} started a task, not a call").into());
                };
                show_answer(
                    observation,
                    provider(&transcript.subjects[&call.run].provider),
                );
                println!();
            }
            Step::Deny { deny, by, reason } => {
                let Some(call) = waiting.remove(&deny) else {
                    return Err(
                        format!("the transcript denies {deny:?}, which waits for nothing").into(),
                    );
                };
                println!("[{by}] denies {deny}: {reason}");
                let settled =
                    runs[&call.run].decide_blocking(&call.id, Verdict::deny(reason.as_str()))?;
                let Some(observation) = settled.answer() else {
                    return Err(format!("{deny:?} started a task, not a call").into());
                };
                show_answer(
                    observation,
                    provider(&transcript.subjects[&call.run].provider),
                );
                println!();
            }
            Step::Revoke { revoke, reason } => {
                registry.revoke(&revoke, reason.as_str())?;
                println!("[operator] revokes {revoke:?}: {reason}\n");
            }
            Step::Call { run, note, call } => {
                let profile = provider(&transcript.subjects[&run].provider);
                let response = provider_response(profile, &call);
                println!("[{run}] {note}");
                println!("  the model answers ({profile}): {response}");
                let calls = profile.parse_calls(&response)?;
                for call in calls {
                    let observation = runs[&run].call_blocking(call);
                    if let Some(request) = observation.approval() {
                        // An application asks a person before answering the model.
                        println!(
                            "  -> waits for approval {}: {}",
                            request.id(),
                            request.question()
                        );
                        waiting.insert(
                            observation.call_id().to_owned(),
                            Waiting {
                                run: run.clone(),
                                id: request.id().to_owned(),
                            },
                        );
                        continue;
                    }
                    show_answer(&observation, profile);
                }
                println!();
            }
        }
    }

    println!("== The audit log (argument values are never recorded)\n");
    for event in audit_log.lock().unwrap().iter() {
        println!("{}", audit_line(event));
    }
    Ok(())
}

/// The observation, and the result message the model gets.
fn show_answer(observation: &registry_core::Observation, profile: Profile) {
    match (observation.error_kind(), observation.retry_after()) {
        (None, _) => println!("  -> ok: {}", observation.json()),
        (Some(kind), Some(retry)) => println!(
            "  -> {kind} (retry after {} ms): {}",
            retry.as_millis(),
            observation.error_text().unwrap_or_default()
        ),
        (Some(kind), None) => println!(
            "  -> {kind}: {}",
            observation.error_text().unwrap_or_default()
        ),
    }
    println!("  sent back: {}", profile.render(observation));
}

/// What each provider is shown for the same run: the first tool of each export, in full.
fn show_exports(run: &Run) {
    println!(
        "== What each provider is shown for the reader (its first tool; all exports are byte-stable)\n"
    );
    for &profile in Profile::ALL {
        match run.export(profile) {
            Ok(export) => {
                let text = serde_json::to_string(&export).expect("an export is JSON");
                let first = match profile {
                    Profile::Gemini => &export[0]["functionDeclarations"][0],
                    _ => &export[0],
                };
                println!(
                    "{profile} ({} bytes for {} tools):",
                    text.len(),
                    run.allowed().len()
                );
                println!("  {first}");
                if let Some(allowlist) = run.allowlist(profile) {
                    println!("  allowlist: {allowlist}");
                }
            }
            Err(error) => println!("{profile}: {error}"),
        }
        println!();
    }
}

/// The provider named in the transcript.
fn provider(name: &str) -> Profile {
    name.parse()
        .unwrap_or_else(|error| panic!("the transcript names an unknown provider: {error}"))
}

/// The model's response carrying `call`, in the provider's own format.
fn provider_response(profile: Profile, call: &CallSpec) -> Value {
    let arguments = call.arguments.clone().unwrap_or_else(|| json!({}));
    let text = call
        .arguments_text
        .clone()
        .unwrap_or_else(|| arguments.to_string());
    match profile {
        Profile::OpenAiChat { .. } => json!({"choices": [{"message": {"role": "assistant",
            "tool_calls": [{"id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": text}}]}}]}),
        Profile::OpenAiResponses { .. } => json!({"output": [{"type": "function_call",
            "call_id": call.id, "name": call.name, "arguments": text}]}),
        Profile::Anthropic => json!({"content": [{"type": "tool_use", "id": call.id,
            "name": call.name, "input": arguments}]}),
        Profile::Gemini => json!({"candidates": [{"content": {"parts": [{"functionCall":
            {"name": call.name, "args": arguments}}]}}]}),
        _ => json!({"jsonrpc": "2.0", "id": call.id, "method": "tools/call",
            "params": {"name": call.name, "arguments": arguments}}),
    }
}

fn show_run(name: &str, spec: &SubjectSpec, run: &Run) {
    let access = if spec.read_only {
        "read-only"
    } else {
        "read-write"
    };
    println!(
        "== {name}: tenant {}, scopes [{}], {access}, its model speaks {}",
        spec.tenant,
        spec.scopes.join(", "),
        spec.provider
    );
    println!(
        "   is shown {} tools: {}",
        run.allowed().len(),
        join(run.allowed().names())
    );
    println!("   allowed-set fingerprint {}", run.allowed().fingerprint());
    for line in run.explain().to_string().lines().skip(1) {
        println!("   {}", line.trim_start());
    }
    println!();
}

fn audit_line(event: &AuditEvent) -> String {
    match event {
        AuditEvent::Projection(p) => format!(
            "projection {:<10} tenant={} visible={} hidden={} fingerprint={}",
            p.run_id, p.tenant, p.visible, p.hidden, p.fingerprint
        ),
        AuditEvent::Call(c) => format!(
            "call       {:<10} {} {:<17} -> {:<17} {:>6} us  args {} bytes, hash {}{}",
            c.run_id,
            c.call_id,
            c.tool,
            c.outcome.map_or("ok", |kind| kind.as_str()),
            c.duration.as_micros(),
            c.argument_bytes,
            if c.argument_hash.is_empty() {
                "-"
            } else {
                &c.argument_hash
            },
            c.detail
                .as_deref()
                .map(|detail| format!("  [{detail}]"))
                .unwrap_or_default()
        ),
        AuditEvent::Change(c) => format!(
            "change     {} {:?}: {}",
            c.change.name, c.change.kind, c.change.reason
        ),
        AuditEvent::Approval(a) => format!(
            "approval   {:<10} {} {:<17} {}{}  {}",
            a.run_id,
            a.call_id,
            a.tool,
            a.kind.as_str(),
            a.by.as_deref()
                .map(|by| format!(" by {by}"))
                .unwrap_or_default(),
            a.id
        ),
        AuditEvent::Readiness(r) => format!(
            "readiness  {} {}",
            r.tool,
            r.not_ready
                .as_deref()
                .map_or("ready".to_owned(), |why| format!("not ready: {why}"))
        ),
        other => format!("{other:?}"),
    }
}

fn join<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}
