//! Property tests of the boundary, over random registries, subjects and calls:
//!
//! - visible is exactly what the rules admit (all scopes granted, tenant admitted, access
//!   level, not revoked, policy allows), and `explain` gives exactly the reasons for the rest;
//! - the allowed set equals the visible set;
//! - no call outside the allowed set ever executes anything, and every call gets the kind the
//!   rules say.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use proptest::sample::subsequence;
use registry_core::{
    DynamicTool, ErrorKind, Registry, Subject, Tool, ToolCall,
    access::{Access, HiddenReason, Visibility},
};
use serde_json::json;

const SCOPES: [&str; 5] = ["a:read", "a:write", "b:read", "b:write", "admin"];
const TENANTS: [&str; 3] = ["t1", "t2", "t3"];

/// Every name a tool may have: `t_` and one to three of `a`, `b`.
fn names() -> Vec<String> {
    let mut names = Vec::new();
    for length in 1..=3 {
        for bits in 0..(1 << length) {
            let suffix: String = (0..length)
                .map(|i| if bits & (1 << i) == 0 { 'a' } else { 'b' })
                .collect();
            names.push(format!("t_{suffix}"));
        }
    }
    names
}

#[derive(Debug, Clone)]
struct Spec {
    name: String,
    scopes: Vec<&'static str>,
    tenants: Vec<&'static str>,
    read_only: bool,
    revoked: bool,
    /// Revoked after the run was opened: shown, but not callable.
    revoked_later: bool,
    denied: bool,
}

#[derive(Debug, Clone)]
struct SubjectSpec {
    tenant: &'static str,
    scopes: Vec<&'static str>,
    read_only: bool,
}

fn spec(name: String) -> impl Strategy<Value = Spec> {
    (
        subsequence(SCOPES.to_vec(), 0..=3),
        subsequence(TENANTS.to_vec(), 0..=2),
        any::<bool>(),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.15),
    )
        .prop_map(
            move |(scopes, tenants, read_only, revoked, revoked_later, denied)| Spec {
                name: name.clone(),
                scopes,
                tenants,
                read_only,
                revoked,
                revoked_later: revoked_later && !revoked,
                denied,
            },
        )
}

fn specs() -> impl Strategy<Value = Vec<Spec>> {
    subsequence(names(), 0..=10)
        .prop_flat_map(|names| names.into_iter().map(spec).collect::<Vec<_>>())
}

fn subject_spec() -> impl Strategy<Value = SubjectSpec> {
    (
        prop::sample::select(vec!["t1", "t2", "t3", "t4"]),
        subsequence(SCOPES.to_vec(), 0..=5),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(tenant, scopes, read_only)| SubjectSpec {
            tenant,
            scopes,
            read_only,
        })
}

/// Names a model might call: every possible tool name and some near misses.
fn call_names() -> impl Strategy<Value = Vec<String>> {
    let mut candidates = names();
    candidates.extend(
        [
            "T_a",
            "t_a ",
            " t_b",
            "t_",
            "",
            "t_aaaa",
            "t_\u{0430}",
            "t-a",
        ]
        .map(str::to_owned),
    );
    prop::collection::vec(prop::sample::select(candidates), 0..24)
}

/// The rules, recomputed: why `spec` is hidden from `subject`, in the registry's order.
fn reasons(spec: &Spec, subject: &SubjectSpec) -> Vec<HiddenReason> {
    let mut reasons = Vec::new();
    let missing: Vec<_> = spec
        .scopes
        .iter()
        .filter(|scope| !subject.scopes.contains(scope))
        .map(|scope| scope.parse().unwrap())
        .collect();
    if !missing.is_empty() {
        reasons.push(HiddenReason::MissingScopes { missing });
    }
    if !spec.tenants.is_empty() && !spec.tenants.contains(&subject.tenant) {
        reasons.push(HiddenReason::OtherTenant {
            tenants: spec.tenants.iter().map(|t| t.to_string()).collect(),
        });
    }
    if subject.read_only && !spec.read_only {
        reasons.push(HiddenReason::WriteToolInReadOnlyRun);
    }
    if spec.revoked {
        reasons.push(HiddenReason::Revoked {
            reason: format!("revoked {}", spec.name),
        });
    }
    if reasons.is_empty() && spec.denied {
        reasons.push(HiddenReason::HiddenByRule {
            reason: format!("denied {}", spec.name),
        });
    }
    reasons
}

