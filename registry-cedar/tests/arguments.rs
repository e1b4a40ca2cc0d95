//! Cedar policies never lose an argument silently (issue 44, item 2; review 2026-12-04 T5-1,
//! T5-6, T5-7): a policy that reads an argument the tools type differently, or that Cedar
//! cannot type, or that can never apply, fails the build; a later replacement that would do
//! the same is refused and the policies keep working; hostile property names cannot reach
//! the schema text; reloads and bindings never share a generation; a set given where it would
//! never be validated fails the build; policies that share a line get ids of their own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use registry_cedar::CedarPolicies;
use registry_core::change::ReplaceOptions;
use registry_core::{
    BuildProblem, DynamicTool, ErrorKind, Registry, RegistryError, Subject, ToolCall,
};
use serde_json::{Value, json};

/// The issue's reproduction: `pay {"cents": 500000}` must never run.
const PAY_LIMIT: &str = r#"
@id("all") permit(principal, action, resource);
@id("large-payments") @reason("payments over 1000.00 go through the finance desk")
forbid(principal, action == Action::"call", resource == Tool::"pay")
when { context.arguments has cents && context.arguments.cents > 100000 };
"#;

/// A public tool taking `properties`, counting how often it ran.
fn counted(name: &str, properties: Value, runs: &Arc<AtomicUsize>) -> DynamicTool {
    let runs = runs.clone();
    DynamicTool::new(name, format!("The {name} tool."))
        .public()
        .parameters(json!({"type": "object", "properties": properties}))
        .handler(move |_, args: Value| {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(args)
        })
}

fn pay(runs: &Arc<AtomicUsize>) -> DynamicTool {
    counted("pay", json!({"cents": {"type": "integer"}}), runs)
}

fn label(runs: &Arc<AtomicUsize>) -> DynamicTool {
    counted("label", json!({"cents": {"type": "string"}}), runs)
}

fn policy_problems(result: Result<Registry, RegistryError>) -> Vec<String> {
    match result {
        Err(RegistryError::Build(problems)) => problems
            .iter()
            .filter(|problem| matches!(problem, BuildProblem::Policy { .. }))
            .map(ToString::to_string)
            .collect(),
        Err(other) => panic!("not a build error: {other}"),
        Ok(_) => panic!("the registry was built"),
    }
}

fn pay_large(registry: &Registry) -> Option<ErrorKind> {
    let run = registry.open_run("r", &Subject::new("acme"));
    run.call_blocking(ToolCall::new("1", "pay", json!({"cents": 500000})))
        .error_kind()
}

