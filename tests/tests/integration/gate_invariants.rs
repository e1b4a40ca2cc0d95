//! Property: no call executes unless its tool is in the run's allowed set, the call passes
//! the policy, has quota, and (if it needs approval) was approved, with exactly the executed
//! arguments, once.
//!
//! Random registries, subjects and sequences of calls, approvals (some with edited
//! arguments) and denials are run against a model of those rules; every observation's kind
//! and the exact list of executions must match the model's.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use registry_core::approval::Verdict;
use registry_core::{
    DynamicTool, ErrorKind, Registry, Subject, ToolCall,
    approval::ApprovalError,
    gate::{CallRequest, Decision},
};
use serde_json::{Value, json};

const SCOPES: [&str; 2] = ["a", "b"];

#[derive(Debug, Clone)]
struct ToolSpec {
    scopes: Vec<usize>,
    needs_approval: bool,
    limit: Option<u32>,
    /// Argument values the policy denies.
    deny: BTreeSet<u8>,
    /// Argument values the policy sends for approval.
    ask: BTreeSet<u8>,
}

#[derive(Debug, Clone)]
enum Action {
    /// Call tool `tool` (an index past the end: an unknown name) with `x`.
    Call { tool: usize, x: u8 },
    /// Approve the `nth` request made so far, optionally with an edited `x`.
    Approve { nth: usize, edit: Option<u8> },
    /// Deny the `nth` request made so far.
    Deny { nth: usize },
}

fn tool_spec() -> impl Strategy<Value = ToolSpec> {
    (
        proptest::sample::subsequence(vec![0usize, 1], 0..=2),
        any::<bool>(),
        proptest::option::of(1u32..3),
        proptest::collection::btree_set(0u8..4, 0..2),
        proptest::collection::btree_set(0u8..4, 0..2),
    )
        .prop_map(|(scopes, needs_approval, limit, deny, ask)| ToolSpec {
            scopes,
            needs_approval,
            limit,
            deny,
            ask,
        })
}

fn action(tools: usize) -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => (0..=tools, 0u8..4).prop_map(|(tool, x)| Action::Call { tool, x }),
        2 => (0usize..6, proptest::option::of(0u8..4))
            .prop_map(|(nth, edit)| Action::Approve { nth, edit }),
        1 => (0usize..6).prop_map(|nth| Action::Deny { nth }),
    ]
}

fn name(index: usize) -> String {
    format!("tool_{index}")
}

/// A request as the model tracks it.
struct Pending {
    id: String,
    tool: usize,
    decided: bool,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn only_allowed_admitted_and_approved_calls_execute(
        specs in proptest::collection::vec(tool_spec(), 1..5),
        granted in proptest::sample::subsequence(vec![0usize, 1], 0..=2),
        actions in proptest::collection::vec(action(4), 1..30),
    ) {
        let executed: Arc<Mutex<Vec<(usize, u8)>>> = Arc::default();
        let mut builder = Registry::builder();
        for (index, spec) in specs.iter().enumerate() {
            let executed = executed.clone();
            let mut tool = DynamicTool::new(name(index), "A tool.")
                .parameters(json!({
                    "type": "object",
                    "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 3}},
                    "required": ["x"],
                    "additionalProperties": false
                }))
                .scopes(spec.scopes.iter().map(|&s| SCOPES[s]))
                .handler(move |_, args: Value| {
                    let x = args["x"].as_u64().unwrap() as u8;
                    executed.lock().unwrap().push((index, x));
                    Ok::<_, String>(json!(x))
                });
            if spec.scopes.is_empty() {
                tool = tool.public();
            }
            if spec.needs_approval {
                tool = tool.needs_approval();
            }
            if let Some(limit) = spec.limit {
                tool = tool.rate_limit(format!("{limit}/h").as_str());
            }
            builder = builder.tool(tool);
        }
        let policy_specs = specs.clone();
        let registry = builder
            .call_policy(move |call: &CallRequest<'_>| {
                let index: usize = call.tool_name()["tool_".len()..].parse().unwrap();
                let x = call.arguments()["x"].as_u64().unwrap() as u8;
                let spec = &policy_specs[index];
                if spec.deny.contains(&x) {
                    Decision::Deny("denied value".into())
                } else if spec.ask.contains(&x) {
                    Decision::RequireApproval("asked value".into())
                } else {
                    Decision::Allow
                }
            })
            .build()
            .unwrap();
        let subject = Subject::new("acme").with_scopes(granted.iter().map(|&s| SCOPES[s]));
        let run = registry.open_run("run-1", &subject);

