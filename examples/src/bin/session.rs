//! A scripted agent session: two subjects of one tenant, what each is shown, and a bundled
//! transcript of model calls (valid and hostile) with the observation each one gets, a
//! revocation in the middle, and the audit log at the end.
//!
//! Run it with `cargo run -p registry-examples --bin session`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use registry_core::{AuditEvent, Registry, Run, Subject, ToolCall};
use serde::Deserialize;
use serde_json::Value;

use registry_examples as _;

/// The transcript bundled with the example.
const TRANSCRIPT: &str = include_str!("../../transcripts/session.json");

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
    let registry = Registry::builder().declared().audit_sink(sink).build()?;
    println!(
        "The registry has {} tools: {}\n",
        registry.len(),
        join(registry.names())
    );

    let mut runs = BTreeMap::new();
    for (name, spec) in &transcript.subjects {
        let mut subject = Subject::new(spec.tenant.as_str()).with_scopes(spec.scopes.clone());
        if spec.read_only {
            subject = subject.read_only();
        }
        if let Some(agent) = &spec.agent {
            subject = subject.with_agent(agent.as_str());
        }
        let run = registry.open_run(format!("run-{name}"), &subject);
        show_run(name, spec, &run);
        runs.insert(name.clone(), run);
    }

    println!("== The transcript\n");
    for step in transcript.steps {
        match step {
            Step::Revoke { revoke, reason } => {
                registry.revoke(&revoke, reason.as_str())?;
                println!("[operator] revokes {revoke:?}: {reason}\n");
            }
            Step::Call { run, note, call } => {
                let arguments = match (&call.arguments, &call.arguments_text) {
                    (_, Some(text)) => text.clone(),
                    (Some(value), None) => value.to_string(),
                    (None, None) => "{}".to_owned(),
                };
                let call = match call.arguments_text {
                    Some(text) => ToolCall::from_json_text(call.id, call.name, &text),
                    None => ToolCall::new(call.id, call.name, call.arguments.unwrap_or_default()),
                };
                println!("[{run}] {note}");
                println!(
                    "  model calls {} {} with {arguments}",
                    call.id(),
                    call.name()
                );
                let observation = runs[&run].call_blocking(call);
                match observation.error_kind() {
                    None => println!("  -> ok: {}", observation.content()),
                    Some(kind) => println!(
                        "  -> {kind}: {}",
                        observation.error_text().unwrap_or_default()
                    ),
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

fn show_run(name: &str, spec: &SubjectSpec, run: &Run) {
    let access = if spec.read_only {
        "read-only"
    } else {
        "read-write"
    };
    println!(
        "== {name}: tenant {}, scopes [{}], {access}",
        spec.tenant,
        spec.scopes.join(", ")
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
        other => format!("{other:?}"),
    }
}

fn join<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}