#[test]
fn a_policy_reading_an_argument_the_tools_type_differently_fails_the_build() {
    let runs = Arc::new(AtomicUsize::new(0));
    // Before the fix this built without a word, and `pay {"cents": 500000}` ran: `label`'s
    // string `cents` took the argument out of `context.arguments`, and the forbid, guarded
    // by `has`, validated with only a warning and never fired.
    let built = Registry::builder()
        .tool(pay(&runs))
        .tool(label(&runs))
        .policies(CedarPolicies::parse(PAY_LIMIT).unwrap())
        .build();
    let problems = policy_problems(built);
    let named = ["large-payments", "\"cents\"", "label: String", "pay: Long"];
    assert!(
        problems
            .iter()
            .any(|problem| named.iter().all(|named| problem.contains(named))),
        "{problems:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // Without the tool that disagrees, the forbid fires.
    let registry = Registry::builder()
        .tool(pay(&runs))
        .policies(CedarPolicies::parse(PAY_LIMIT).unwrap())
        .build()
        .unwrap();
    assert_eq!(pay_large(&registry), Some(ErrorKind::Denied));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "pay {{cents: 500000}} ran");
    let run = registry.open_run("r", &Subject::new("acme"));
    let small = run.call_blocking(ToolCall::new("2", "pay", json!({"cents": 500})));
    assert!(small.error_kind().is_none(), "{:?}", small.error_text());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn every_way_of_reading_a_dropped_argument_fails_the_build() {
    let runs = Arc::new(AtomicUsize::new(0));
    let forms = [
        // Cedar 4's `has` on a path, and the index form.
        r#"forbid(principal, action, resource) when { context has arguments.cents && context.arguments.cents > 1 };"#,
        r#"forbid(principal, action, resource) when { context.arguments has "cents" && context.arguments["cents"] > 1 };"#,
        // Not impossible as a whole (so no validator warning): the argument read alone refuses it.
        r#"forbid(principal, action, resource) when { (context.arguments has cents && context.arguments.cents > 1) || principal.tenant == "x" };"#,
        // The whole record, which lacks the argument.
        r#"forbid(principal, action, resource) when { context.arguments == {} };"#,
    ];
    for form in forms {
        let text =
            format!("@id(\"all\") permit(principal, action, resource);\n@id(\"reader\") {form}");
        let built = Registry::builder()
            .tool(pay(&runs))
            .tool(label(&runs))
            .policies(CedarPolicies::parse(&text).unwrap())
            .build();
        let problems = policy_problems(built);
        assert!(
            problems
                .iter()
                .any(|problem| problem.contains("policy reader") && problem.contains("cents")),
            "{form}: {problems:?}"
        );
    }
}

#[test]
fn a_policy_reading_what_cedar_cannot_type_or_what_no_tool_declares_fails_the_build() {
    let runs = Arc::new(AtomicUsize::new(0));
    let reads = |condition: &str| {
        format!(
            "@id(\"all\") permit(principal, action, resource);\n@id(\"reader\") forbid(principal, action, resource) when {{ {condition} }};"
        )
    };
    let cases = [
        (
            reads("context.arguments has ratio && context.arguments.ratio > 1"),
            "Cedar cannot type it",
        ),
        (
            reads("context.arguments has amount && context.arguments.amount > 1"),
            "no tool declares",
        ),
        (
            reads("principal has clearance && principal.clearance == \"secret\""),
            "principal.clearance",
        ),
        (
            reads("resource has data_domain && resource.data_domain.contains(\"pii\")"),
            "resource.data_domain",
        ),
    ];
    for (text, expected) in cases {
        let built = Registry::builder()
            .tool(pay(&runs))
            .tool(counted(
                "scale",
                json!({"ratio": {"type": "number"}}),
                &runs,
            ))
            .policies(CedarPolicies::parse(&text).unwrap())
            .build();
        let problems = policy_problems(built);
        assert!(
            problems
                .iter()
                .any(|problem| problem.contains("policy reader") && problem.contains(expected)),
            "{text}: {problems:?}"
        );
    }
}

#[test]
fn a_policy_that_can_never_apply_fails_the_build() {
    let runs = Arc::new(AtomicUsize::new(0));
    // Impossible for the validator, with no argument or attribute read to blame.
    let text = r#"
        @id("all") permit(principal, action, resource);
        @id("never") forbid(principal, action, resource) when { principal.tenant == "x" && false };
    "#;
    let built = Registry::builder()
        .tool(pay(&runs))
        .policies(CedarPolicies::parse(text).unwrap())
        .build();
    let problems = policy_problems(built);
    assert!(
        problems
            .iter()
            .any(|problem| problem.contains("policy never") && problem.contains("never apply")),
        "{problems:?}"
    );
}

#[test]
fn a_replacement_that_would_drop_an_argument_a_policy_reads_is_refused() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = Registry::builder()
        .tool(pay(&runs))
        .tool(counted("label", json!({"text": {"type": "string"}}), &runs))
        .policies(CedarPolicies::parse(PAY_LIMIT).unwrap())
        .build()
        .unwrap();
    let label_before = registry.get("label").unwrap().version_fingerprint();
    let pay_before = registry.get("pay").unwrap().version_fingerprint();
    let changes = registry.changes().len();

    // Another tool, a federated one say, that types `cents` as a string.
    let refused = registry.replace(label(&runs), ReplaceOptions::revoke_old_runs("upstream"));
    let problems = policy_problems(refused.map(|_| registry.clone()));
    assert!(
        problems
            .iter()
            .any(|problem| problem.contains("large-payments")
                && problem.contains("label: String")
                && problem.contains("pay: Long")),
        "{problems:?}"
    );
    // The same tool retyping it, and dropping it.
    for (properties, expected) in [
        (json!({"cents": {"type": "string"}}), "large-payments"),
        (json!({"amount": {"type": "integer"}}), "no tool declares"),
    ] {
        let refused = registry.replace(
            counted("pay", properties, &runs),
            ReplaceOptions::revoke_old_runs("v2"),
        );
        let problems = policy_problems(refused.map(|_| registry.clone()));
        assert!(
            problems.iter().any(|problem| problem.contains(expected)),
            "{problems:?}"
        );
    }
    // Nothing changed, and the policies keep working, in a run opened before and after.
    assert_eq!(
        registry.get("label").unwrap().version_fingerprint(),
        label_before
    );
    assert_eq!(
        registry.get("pay").unwrap().version_fingerprint(),
        pay_before
    );
    assert_eq!(registry.changes().len(), changes);
    assert_eq!(pay_large(&registry), Some(ErrorKind::Denied));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "pay {{cents: 500000}} ran");

    // A replacement that keeps what the policies read goes through, and they still hold.
    registry
        .replace(
            counted(
                "pay",
                json!({"cents": {"type": "integer"}, "memo": {"type": "string"}}),
                &runs,
            ),
            ReplaceOptions::revoke_old_runs("v2 with a memo"),
        )
        .unwrap();
    assert_ne!(
        registry.get("pay").unwrap().version_fingerprint(),
        pay_before
    );
    assert_eq!(pay_large(&registry), Some(ErrorKind::Denied));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "pay {{cents: 500000}} ran");
}

