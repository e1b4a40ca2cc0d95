//! Cedar policies at the registry's boundary: validation against the registry, the `list` and
//! `call` decisions, `@reason` and `@approval`, failing closed, reloads.

use std::sync::{Arc, Mutex};

use registry_cedar::{AttributeType, CedarError, CedarPolicies};
use registry_core::access::Access;
use registry_core::audit::AuditEvent;
use registry_core::call::Caller;
use registry_core::{DynamicTool, ErrorKind, Registry, RegistryError, Subject, ToolCall};
use serde_json::{Value, json};

/// A small registry of an organisation with a finance and an ops team.
fn tools() -> Vec<DynamicTool> {
    let ok = |_: &registry_core::ToolContext, args: Value| Ok::<_, String>(args);
    vec![
        DynamicTool::new("ledger_balance", "Read a ledger's balance.")
            .scopes(["ledger:read"])
            .read_only()
            .attribute("data_domain", ["finance"])
            .parameters(json!({
                "type": "object",
                "properties": {"ledger": {"type": "string"}},
                "required": ["ledger"],
            }))
            .handler(ok),
        DynamicTool::new("refund", "Refund part of an order.")
            .scopes(["ledger:write"])
            .attribute("data_domain", ["finance"])
            .parameters(json!({
                "type": "object",
                "properties": {
                    "order": {"type": "string"},
                    "cents": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["order", "cents"],
            }))
            .handler(ok),
        DynamicTool::new("deploy", "Deploy a service to an environment.")
            .scopes(["deploy:write"])
            .destructive()
            .attribute("environment", ["staging", "production"])
            .parameters(json!({
                "type": "object",
                "properties": {"service": {"type": "string"}, "env": {"type": "string"}},
                "required": ["service", "env"],
            }))
            .handler(ok),
        DynamicTool::new("server_time", "Read the server's time.")
            .public()
            .read_only()
            .handler(ok),
    ]
}

fn registry(policies: &CedarPolicies) -> Result<Registry, RegistryError> {
    tools()
        .into_iter()
        .fold(Registry::builder(), |builder, tool| builder.tool(tool))
        .policies(policies.clone())
        .build()
}

/// The finance team's and the ops team's rules, in the style of Cedar's role- and
/// attribute-based examples: permits by role (a scope) and attribute, forbids with reasons.
const ORGANISATION: &str = r#"
@id("anyone-reads-time")
permit(principal, action, resource == Tool::"server_time");

@id("finance-team")
permit(principal, action, resource)
when { principal has data_domain && principal.data_domain == "finance"
       && resource has data_domain && resource.data_domain.contains("finance") };

@id("ops-team")
permit(principal, action, resource == Tool::"deploy")
when { principal.scopes.contains("deploy:write") };

@id("large-refunds") @reason("refunds over 1000.00 go through the finance desk")
forbid(principal, action == Action::"call", resource == Tool::"refund")
when { context.arguments has cents && context.arguments.cents > 100000 };

@id("production-deploys") @approval("a production deploy needs the on-call engineer")
forbid(principal, action == Action::"call", resource == Tool::"deploy")
when { context.arguments has env && context.arguments.env == "production" };

@id("no-deploys-from-code")
forbid(principal, action == Action::"call", resource)
when { resource.destructive && context.caller == "code" };

@id("read-only-runs")
forbid(principal, action, resource)
when { principal.access == "read_only" && !resource.read_only };
"#;

fn finance() -> Subject {
    Subject::new("acme")
        .with_scopes(["ledger:read", "ledger:write"])
        .with_attribute("data_domain", "finance")
}

fn ops() -> Subject {
    Subject::new("acme")
        .with_scopes(["deploy:write"])
        .with_attribute("environment", "production")
}

fn call(run: &registry_core::Run, name: &str, arguments: Value) -> Option<ErrorKind> {
    run.call_blocking(ToolCall::new("c", name, arguments))
        .error_kind()
}

#[test]
fn each_policy_allows_and_refuses_what_it_says() {
    let policies = CedarPolicies::parse(ORGANISATION).unwrap();
    let registry = registry(&policies).unwrap();

    // list: each team sees its own tools and the public one, nothing else.
    let names = |subject: &Subject| -> Vec<String> {
        registry
            .open_run("r", subject)
            .allowed()
            .names()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        names(&finance()),
        ["ledger_balance", "refund", "server_time"]
    );
    assert_eq!(names(&ops()), ["deploy", "server_time"]);
    // The finance team in a read-only run: the write tool is hidden by the registry.
    assert_eq!(
        names(&finance().with_access(Access::ReadOnly)),
        ["ledger_balance", "server_time"]
    );
    // A subject of another data domain: Cedar denies by default.
    let other = Subject::new("acme")
        .with_scopes(["ledger:read"])
        .with_attribute("data_domain", "hr");
    assert_eq!(names(&other), ["server_time"]);

    let run = registry.open_run("r", &finance());
    let refund = |cents: i64| json!({"order": "o-1", "cents": cents});
    // A table: the call, and whether it runs.
    let table: [(&str, Value, Option<ErrorKind>); 5] = [
        ("ledger_balance", json!({"ledger": "eu"}), None),
        ("refund", refund(500), None),
        ("refund", refund(100_000), None),
        ("refund", refund(100_001), Some(ErrorKind::Denied)),
        (
            "deploy",
            json!({"service": "web", "env": "staging"}),
            Some(ErrorKind::NotAllowed),
        ),
    ];
    for (tool, arguments, expected) in table {
        assert_eq!(
            call(&run, tool, arguments.clone()),
            expected,
            "{tool} {arguments}"
        );
    }
    let denied = run.call_blocking(ToolCall::new("c", "refund", refund(200_000)));
    assert!(
        denied.error_text().unwrap().contains("finance desk"),
        "{denied:?}"
    );

    let run = registry.open_run("r", &ops());
    let deploy = |env: &str| json!({"service": "web", "env": env});
    assert_eq!(call(&run, "deploy", deploy("staging")), None);
    assert_eq!(
        call(&run, "deploy", deploy("production")),
        Some(ErrorKind::ApprovalRequired)
    );
    // From code, a destructive tool is forbidden outright.
    let from_code = run
        .call_blocking(ToolCall::new("c", "deploy", deploy("staging")).with_caller(Caller::Code));
    assert_eq!(from_code.error_kind(), Some(ErrorKind::Denied));
    // Without a @reason, the model is told only that a policy denied it.
    assert!(
        from_code
            .error_text()
            .unwrap()
            .contains("a policy denied the call"),
        "{from_code:?}"
    );
}

#[test]
fn the_deciding_policies_are_audited_and_explained() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let kept = events.clone();
    let policies = CedarPolicies::parse(ORGANISATION).unwrap();
    let registry = tools()
        .into_iter()
        .fold(Registry::builder(), |builder, tool| builder.tool(tool))
        .policies(policies)
        .audit_sink(move |event: &AuditEvent| kept.lock().unwrap().push(event.clone()))
        .build()
        .unwrap();
    let run = registry.open_run("r", &finance());
    let _ = run.call_blocking(ToolCall::new(
        "c",
        "refund",
        json!({"order": "o", "cents": 500_000}),
    ));
    let events = events.lock().unwrap();
    let policies: Vec<&Vec<String>> = events
        .iter()
        .filter_map(|event| match event {
            AuditEvent::Call(call) => Some(&call.policies),
            _ => None,
        })
        .collect();
    assert_eq!(policies, [&vec!["large-refunds".to_owned()]]);
    drop(events);
    let only_time = CedarPolicies::parse(
        "@id(\"time\") permit(principal, action, resource == Tool::\"server_time\");",
    )
    .unwrap();
    let explanation = self::registry(&only_time)
        .unwrap()
        .open_run("r", &finance())
        .explain()
        .to_string();
    assert!(
        explanation.contains("no policy permits listing it"),
        "{explanation}"
    );
}