        let visible = |tool: usize| {
            tool < specs.len() && specs[tool].scopes.iter().all(|s| granted.contains(s))
        };
        let mut used = vec![0u32; specs.len()];
        let mut expected: Vec<(usize, u8)> = Vec::new();
        let mut requests: Vec<Pending> = Vec::new();
        // What the quota and the executions make of an admitted call.
        let admit = |tool: usize, x: u8, used: &mut Vec<u32>, expected: &mut Vec<(usize, u8)>| {
            if specs[tool].limit.is_some_and(|limit| used[tool] >= limit) {
                Some(ErrorKind::RateLimited)
            } else {
                used[tool] += 1;
                expected.push((tool, x));
                None
            }
        };

        for (step, action) in actions.iter().enumerate() {
            match *action {
                Action::Call { tool, x } => {
                    let observation = run.call_blocking(ToolCall::new(
                        format!("c{step}"), name(tool), json!({"x": x}),
                    ));
                    let want = if tool >= specs.len() {
                        Some(ErrorKind::UnknownTool)
                    } else if !visible(tool) {
                        Some(ErrorKind::NotAllowed)
                    } else if specs[tool].deny.contains(&x) {
                        Some(ErrorKind::Denied)
                    } else if specs[tool].needs_approval || specs[tool].ask.contains(&x) {
                        let request = observation.approval().expect("a request");
                        prop_assert_eq!(request.arguments(), &json!({"x": x}));
                        requests.push(Pending { id: request.id().to_owned(), tool, decided: false });
                        Some(ErrorKind::ApprovalRequired)
                    } else {
                        admit(tool, x, &mut used, &mut expected)
                    };
                    prop_assert_eq!(observation.error_kind(), want, "step {}: {:?}", step, action);
                }
                Action::Approve { nth, edit } => {
                    let Some(request) = requests.get_mut(nth) else { continue };
                    let outcome = match edit {
                        None => run.decide_blocking(&request.id, Verdict::approve()),
                        Some(x) => run.decide_blocking(&request.id, Verdict::approve().with_arguments(json!({"x": x}))),
                    };
                    if request.decided {
                        let is_decided = matches!(outcome, Err(ApprovalError::AlreadyDecided { .. }));
                        prop_assert!(is_decided, "{:?}", outcome);
                        continue;
                    }
                    request.decided = true;
                    let tool = request.tool;
                    let observation = outcome.unwrap().into_answer().unwrap();
                    let x = match edit {
                        Some(x) => x,
                        None => {
                            // The requested arguments, exactly.
                            let pending_x = observation.call_id()[1..].parse::<usize>().unwrap();
                            match actions[pending_x] { Action::Call { x, .. } => x, _ => unreachable!() }
                        }
                    };
                    let want = if edit.is_some() && specs[tool].deny.contains(&x) {
                        Some(ErrorKind::Denied)
                    } else {
                        admit(tool, x, &mut used, &mut expected)
                    };
                    prop_assert_eq!(observation.error_kind(), want, "step {}: {:?}", step, action);
                }
                Action::Deny { nth } => {
                    let Some(request) = requests.get_mut(nth) else { continue };
                    let outcome = run.decide_blocking(&request.id, Verdict::deny("no"));
                    if request.decided {
                        let is_decided = matches!(outcome, Err(ApprovalError::AlreadyDecided { .. }));
                        prop_assert!(is_decided, "{:?}", outcome);
                    } else {
                        request.decided = true;
                        let observation = outcome.unwrap().into_answer().unwrap();
                        prop_assert_eq!(observation.error_kind(), Some(ErrorKind::Denied));
                    }
                }
            }
        }
        prop_assert_eq!(&*executed.lock().unwrap(), &expected);
    }
}