#[test]
fn a_property_name_with_a_line_break_cannot_inject_into_the_schema() {
    let runs = Arc::new(AtomicUsize::new(0));
    // The description lint allows a line feed in a property name (a bidi control it refuses).
    let hostile = "x\nentity Tool = {};\n// ";
    let registry = Registry::builder()
        .tool(pay(&runs))
        .tool(counted(
            "note",
            json!({(hostile): {"type": "string"}}),
            &runs,
        ))
        .policies(CedarPolicies::parse(PAY_LIMIT).unwrap())
        .build()
        .expect("a hostile property name no policy reads changes nothing");
    let schema = registry_cedar::schema(&registry);
    assert_eq!(
        schema
            .lines()
            .filter(|line| line.starts_with("entity Tool"))
            .count(),
        1,
        "{schema}"
    );
    assert!(
        schema.contains(r#"// left out of context.arguments: "x\nentity Tool = {};\n// ": "#),
        "{schema}"
    );
    assert_eq!(pay_large(&registry), Some(ErrorKind::Denied));
}

#[test]
fn concurrent_reloads_each_get_their_own_generation() {
    let runs = Arc::new(AtomicUsize::new(0));
    let policies = CedarPolicies::parse(PAY_LIMIT).unwrap();
    let registry = Registry::builder()
        .tool(pay(&runs))
        .policies(policies.clone())
        .build()
        .unwrap();
    const THREADS: u64 = 8;
    const EACH: u64 = 25;
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                for _ in 0..EACH {
                    policies.reload(PAY_LIMIT).unwrap();
                }
            });
        }
    });
    // Each reload read the generation, added one and swapped under one lock: none was lost.
    assert_eq!(policies.generation(), THREADS * EACH);
    assert_eq!(pay_large(&registry), Some(ErrorKind::Denied));
}

#[test]
fn a_set_given_as_an_access_rule_or_a_call_policy_fails_the_build() {
    let runs = Arc::new(AtomicUsize::new(0));
    let policies = CedarPolicies::parse(PAY_LIMIT).unwrap();
    let as_rule = Registry::builder()
        .tool(pay(&runs))
        .access_rule(policies.clone())
        .build();
    let as_policy = Registry::builder()
        .tool(pay(&runs))
        .call_policy(policies.clone())
        .build();
    for (built, method) in [(as_rule, "access_rule"), (as_policy, "call_policy")] {
        let problems = policy_problems(built);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains(method) && problems[0].contains("RegistryBuilder::policies"),
            "{problems:?}"
        );
    }
    // Given with `policies`, the same handle builds and decides.
    let registry = Registry::builder()
        .tool(pay(&runs))
        .policies(policies)
        .build()
        .unwrap();
    assert_eq!(pay_large(&registry), Some(ErrorKind::Denied));
}

#[test]
fn policies_on_one_line_get_ids_of_their_own() {
    let text = "permit(principal, action, resource); forbid(principal, action == Action::\"call\", resource == Tool::\"pay\") when { context.arguments has cents && context.arguments.cents > 100000 };\n@id(\"named\") permit(principal, action, resource == Tool::\"pay\");\nforbid(principal, action, resource) when { principal.tenant == \"blocked\" };";
    let policies = CedarPolicies::parse(text).unwrap();
    assert_eq!(
        policies.ids(),
        ["line 1:1", "line 1:38", "line 3", "named"],
        "ids are the line, and the column where a line holds two"
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = Registry::builder()
        .tool(pay(&runs))
        .policies(policies)
        .build()
        .unwrap();
    let run = registry.open_run("r", &Subject::new("acme"));
    let large = run.call_blocking(ToolCall::new("1", "pay", json!({"cents": 500000})));
    assert_eq!(large.error_kind(), Some(ErrorKind::Denied));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