struct World {
    registry: Registry,
    executed: Arc<Mutex<Vec<String>>>,
    asked: Arc<Mutex<BTreeSet<String>>>,
}

fn build(specs: &[Spec]) -> World {
    let executed = Arc::new(Mutex::new(Vec::new()));
    let asked = Arc::new(Mutex::new(BTreeSet::new()));
    let denied: BTreeSet<String> = specs
        .iter()
        .filter(|spec| spec.denied)
        .map(|spec| spec.name.clone())
        .collect();
    let mut builder = Registry::builder().access_rule({
        let asked = asked.clone();
        move |_: &Subject, tool: &Tool| {
            asked.lock().unwrap().insert(tool.name().to_owned());
            if denied.contains(tool.name()) {
                Visibility::Hidden(format!("denied {}", tool.name()))
            } else {
                Visibility::Visible
            }
        }
    });
    for spec in specs {
        let executed = executed.clone();
        let name = spec.name.clone();
        let mut tool = DynamicTool::new(spec.name.clone(), format!("The tool {}.", spec.name))
            .scopes(spec.scopes.iter().copied())
            .tenants(spec.tenants.iter().copied())
            .handler(move |_, _| {
                executed.lock().unwrap().push(name.clone());
                Ok::<_, String>(json!(name.clone()))
            });
        if spec.read_only {
            tool = tool.read_only();
        }
        if spec.scopes.is_empty() && spec.tenants.is_empty() {
            tool = tool.public();
        }
        builder = builder.tool(tool);
    }
    let registry = builder
        .allow_empty()
        .build()
        .expect("random tools are valid");
    for spec in specs.iter().filter(|spec| spec.revoked) {
        registry
            .revoke(&spec.name, format!("revoked {}", spec.name))
            .unwrap();
    }
    World {
        registry,
        executed,
        asked,
    }
}