#[test]
fn a_policy_naming_what_the_registry_lacks_fails_the_build() {
    let cases = [
        (
            "@id(\"typo\") permit(principal, action, resource == Tool::\"ledger_balanse\");",
            "ledger_balanse",
        ),
        (
            "@id(\"attr\") permit(principal, action, resource) when { principal.department == \"x\" };",
            "department",
        ),
        (
            "@id(\"arg\") permit(principal, action == Action::\"call\", resource) when { context.arguments.amount > 3 };",
            "amount",
        ),
        (
            "@id(\"act\") permit(principal, action == Action::\"delete\", resource);",
            "delete",
        ),
    ];
    for (text, named) in cases {
        let policies = CedarPolicies::parse(text).unwrap();
        let error = registry(&policies).unwrap_err().to_string();
        let id = text.split('"').nth(1).unwrap();
        assert!(error.contains(named), "{named}: {error}");
        assert!(error.contains(&format!("policy {id}")), "{id}: {error}");
    }
    // Two policies with one id, and a syntax error naming its file.
    let twice = "@id(\"a\") permit(principal, action, resource);\n@id(\"a\") forbid(principal, action, resource);";
    assert!(matches!(
        CedarPolicies::parse(twice),
        Err(CedarError::Parse { message, .. }) if message.contains("\"a\"")
    ));
    let dir = std::env::temp_dir().join(format!("registry-cedar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("ops.cedar"),
        "permit(principal, action, resource)\nwhen {",
    )
    .unwrap();
    let error = CedarPolicies::from_dir(&dir).unwrap_err().to_string();
    assert!(error.starts_with("ops.cedar: "), "{error}");
    // Without @id, a policy's id is its file and line.
    std::fs::write(
        dir.join("ops.cedar"),
        "\n\npermit(principal, action, resource == Tool::\"nope\");",
    )
    .unwrap();
    let policies = CedarPolicies::from_dir(&dir).unwrap();
    assert_eq!(policies.ids(), ["ops.cedar:3"]);
    let error = registry(&policies).unwrap_err().to_string();
    assert!(
        error.contains("policy ops.cedar:3: names the tool \"nope\""),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn arguments_cedar_cannot_see_are_refused_never_let_through() {
    let policies = CedarPolicies::parse(
        r#"permit(principal, action, resource);
           forbid(principal, action == Action::"call", resource == Tool::"refund")
           when { context.arguments has cents && context.arguments.cents > 100 };"#,
    )
    .unwrap();
    let registry = registry(&policies).unwrap();
    let run = registry.open_run("r", &finance());
    // An integer past 64 bits would make `has cents` false and slip past the forbid: refused.
    let huge = run.call_blocking(ToolCall::from_json_text(
        "c",
        "refund",
        r#"{"order": "o", "cents": 18446744073709551615}"#,
    ));
    assert_eq!(huge.error_kind(), Some(ErrorKind::Denied), "{huge:?}");
    assert!(huge.error_text().unwrap().contains("cannot be shown"));
    assert_eq!(
        call(&run, "refund", json!({"order": "o", "cents": 50})),
        None
    );
    assert_eq!(
        call(
            &run,
            "refund",
            json!({"order": "o\u{0}\u{202e}", "cents": 50, "tags": ["a\nb"]})
        ),
        None
    );
}

#[test]
fn a_reload_swaps_the_set_for_the_next_call_and_a_bad_one_changes_nothing() {
    let policies = CedarPolicies::parse("permit(principal, action, resource);").unwrap();
    let registry = registry(&policies).unwrap();
    let run = registry.open_run("r", &ops());
    let deploy = json!({"service": "web", "env": "staging"});
    assert_eq!(call(&run, "deploy", deploy.clone()), None);

    // A malformed set and one naming an unknown tool are refused; the old set decides.
    assert!(matches!(
        policies.reload("permit(principal, action"),
        Err(CedarError::Parse { .. })
    ));
    assert!(matches!(
        policies.reload("forbid(principal, action, resource == Tool::\"deplyo\");"),
        Err(CedarError::Invalid(problems)) if problems[0].contains("deplyo")
    ));
    assert_eq!(policies.generation(), 0);
    assert_eq!(call(&run, "deploy", deploy.clone()), None);

    // The rug pull: the same run's next call is decided by the new set.
    policies
        .reload(
            "permit(principal, action, resource);\n@id(\"freeze\") @reason(\"deploys are frozen\")\nforbid(principal, action == Action::\"call\", resource == Tool::\"deploy\");",
        )
        .unwrap();
    assert_eq!(policies.generation(), 1);
    let frozen = run.call_blocking(ToolCall::new("c", "deploy", deploy.clone()));
    assert_eq!(frozen.error_kind(), Some(ErrorKind::Denied));
    assert!(frozen.error_text().unwrap().contains("frozen"));
    // A run opened now still lists the tool (the freeze forbids calls, not listing).
    assert!(registry.open_run("r2", &ops()).allowed().permits("deploy"));
    // And a set that forbids listing hides it from runs opened after the reload.
    policies
        .reload("permit(principal, action, resource) when { resource.read_only };")
        .unwrap();
    assert!(!registry.open_run("r3", &ops()).allowed().permits("deploy"));
}

#[test]
fn declared_subject_attributes_are_typed_and_a_mismatch_is_left_out() {
    let policies = CedarPolicies::parse(
        "permit(principal, action, resource) when { principal has clearance && principal.clearance >= 3 };",
    )
    .unwrap()
    .with_subject_attribute("clearance", AttributeType::Long);
    let registry = registry(&policies).unwrap();
    let sees = |subject: Subject| registry.open_run("r", &subject).allowed().len();
    assert_eq!(sees(Subject::new("acme").with_attribute("clearance", 3)), 1);
    assert_eq!(sees(Subject::new("acme").with_attribute("clearance", 2)), 0);
    // A string where a number is declared is left out: `has` is false.
    assert_eq!(
        sees(Subject::new("acme").with_attribute("clearance", "3")),
        0
    );
    // The schema says it.
    assert!(registry_cedar::schema(&registry).contains("\"data_domain\"?: String"));
}
