//! A subject's decisions are specialised to it (Cedar's partial evaluation) and kept: this
//! checks them against Cedar deciding each whole request the plain way, from entities and a
//! context parsed from JSON against the registry's schema (another path to the same answer),
//! over every subject, tool, argument and caller of a table.

use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Decision, Entities, EntityUid, PolicySet, Request, Schema,
};
use registry_cedar::CedarPolicies;
use registry_core::call::Caller;
use registry_core::{DynamicTool, Registry, Subject, ToolCall, access::Access};
use serde_json::{Value, json};

fn tools() -> Vec<DynamicTool> {
    let ok = |_: &registry_core::ToolContext, args: Value| Ok::<_, String>(args);
    vec![
        DynamicTool::new("ledger", "Read a ledger.")
            .scopes(["use"])
            .read_only()
            .attribute("data_domain", ["finance", "ops"])
            .parameters(json!({"type": "object", "properties": {"name": {"type": "string"}}}))
            .handler(ok),
        DynamicTool::new("refund", "Refund an order.")
            .scopes(["use"])
            .parameters(json!({
                "type": "object",
                "properties": {
                    "cents": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["cents"],
            }))
            .handler(ok),
        DynamicTool::new("deploy", "Deploy a service.")
            .scopes(["use"])
            .destructive()
            .idempotent()
            .parameters(json!({
                "type": "object",
                "properties": {"env": {"type": "string"}, "dry_run": {"type": "boolean"}},
                "required": ["env"],
            }))
            .handler(ok),
        DynamicTool::new("clock", "Read the time.")
            .scopes(["use"])
            .read_only()
            .open_world()
            .handler(ok),
    ]
}

/// Policies on the principal alone, the tool alone, the arguments alone, and mixed, with
/// scopes, `unless`, `has` and sets: what partial evaluation settles early and what it leaves.
const POLICIES: &str = r#"
@id("list-read-only") permit(principal, action == Action::"list", resource)
when { resource.read_only || principal.scopes.contains("admin") };
@id("list-domain") permit(principal, action == Action::"list", resource)
when { principal has data_domain && resource has data_domain && resource.data_domain.contains(principal.data_domain) };
@id("list-bob") permit(principal == Principal::"bob", action == Action::"list", resource);
@id("call-acme") permit(principal, action == Action::"call", resource) when { principal.tenant == "acme" };
@id("call-small-refunds") permit(principal, action == Action::"call", resource == Tool::"refund")
when { context.arguments has cents && context.arguments.cents < 500 };
@id("big-refunds") forbid(principal, action == Action::"call", resource == Tool::"refund")
when { context.arguments has cents && context.arguments.cents > 100000 };
@id("read-only-runs") forbid(principal, action, resource)
when { principal.access == "read_only" && resource.destructive };
@id("code-reads-only") forbid(principal, action == Action::"call", resource)
unless { context.caller == "model" || resource.read_only };
@id("prod") forbid(principal, action == Action::"call", resource == Tool::"deploy")
when { context.arguments has env && context.arguments.env == "production" && !principal.scopes.contains("prod") && !(context.arguments has dry_run && context.arguments.dry_run) };
@id("blocked-tags") forbid(principal, action == Action::"call", resource)
when { context.arguments has tags && context.arguments.tags.contains("blocked") && principal.tenant != "acme" };
@id("open-world-agents") forbid(principal, action, resource)
when { resource.open_world && principal has agent && principal.agent == "crawler" };
"#;

fn subjects() -> Vec<Subject> {
    let mut subjects = Vec::new();
    for tenant in ["acme", "globex"] {
        for principal in [None, Some("alice"), Some("bob")] {
            for extra in [&[][..], &["admin"][..], &["prod", "admin"][..]] {
                for domain in [None, Some("finance"), Some("hr")] {
                    let mut subject =
                        Subject::new(tenant).with_scopes(["use"].iter().chain(extra).copied());
                    if let Some(principal) = principal {
                        subject = subject.with_principal(principal);
                    }
                    if let Some(domain) = domain {
                        subject = subject.with_attribute("data_domain", domain);
                    }
                    subjects.push(subject.clone());
                    if principal == Some("alice") {
                        subjects.push(subject.clone().with_access(Access::ReadOnly));
                        subjects.push(subject.with_agent("crawler"));
                    }
                }
            }
        }
    }
    subjects
}

fn arguments(tool: &str) -> Vec<Value> {
    match tool {
        "ledger" => vec![json!({}), json!({"name": "eu"})],
        "refund" => vec![
            json!({"cents": 1}),
            json!({"cents": 499}),
            json!({"cents": 500}),
            json!({"cents": 100_001}),
            json!({"cents": 7, "tags": ["blocked"]}),
            json!({"cents": 7, "tags": ["fine", "other"]}),
        ],
        "deploy" => vec![
            json!({"env": "staging"}),
            json!({"env": "production"}),
            json!({"env": "production", "dry_run": true}),
            json!({"env": "production", "dry_run": false}),
        ],
        _ => vec![json!({})],
    }
}

/// Cedar deciding the whole request the plain way.
struct Reference {
    schema: Schema,
    policies: PolicySet,
    authorizer: Authorizer,
}

impl Reference {
    fn entities(&self, subject: &Subject, tool: &registry_core::Tool) -> Entities {
        let mut principal = serde_json::Map::new();
        principal.insert("tenant".into(), subject.tenant().into());
        principal.insert("scopes".into(), subject.scopes().collect::<Vec<_>>().into());
        principal.insert(
            "access".into(),
            serde_json::to_value(subject.access()).unwrap(),
        );
        if let Some(agent) = subject.agent() {
            principal.insert("agent".into(), agent.into());
        }
        if let Some(registry_core::access::AttributeValue::String(domain)) =
            subject.attribute("data_domain")
        {
            principal.insert("data_domain".into(), domain.as_str().into());
        }
        let settings = tool.settings();
        let mut attributes = json!({
            "scopes": settings.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            "read_only": settings.hints.read_only,
            "destructive": settings.hints.destructive,
            "idempotent": settings.hints.idempotent,
            "open_world": settings.hints.open_world,
            "needs_approval": settings.needs_approval,
        });
        for (key, values) in &settings.attributes {
            attributes[key] = json!(values);
        }
        let id = subject.principal().unwrap_or("anonymous");
        Entities::from_json_value(
            json!([
                {"uid": {"type": "Principal", "id": id}, "attrs": principal, "parents": []},
                {"uid": {"type": "Tool", "id": tool.name()}, "attrs": attributes, "parents": []},
            ]),
            Some(&self.schema),
        )
        .unwrap()
    }

    fn decide(
        &self,
        subject: &Subject,
        tool: &registry_core::Tool,
        action: &str,
        context: Value,
    ) -> bool {
        let principal = EntityUid::from_str(&format!(
            "Principal::{:?}",
            subject.principal().unwrap_or("anonymous")
        ))
        .unwrap();
        let action = EntityUid::from_str(&format!("Action::{action:?}")).unwrap();
        let resource = EntityUid::from_str(&format!("Tool::{:?}", tool.name())).unwrap();
        let context = Context::from_json_value(context, Some((&self.schema, &action))).unwrap();
        let request =
            Request::new(principal, action, resource, context, Some(&self.schema)).unwrap();
        let response =
            self.authorizer
                .is_authorized(&request, &self.policies, &self.entities(subject, tool));
        assert_eq!(response.diagnostics().errors().count(), 0, "{response:?}");
        response.decision() == Decision::Allow
    }
}

/// The registry's own rules, which Cedar's `list` adds to: a read-only run sees only read-only
/// tools, and a tool declaring `data_domain` only subjects of a listed one.
fn registry_shows(subject: &Subject, tool: &registry_core::Tool) -> bool {
    let access = subject.access() == registry_core::access::Access::ReadWrite
        || tool.settings().hints.read_only;
    let domain = tool
        .settings()
        .attributes
        .get("data_domain")
        .is_none_or(|listed| {
            matches!(subject.attribute("data_domain"),
            Some(registry_core::access::AttributeValue::String(value)) if listed.contains(value))
        });
    access && domain
}

#[test]
fn partial_evaluation_decides_as_cedar_does_on_the_whole_request() {
    let policies = CedarPolicies::parse(POLICIES).unwrap();
    let registry = tools()
        .into_iter()
        .fold(Registry::builder(), |builder, tool| builder.tool(tool))
        .policies(policies)
        .build()
        .unwrap();
    let reference = Reference {
        schema: Schema::from_cedarschema_str(&registry_cedar::schema(&registry))
            .unwrap()
            .0,
        policies: PolicySet::from_str(POLICIES).unwrap(),
        authorizer: Authorizer::new(),
    };
    let (mut listed, mut hidden, mut allowed, mut refused) = (0, 0, 0, 0);
    // Twice: the second pass decides from what the first one kept.
    for pass in 0..2 {
        for subject in subjects() {
            let run = registry.open_run(format!("run-{pass}"), &subject);
            for tool in registry.iter() {
                let shown = registry_shows(&subject, &tool)
                    && reference.decide(&subject, &tool, "list", json!({}));
                assert_eq!(
                    run.allowed().permits(tool.name()),
                    shown,
                    "list {} for {subject:?}",
                    tool.name()
                );
                if !shown {
                    hidden += 1;
                    continue;
                }
                listed += 1;
                for arguments in arguments(tool.name()) {
                    for caller in [Caller::Model, Caller::Code] {
                        let context = json!({
                            "arguments": arguments,
                            "caller": caller.as_str(),
                            "run": run.id(),
                        });
                        let expected = reference.decide(&subject, &tool, "call", context);
                        let observation = run.call_blocking(
                            ToolCall::new("c", tool.name(), arguments.clone()).with_caller(caller),
                        );
                        assert_eq!(
                            !observation.is_error(),
                            expected,
                            "call {} {arguments} from {caller:?} for {subject:?}: {observation:?}",
                            tool.name()
                        );
                        if expected {
                            allowed += 1;
                        } else {
                            refused += 1;
                        }
                    }
                }
            }
        }
    }
    // The table exercises every outcome, many times.
    assert!(
        listed > 100 && hidden > 100 && allowed > 100 && refused > 100,
        "listed {listed}, hidden {hidden}, allowed {allowed}, refused {refused}"
    );
}

#[test]
fn a_tool_replaced_under_its_name_is_decided_by_its_new_settings() {
    let policies = CedarPolicies::parse(
        r#"permit(principal, action, resource);
           @id("no-destructive-calls") forbid(principal, action == Action::"call", resource) when { resource.destructive };"#,
    )
    .unwrap();
    let registry = tools()
        .into_iter()
        .fold(Registry::builder(), |builder, tool| builder.tool(tool))
        .policies(policies)
        .build()
        .unwrap();
    let subject = Subject::new("acme").with_scopes(["use"]);
    let run = registry.open_run("r", &subject);
    let refund = || ToolCall::new("c", "refund", json!({"cents": 5}));
    assert!(!run.call_blocking(refund()).is_error());
    // The same name, now destructive: the decision kept for the old settings is not reused.
    registry
        .replace(
            DynamicTool::new("refund", "Refund an order.")
                .scopes(["use"])
                .destructive()
                .parameters(json!({
                    "type": "object",
                    "properties": {"cents": {"type": "integer"}},
                    "required": ["cents"],
                }))
                .handler(|_, args| Ok::<_, String>(args)),
            registry_core::change::ReplaceOptions::revoke_old_runs("now destructive"),
        )
        .unwrap();
    let run = registry.open_run("r2", &subject);
    let observation = run.call_blocking(refund());
    assert_eq!(
        observation.error_kind(),
        Some(registry_core::ErrorKind::Denied),
        "{observation:?}"
    );
}