fn subject(spec: &SubjectSpec) -> Subject {
    let subject = Subject::new(spec.tenant).with_scopes(spec.scopes.iter().copied());
    if spec.read_only {
        subject.with_access(Access::ReadOnly)
    } else {
        subject
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn visible_is_exactly_what_the_rules_admit(specs in specs(), who in subject_spec()) {
        let world = build(&specs);
        let run = world.registry.open_run("run", &subject(&who));

        let expected: BTreeMap<&str, Vec<HiddenReason>> = specs
            .iter()
            .map(|spec| (spec.name.as_str(), reasons(spec, &who)))
            .collect();
        let visible: Vec<&str> = expected
            .iter()
            .filter(|(_, reasons)| reasons.is_empty())
            .map(|(name, _)| *name)
            .collect();

        // The allowed set is the visible set, and so is what the model is shown.
        prop_assert_eq!(run.allowed().names().collect::<Vec<_>>(), visible.clone());
        prop_assert_eq!(
            run.definitions().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            visible.clone()
        );
        prop_assert_eq!(
            run.capabilities().map(|c| c.definition.name.as_str()).collect::<Vec<_>>(),
            visible.clone()
        );
        for name in names() {
            prop_assert_eq!(run.allowed().permits(&name), visible.contains(&name.as_str()));
        }

        // The policy was asked only about tools the other rules admit: it can only narrow.
        let admitted: BTreeSet<String> = specs
            .iter()
            .filter(|spec| reasons(&Spec { denied: false, ..(*spec).clone() }, &who).is_empty())
            .map(|spec| spec.name.clone())
            .collect();
        prop_assert_eq!(&*world.asked.lock().unwrap(), &admitted);

        // Every hidden tool is explained, with exactly the reasons of the rules.
        let explanation = run.explain();
        prop_assert_eq!(explanation.registered, specs.len());
        prop_assert_eq!(explanation.visible, visible.len());
        prop_assert_eq!(explanation.nothing_registered(), specs.is_empty());
        let explained: BTreeMap<&str, Vec<HiddenReason>> = explanation
            .hidden
            .iter()
            .map(|hidden| (hidden.name.as_str(), hidden.reasons.clone()))
            .collect();
        let hidden: BTreeMap<&str, Vec<HiddenReason>> = expected
            .into_iter()
            .filter(|(_, reasons)| !reasons.is_empty())
            .collect();
        prop_assert_eq!(explained, hidden);

        // Two runs of one subject are shown the same thing.
        let again = world.registry.open_run("again", &subject(&who));
        prop_assert_eq!(again.allowed().fingerprint(), run.allowed().fingerprint());
    }

    #[test]
    fn no_call_outside_the_allowed_set_executes_anything(
        specs in specs(),
        who in subject_spec(),
        calls in call_names(),
    ) {
        let world = build(&specs);
        let run = world.registry.open_run("run", &subject(&who));
        for spec in specs.iter().filter(|spec| spec.revoked_later) {
            world.registry.revoke(&spec.name, "later").unwrap();
        }
        let allowed: BTreeSet<String> = run.allowed().names().map(str::to_owned).collect();
        let revoked_later: BTreeSet<&str> = specs
            .iter()
            .filter(|spec| spec.revoked_later)
            .map(|spec| spec.name.as_str())
            .collect();

        let mut expected_executions = Vec::new();
        for (index, name) in calls.iter().enumerate() {
            let id = format!("call_{index}");
            let observation = if index % 2 == 0 {
                run.call_blocking(ToolCall::new(&*id, &**name, json!({})))
            } else {
                pollster::block_on(run.call(ToolCall::new(&*id, &**name, json!({}))))
            };
            prop_assert_eq!(observation.call_id(), id.as_str());
            prop_assert_eq!(observation.tool_name(), name.as_str());
            let expected = if allowed.contains(name) {
                if revoked_later.contains(name.as_str()) {
                    Some(ErrorKind::Revoked)
                } else {
                    expected_executions.push(name.clone());
                    None
                }
            } else if world.registry.contains(name) {
                Some(ErrorKind::NotAllowed)
            } else {
                Some(ErrorKind::UnknownTool)
            };
            prop_assert_eq!(observation.error_kind(), expected, "{:?}", name);
            if expected.is_none() {
                prop_assert_eq!(observation.json(), &json!(name));
            }
        }
        let executed = world.executed.lock().unwrap();
        prop_assert!(executed.iter().all(|name| allowed.contains(name)));
        prop_assert_eq!(&*executed, &expected_executions);
    }
}

/// The projection of a registry large enough that a scope's or a tenant's tools are kept as
/// bits (more than a list of them would take), with tools of no scope, one scope and several,
/// of some tenants and of any, read-only or not, some revoked: for every subject, the allowed
/// set is exactly the tools the rules admit, in name order.
#[test]
fn a_large_registry_projects_as_the_rules_say() {
    // A fixed pseudo-random sequence (64-bit LCG), so that a failure repeats.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |below: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % below
    };
    let specs: Vec<Spec> = (0..700)
        .map(|index| {
            let scopes: Vec<&'static str> = match next(10) {
                0 => Vec::new(),
                1..=6 => vec![SCOPES[next(5) as usize]],
                _ => {
                    let first = next(5) as usize;
                    let second = (first + 1 + next(4) as usize) % 5;
                    vec![SCOPES[first], SCOPES[second]]
                }
            };
            let tenants: Vec<&'static str> = match next(6) {
                0 => vec![TENANTS[next(3) as usize]],
                1 => vec![TENANTS[0], TENANTS[2]],
                _ => Vec::new(),
            };
            Spec {
                name: format!("p_{index:04}"),
                scopes,
                tenants,
                read_only: next(3) == 0,
                revoked: next(25) == 0,
                revoked_later: false,
                denied: next(40) == 0,
            }
        })
        .collect();
    let world = build(&specs);
    let subjects = (0..(1 << SCOPES.len()))
        .flat_map(|granted: usize| {
            let scopes: Vec<&'static str> = (0..SCOPES.len())
                .filter(|bit| granted & (1 << bit) != 0)
                .map(|bit| SCOPES[bit])
                .collect();
            ["t1", "t2", "t3", "none"]
                .into_iter()
                .flat_map(move |tenant| {
                    let scopes = scopes.clone();
                    [false, true].into_iter().map(move |read_only| SubjectSpec {
                        tenant,
                        scopes: scopes.clone(),
                        read_only,
                    })
                })
        })
        .collect::<Vec<_>>();
    for who in &subjects {
        let run = world.registry.open_run("large", &subject(who));
        let expected: Vec<&str> = specs
            .iter()
            .filter(|spec| reasons(spec, who).is_empty())
            .map(|spec| spec.name.as_str())
            .collect();
        let allowed: Vec<&str> = run.allowed().names().collect();
        assert_eq!(allowed, expected, "subject {who:?}");
    }
}
