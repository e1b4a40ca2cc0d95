//! Runs: what a subject is shown (scopes, tenant, access level, revocation, policy), the
//! frozen allowed set and its fingerprint, capabilities, and the operators' explanation of
//! everything hidden.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use registry_core::server::RunExt;
use registry_core::{
    DynamicTool, ErrorKind, Registry, RegistryBuilder, Subject, Tool, ToolCall,
    access::{Access, HiddenReason, Visibility},
    definition::Scope,
    tool,
};
use serde_json::json;

/// Read tenant b's and tenant c's invoices.
#[tool(scopes = "build:read", tenants = "tenant-b, tenant-c", read_only)]
fn invoices() -> Vec<String> {
    vec!["invoice-1".into()]
}

/// The declared tools of [`builder`]; `invoices` is left out of it.
mod declared {
    use registry_core::tool;

    /// Read the current build status of a project.
    #[tool(scopes = "build:read", read_only)]
    fn get_status(
        /// Project identifier, e.g. `web`.
        project: String,
    ) -> String {
        format!("{project}: green")
    }

    /// Start a deployment.
    #[tool(scopes = "deploy:write, build:read", destructive)]
    fn deploy(
        /// Project identifier.
        project: String,
    ) -> String {
        format!("{project}: deploying")
    }
}

fn scopes(list: &[&str]) -> Vec<Scope> {
    list.iter().map(|scope| scope.parse().unwrap()).collect()
}

fn echo(name: &str) -> DynamicTool {
    let reply = name.to_owned();
    // add_public: leave (callers say `public` or restrict it)
    DynamicTool::new(name, format!("The tool {name}."))
        .handler(move |_, _| Ok::<_, String>(json!(reply.clone())))
}

/// Two declared tools and four run-time ones:
///
/// | tool | scopes | tenants | read-only |
/// | --- | --- | --- | --- |
/// | `deploy` | deploy:write, build:read | all | no |
/// | `get_status` | build:read | all | yes |
/// | `list_logs` | build:read, logs:read | all | yes |
/// | `ping` | none | all | yes |
/// | `restart` | none | all | no |
/// | `tenant_b_report` | build:read | tenant-b | yes |
fn builder() -> RegistryBuilder {
    Registry::builder()
        .declared_in(["runs::declared"])
        .tool(echo("ping").public().read_only())
        .tool(echo("restart").public())
        .tool(
            echo("list_logs")
                .scopes(["build:read", "logs:read"])
                .read_only(),
        )
        .tool(
            echo("tenant_b_report")
                .scopes(["build:read"])
                .tenants(["tenant-b"])
                .read_only(),
        )
}

fn registry() -> Registry {
    builder().build().expect("the registry builds")
}

fn visible(registry: &Registry, subject: &Subject) -> Vec<String> {
    let run = registry.open_run("run", subject);
    run.allowed().names().map(str::to_owned).collect()
}

#[test]
fn a_subject_sees_the_tools_whose_scopes_it_holds_all_of() {
    let registry = registry();
    assert_eq!(
        visible(&registry, &Subject::new("tenant-a")),
        ["ping", "restart"]
    );
    assert_eq!(
        visible(
            &registry,
            &Subject::new("tenant-a").with_scopes(["build:read"])
        ),
        ["get_status", "ping", "restart"]
    );
    // `deploy` needs both of its scopes; `deploy:write` alone is not enough.
    assert_eq!(
        visible(
            &registry,
            &Subject::new("tenant-a").with_scopes(["deploy:write"])
        ),
        ["ping", "restart"]
    );
    assert_eq!(
        visible(
            &registry,
            &Subject::new("tenant-a").with_scopes(["deploy:write", "build:read", "logs:read"])
        ),
        ["deploy", "get_status", "list_logs", "ping", "restart"]
    );
    // Scopes match exactly: no prefixes, no case folding, no wildcards.
    assert_eq!(
        visible(
            &registry,
            &Subject::new("tenant-a").with_scopes([
                "build",
                "BUILD:READ",
                "build:*",
                "build:read:x"
            ])
        ),
        ["ping", "restart"]
    );
}

#[test]
fn a_tenant_restriction_admits_only_its_tenants() {
    let registry = registry();
    let all = ["build:read", "logs:read", "deploy:write"];
    assert!(
        !visible(&registry, &Subject::new("tenant-a").with_scopes(all))
            .contains(&"tenant_b_report".to_owned())
    );
    assert!(
        visible(&registry, &Subject::new("tenant-b").with_scopes(all))
            .contains(&"tenant_b_report".to_owned())
    );
    // Tenants match exactly too.
    for tenant in ["Tenant-B", "tenant-b ", "tenant", ""] {
        assert!(
            !visible(&registry, &Subject::new(tenant).with_scopes(all))
                .contains(&"tenant_b_report".to_owned()),
            "{tenant:?}"
        );
    }
    // ... and a tenant restriction still needs the scopes.
    assert_eq!(
        visible(&registry, &Subject::new("tenant-b")),
        ["ping", "restart"]
    );
    // A tool restricted to several tenants admits each of them.
    let registry = Registry::builder()
        .tool(echo("shared").tenants(["tenant-a", "tenant-c"]))
        .build()
        .unwrap();
    assert_eq!(visible(&registry, &Subject::new("tenant-a")), ["shared"]);
    assert_eq!(visible(&registry, &Subject::new("tenant-c")), ["shared"]);
    assert!(visible(&registry, &Subject::new("tenant-b")).is_empty());
}

#[test]
fn a_read_only_run_sees_only_read_only_tools_whatever_its_scopes() {
    let registry = registry();
    let all = ["build:read", "logs:read", "deploy:write"];
    let subject = Subject::new("tenant-a")
        .with_scopes(all)
        .with_access(Access::ReadOnly);
    assert_eq!(subject.access(), Access::ReadOnly);
    assert_eq!(
        visible(&registry, &subject),
        ["get_status", "list_logs", "ping"]
    );
    let subject = Subject::new("tenant-a")
        .with_scopes(all)
        .with_access(Access::ReadWrite);
    assert_eq!(
        visible(&registry, &subject),
        ["deploy", "get_status", "list_logs", "ping", "restart"]
    );

    // Calling a write tool from a read-only run is refused like any hidden tool.
    let run = registry.open_run(
        "ro",
        &Subject::new("tenant-a")
            .with_scopes(all)
            .with_access(Access::ReadOnly),
    );
    let observation = run.call_blocking(ToolCall::new("1", "restart", json!({})));
    assert_eq!(observation.error_kind(), Some(ErrorKind::NotAllowed));
}

#[test]
fn a_revoked_tool_is_hidden_from_new_runs() {
    let registry = registry();
    registry.revoke("ping", "flaky").unwrap();
    assert_eq!(visible(&registry, &Subject::new("tenant-a")), ["restart"]);
}

#[test]
fn a_policy_can_only_narrow() {
    let asked = Arc::new(Mutex::new(BTreeSet::new()));
    let narrowed = {
        let asked = asked.clone();
        builder()
            .access_rule(move |subject: &Subject, tool: &Tool| {
                asked.lock().unwrap().insert(tool.name().to_owned());
                if tool.name() == "restart" && subject.agent() != Some("operator") {
                    Visibility::Hidden("only the operator restarts".into())
                } else {
                    Visibility::Visible
                }
            })
            .build()
            .unwrap()
    };
    let subject = Subject::new("tenant-a").with_scopes(["build:read"]);
    assert_eq!(visible(&narrowed, &subject), ["get_status", "ping"]);
    // It is asked only about tools the registry's rules admit: it can never show more.
    assert_eq!(
        *asked.lock().unwrap(),
        BTreeSet::from([
            "get_status".to_owned(),
            "ping".to_owned(),
            "restart".to_owned()
        ])
    );
    assert_eq!(
        visible(&narrowed, &subject.clone().with_agent("operator")),
        ["get_status", "ping", "restart"]
    );

    // A policy that allows everything shows exactly what no policy shows.
    let open = builder()
        .access_rule(|_: &Subject, _: &Tool| Visibility::Visible)
        .build()
        .unwrap();
    for subject in [
        Subject::new("tenant-a"),
        Subject::new("tenant-b").with_scopes(["build:read"]),
        Subject::new("tenant-a")
            .with_scopes(["build:read", "deploy:write"])
            .with_access(Access::ReadOnly),
    ] {
        assert_eq!(visible(&open, &subject), visible(&registry(), &subject));
    }
}

#[test]
fn definitions_are_sorted_and_equal_the_allowed_set() {
    let registry = registry();
    let subject = Subject::new("tenant-b").with_scopes(["build:read", "logs:read", "deploy:write"]);
    let run = registry.open_run("run-1", &subject);
    let names: Vec<&str> = run.definitions().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "deploy",
            "get_status",
            "list_logs",
            "ping",
            "restart",
            "tenant_b_report"
        ]
    );
    assert_eq!(names, run.allowed().names().collect::<Vec<_>>());
    assert_eq!(run.allowed().len(), 6);
    assert_eq!(run.definitions().len(), 6);
    for definition in run.definitions() {
        assert_eq!(
            definition,
            &*registry.get(&definition.name).unwrap().definition()
        );
    }
}

#[test]
fn capabilities_are_definitions_and_hints_only() {
    let registry = registry();
    let subject = Subject::new("tenant-a").with_scopes(["build:read", "deploy:write"]);
    let run = registry.open_run("run-1", &subject);
    let capabilities: Vec<_> = run.capabilities().collect();
    assert_eq!(capabilities.len(), run.allowed().len());
    for (capability, definition) in capabilities.iter().zip(run.definitions()) {
        assert_eq!(capability.definition, definition);
        let tool = registry.get(&definition.name).unwrap();
        assert_eq!(capability.hints, tool.settings().hints);
        // What is shown is the name, the description and the schema: no executor, no source
        // location, no scopes or tenants.
        let shown = serde_json::to_value(capability.definition).unwrap();
        let keys: Vec<&String> = shown.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["description", "name", "parameters"]);
        assert!(!shown.to_string().contains("runs.rs"));
    }
    let deploy = capabilities
        .iter()
        .find(|c| c.definition.name == "deploy")
        .unwrap();
    assert!(deploy.hints.destructive);
    assert!(!deploy.hints.read_only);
    let status = capabilities
        .iter()
        .find(|c| c.definition.name == "get_status")
        .unwrap();
    assert!(status.hints.read_only);
    assert_eq!(status.definition.parameters["required"], json!(["project"]));
}

#[test]
fn permits_matches_names_exactly() {
    let registry = registry();
    let run = registry.open_run(
        "run-1",
        &Subject::new("tenant-a").with_scopes(["build:read"]),
    );
    assert!(run.allowed().permits("get_status"));
    assert!(run.allowed().permits("ping"));
    for name in [
        "Get_status",
        "GET_STATUS",
        "get_status ",
        " get_status",
        "get_st\u{0430}tus",
        "get_statu",
        "get_statuss",
        "",
        "deploy",
        "tenant_b_report",
        "list_logs",
    ] {
        assert!(!run.allowed().permits(name), "{name:?}");
    }
}

#[test]
fn the_allowed_set_records_its_source() {
    let registry = registry();
    let subject = Subject::new("tenant-a")
        .with_scopes(["build:read"])
        .with_agent("release-bot");
    let run = registry.open_run("run-42", &subject);
    assert_eq!(run.id(), "run-42");
    assert_eq!(run.subject(), &subject);
    assert_eq!(run.allowed().run_id(), "run-42");
    assert_eq!(run.allowed().subject(), &subject);
    assert_eq!(
        serde_json::to_value(run.allowed()).unwrap(),
        json!({
            "run_id": "run-42",
            "subject": {
                "tenant": "tenant-a",
                "scopes": ["build:read"],
                "access": "read_write",
                "agent": "release-bot"
            },
            "fingerprint": run.allowed().fingerprint().to_string(),
            "tools": ["get_status", "ping", "restart"]
        })
    );
    let fingerprint = run.allowed().fingerprint().to_string();
    assert_eq!(fingerprint.len(), 32);
    assert!(fingerprint.chars().all(|c| c.is_ascii_hexdigit()));

    let run = registry.open_run(
        "run-43",
        &Subject::new("tenant-b").with_access(Access::ReadOnly),
    );
    assert_eq!(
        serde_json::to_value(run.allowed()).unwrap(),
        json!({
            "run_id": "run-43",
            "subject": {"tenant": "tenant-b", "scopes": [], "access": "read_only"},
            "fingerprint": run.allowed().fingerprint().to_string(),
            "tools": ["ping"]
        })
    );
}

#[test]
fn the_fingerprint_identifies_what_was_shown() {
    let registry = registry();
    let reader = Subject::new("tenant-a").with_scopes(["build:read"]);
    let fingerprint = |registry: &Registry, subject: &Subject, run_id: &str| {
        registry
            .open_run(run_id.to_owned(), subject)
            .allowed()
            .fingerprint()
    };
    let shown = fingerprint(&registry, &reader, "run-1");

    // Two runs of the same subject: the same fingerprint, whatever the run id.
    assert_eq!(shown, fingerprint(&registry, &reader, "run-2"));
    // Another subject shown the same tools: the same fingerprint (it is of what was shown).
    assert_eq!(
        shown,
        fingerprint(
            &registry,
            &Subject::new("tenant-c")
                .with_scopes(["build:read"])
                .with_agent("x"),
            "run-3"
        )
    );
    // A registry built the same way: the same fingerprint.
    assert_eq!(
        shown,
        fingerprint(&builder().build().unwrap(), &reader, "run-4")
    );

    // Shown something else: a different fingerprint.
    let writer = Subject::new("tenant-a").with_scopes(["build:read", "deploy:write"]);
    assert_ne!(shown, fingerprint(&registry, &writer, "run-5"));
    assert_ne!(
        shown,
        fingerprint(
            &registry,
            &reader.clone().with_access(Access::ReadOnly),
            "run-6"
        )
    );
    // A definition that differs only in its schema, or only in its description: a
    // different fingerprint.
    let changed = builder()
        .replace(
            echo("ping")
                .public()
                .read_only()
                .parameters(json!({"type": "object"})),
            "a looser schema",
        )
        .build()
        .unwrap();
    assert_ne!(shown, fingerprint(&changed, &reader, "run-7"));
    let described = builder()
        .replace(
            DynamicTool::new("ping", "The tool ping, reworded.")
                .public()
                .read_only()
                .handler(|_, _| Ok::<_, String>(json!("ping"))),
            "new words",
        )
        .build()
        .unwrap();
    assert_ne!(shown, fingerprint(&described, &reader, "run-8"));
    // An empty projection has a fingerprint of its own.
    let nothing = fingerprint(
        &Registry::builder().allow_empty().build().unwrap(),
        &reader,
        "run-9",
    );
    assert_ne!(shown, nothing);
    assert_eq!(
        nothing,
        fingerprint(
            &Registry::builder().allow_empty().build().unwrap(),
            &writer,
            "run-10"
        )
    );
}

#[test]
fn the_allowed_set_is_frozen_for_the_run() {
    let registry = registry();
    let run = registry.open_run(
        "run-1",
        &Subject::new("tenant-a").with_scopes(["build:read"]),
    );
    let before: Vec<String> = run.allowed().names().map(str::to_owned).collect();
    let fingerprint = run.allowed().fingerprint();
    registry.revoke("ping", "flaky").unwrap();
    registry
        .replace(
            DynamicTool::new("get_status", "A new status tool.")
                .scopes(["build:read"])
                .read_only()
                .handler(|_, _| Ok::<_, String>(json!("new"))),
            registry_core::change::ReplaceOptions::keep_old_runs("v2"),
        )
        .unwrap();
    let after: Vec<String> = run.allowed().names().map(str::to_owned).collect();
    assert_eq!(before, after);
    assert_eq!(run.allowed().fingerprint(), fingerprint);
    assert_eq!(
        run.definitions()
            .find(|d| d.name == "get_status")
            .unwrap()
            .description,
        "Read the current build status of a project."
    );
}

#[test]
fn explain_gives_every_reason_for_every_hidden_tool() {
    let registry = builder()
        .tool(
            echo("wipe")
                .scopes(["admin", "deploy:write"])
                .tenants(["tenant-b", "tenant-c"])
                .destructive(),
        )
        .tool(echo("gone").public().read_only())
        .tool(echo("secret").public().read_only())
        .access_rule(|_: &Subject, tool: &Tool| {
            if tool.name() == "secret" {
                Visibility::Hidden("secrets are off today".into())
            } else {
                Visibility::Visible
            }
        })
        .build()
        .unwrap();
    registry.revoke("gone", "it leaked data").unwrap();
    let subject = Subject::new("tenant-a")
        .with_scopes(["build:read"])
        .with_access(Access::ReadOnly);
    let run = registry.open_run("run-1", &subject);
    assert_eq!(
        run.allowed().names().collect::<Vec<_>>(),
        ["get_status", "ping"]
    );

    let explanation = run.explain();
    assert_eq!(explanation.registered, 9);
    assert_eq!(explanation.visible, 2);
    assert!(!explanation.nothing_registered());
    assert!(explanation.malformed_scopes.is_empty());
    let hidden = |name: &str, reasons: Vec<HiddenReason>| (name.to_owned(), reasons);
    assert_eq!(
        explanation
            .hidden
            .iter()
            .map(|tool| (tool.name.clone(), tool.reasons.clone()))
            .collect::<Vec<_>>(),
        [
            hidden(
                "deploy",
                vec![
                    HiddenReason::MissingScopes {
                        missing: scopes(&["deploy:write"])
                    },
                    HiddenReason::WriteToolInReadOnlyRun,
                ]
            ),
            hidden(
                "gone",
                vec![HiddenReason::Revoked {
                    reason: "it leaked data".into()
                }]
            ),
            hidden(
                "list_logs",
                vec![HiddenReason::MissingScopes {
                    missing: scopes(&["logs:read"])
                }]
            ),
            hidden("restart", vec![HiddenReason::WriteToolInReadOnlyRun]),
            hidden(
                "secret",
                vec![HiddenReason::HiddenByRule {
                    reason: "secrets are off today".into()
                }]
            ),
            hidden(
                "tenant_b_report",
                vec![HiddenReason::OtherTenant {
                    tenants: vec!["tenant-b".into()]
                }]
            ),
            hidden(
                "wipe",
                vec![
                    HiddenReason::MissingScopes {
                        missing: scopes(&["admin", "deploy:write"])
                    },
                    HiddenReason::OtherTenant {
                        tenants: vec!["tenant-b".into(), "tenant-c".into()]
                    },
                    HiddenReason::WriteToolInReadOnlyRun,
                ]
            ),
        ]
    );
    assert_eq!(
        explanation.to_string(),
        "2 of 9 registered tools are visible; hidden:\n\
         \x20 - deploy: missing scopes deploy:write; not read-only, and the run is read-only\n\
         \x20 - gone: revoked: it leaked data\n\
         \x20 - list_logs: missing scopes logs:read\n\
         \x20 - restart: not read-only, and the run is read-only\n\
         \x20 - secret: hidden by an access rule: secrets are off today\n\
         \x20 - tenant_b_report: only for tenants tenant-b\n\
         \x20 - wipe: missing scopes admin, deploy:write; only for tenants tenant-b, tenant-c; not read-only, and the run is read-only\n"
    );
    let json = serde_json::to_value(&explanation).unwrap();
    assert_eq!(
        json["hidden"][0],
        json!({"name": "deploy", "reasons": [
            {"kind": "missing_scopes", "missing": ["deploy:write"]},
            {"kind": "write_tool_in_read_only_run"}
        ]})
    );
    assert_eq!(
        json["hidden"][1]["reasons"][0],
        json!({"kind": "revoked", "reason": "it leaked data"})
    );
}

#[test]
fn explain_tells_nothing_registered_from_everything_filtered_out() {
    let empty = Registry::builder().allow_empty().build().unwrap();
    let run = empty.open_run("run-1", &Subject::new("tenant-a"));
    assert!(run.allowed().is_empty());
    let explanation = run.explain();
    assert!(explanation.nothing_registered());
    assert_eq!(explanation.registered, 0);
    assert_eq!(explanation.visible, 0);
    assert!(explanation.hidden.is_empty());
    assert_eq!(explanation.to_string(), "no tool is registered at all");

    let registry = Registry::builder()
        .tool(echo("a_tool").scopes(["x"]))
        .tool(echo("b_tool").tenants(["tenant-b"]))
        .build()
        .unwrap();
    let run = registry.open_run("run-2", &Subject::new("tenant-a"));
    assert!(run.allowed().is_empty());
    assert_eq!(run.definitions().len(), 0);
    let explanation = run.explain();
    assert!(!explanation.nothing_registered());
    assert_eq!(explanation.registered, 2);
    assert_eq!(explanation.visible, 0);
    assert_eq!(
        explanation.to_string(),
        "all 2 registered tools were filtered out:\n\
         \x20 - a_tool: missing scopes x\n\
         \x20 - b_tool: only for tenants tenant-b\n"
    );
    // The model is told there is nothing to call.
    let observation = run.call_blocking(ToolCall::new("1", "a_tool", json!({})));
    assert_eq!(observation.error_kind(), Some(ErrorKind::NotAllowed));
    assert_eq!(
        observation.error_text().unwrap(),
        "unknown tool \"a_tool\"; this run has no tools to call"
    );
}

#[test]
fn explain_points_out_malformed_granted_scopes() {
    let registry = registry();
    let subject =
        Subject::new("tenant-a").with_scopes(["build:read", "bad scope", "a::b", "", "logs:réad"]);
    let run = registry.open_run("run-1", &subject);
    assert_eq!(
        run.allowed().names().collect::<Vec<_>>(),
        ["get_status", "ping", "restart"]
    );
    let explanation = run.explain();
    assert_eq!(
        explanation.malformed_scopes,
        ["", "a::b", "bad scope", "logs:réad"]
    );
    let text = explanation.to_string();
    assert!(
        text.contains("  ! granted scope \"bad scope\" is not a valid scope and matches nothing\n"),
        "{text}"
    );
    assert!(
        text.contains("  ! granted scope \"a::b\" is not a valid scope"),
        "{text}"
    );
}

#[test]
fn calls_are_answered_with_the_call_id_and_name_as_sent() {
    let registry = registry();
    let run = registry.open_run(
        "run-1",
        &Subject::new("tenant-a").with_scopes(["build:read"]),
    );
    let ok = run.call_blocking(ToolCall::new(
        "call_1",
        "get_status",
        json!({"project": "web"}),
    ));
    assert_eq!(ok.call_id(), "call_1");
    assert_eq!(ok.tool_name(), "get_status");
    assert!(!ok.is_error());
    assert_eq!(ok.error_kind(), None);
    assert_eq!(ok.error_text(), None);
    assert_eq!(ok.json(), &json!("web: green"));
    assert_eq!(
        serde_json::to_value(&ok).unwrap(),
        json!({"call_id": "call_1", "tool_name": "get_status", "is_error": false, "content": "web: green"})
    );
    let missing = run.call_blocking(ToolCall::new(
        "call_2",
        "get_status",
        json!({"projct": "web"}),
    ));
    assert_eq!(missing.error_kind(), Some(ErrorKind::InvalidArguments));
    assert_eq!(
        serde_json::to_value(&missing).unwrap(),
        json!({
            "call_id": "call_2",
            "tool_name": "get_status",
            "is_error": true,
            "error_kind": "invalid_arguments",
            "content": "invalid arguments for \"get_status\": missing required property \"project\"; unknown property \"projct\"; call it again with arguments that match its schema"
        })
    );
    let problems: Vec<String> = missing.problems().iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "missing required property \"project\"",
            "unknown property \"projct\""
        ]
    );
}

#[test]
fn the_unknown_tool_text_lists_at_most_fifty_names() {
    let mut builder = Registry::builder();
    for index in 0..60 {
        builder = builder.tool(echo(&format!("tool_{index:02}")).public());
    }
    let registry = builder.build().unwrap();
    let run = registry.open_run("run-1", &Subject::new("tenant-a"));
    assert_eq!(run.allowed().len(), 60);
    let observation = run.call_blocking(ToolCall::new("1", "tool_60", json!({})));
    assert_eq!(observation.error_kind(), Some(ErrorKind::UnknownTool));
    let listed: Vec<String> = (0..50).map(|index| format!("tool_{index:02}")).collect();
    assert_eq!(
        observation.error_text().unwrap(),
        format!(
            "unknown tool \"tool_60\"; the tools you can call are: {}, ...",
            listed.join(", ")
        )
    );
}

#[test]
fn projection_handles_many_distinct_scopes_and_tenants() {
    // More than 64 scopes, so that granted scopes span several words of a bit set.
    let mut builder = Registry::builder();
    for index in 0..150 {
        builder = builder.tool(
            echo(&format!("tool_{index:03}"))
                .scopes([format!("s:{index}"), format!("g:{}", index % 3)])
                .tenants([format!("tenant-{}", index % 70)]),
        );
    }
    let registry = builder.build().unwrap();
    let subject =
        Subject::new("tenant-63").with_scopes(["s:63", "s:133", "s:64", "s:127", "g:0", "g:1"]);
    // tool_063: s:63, g:0, tenant-63: visible. tool_133: s:133, g:1, tenant-63: visible.
    // tool_064 and tool_127: other tenants.
    assert_eq!(visible(&registry, &subject), ["tool_063", "tool_133"]);
    let subject = Subject::new("tenant-64").with_scopes(["s:64", "g:1"]);
    assert_eq!(visible(&registry, &subject), ["tool_064"]);
    let subject = Subject::new("tenant-64").with_scopes(["s:64", "g:0", "g:2"]);
    assert!(visible(&registry, &subject).is_empty());
    let explanation = registry.open_run("run", &subject).explain();
    let tool_064 = explanation
        .hidden
        .iter()
        .find(|hidden| hidden.name == "tool_064")
        .unwrap();
    assert_eq!(
        tool_064.reasons,
        [HiddenReason::MissingScopes {
            missing: scopes(&["g:1"])
        }]
    );
}

#[test]
fn a_declared_tenant_restriction_admits_only_its_tenants() {
    let registry = Registry::from_inventory().unwrap();
    let tool = registry.get("invoices").unwrap();
    assert_eq!(tool.settings().tenants, ["tenant-b", "tenant-c"]);
    for (tenant, sees) in [
        ("tenant-a", false),
        ("tenant-b", true),
        ("tenant-c", true),
        ("Tenant-B", false),
    ] {
        let run = registry.open_run("run", &Subject::new(tenant).with_scopes(["build:read"]));
        assert_eq!(run.allowed().permits("invoices"), sees, "{tenant}");
        let observation = run.call_blocking(ToolCall::new("1", "invoices", json!({})));
        if sees {
            assert_eq!(observation.json(), &json!(["invoice-1"]));
        } else {
            assert_eq!(observation.error_kind(), Some(ErrorKind::NotAllowed));
            let explanation = run.explain();
            let hidden = explanation
                .hidden
                .iter()
                .find(|hidden| hidden.name == "invoices")
                .unwrap();
            assert_eq!(
                hidden.reasons,
                [HiddenReason::OtherTenant {
                    tenants: vec!["tenant-b".into(), "tenant-c".into()]
                }]
            );
        }
    }
}

/// Step-up's question: is a tool hidden only for want of scopes? Not when anything else would
/// still hide it: another tenant, read-only access, a revocation, or the access policy asked
/// about the subject with the scopes added.
#[test]
fn needs_only_scopes_is_some_only_when_scopes_alone_hide_the_tool() {
    let registry = builder()
        .tool(echo("ship").scopes(["deploy:write", "build:read"]))
        .tool(
            echo("other_tenant")
                .scopes(["deploy:write"])
                .tenants(["globex"]),
        )
        .tool(echo("pulled").scopes(["deploy:write"]))
        .tool(echo("vetoed").scopes(["deploy:write"]))
        .access_rule(|subject: &Subject, tool: &Tool| {
            // Denies `vetoed` to anyone holding deploy:write: scopes would not open it.
            if tool.name() == "vetoed" && subject.has_scope("deploy:write") {
                Visibility::Hidden("not for deployers".into())
            } else {
                Visibility::Visible
            }
        })
        .build()
        .unwrap();
    registry.revoke("pulled", "incident").unwrap();
    let subject = Subject::new("acme").with_scopes(["build:read"]);
    let run = registry.open_run("run-step-up", &subject);
    let scopes = run.needs_only_scopes("ship").unwrap();
    assert_eq!(
        scopes
            .iter()
            .map(|scope| scope.as_str())
            .collect::<Vec<_>>(),
        ["deploy:write", "build:read"]
    );
    for name in [
        "other_tenant",
        "pulled",
        "vetoed",
        "get_status",
        "no_such_tool",
    ] {
        assert!(run.needs_only_scopes(name).is_none(), "{name}");
    }
    let read_only = registry.open_run("run-ro", &subject.clone().with_access(Access::ReadOnly));
    assert!(read_only.needs_only_scopes("ship").is_none());
}

#[test]
fn a_run_shows_in_debug_output_the_tools_it_was_shown_and_no_other() {
    let tool = |name: &str, scope: &str| {
        DynamicTool::new(name, "A tool.")
            .scopes([scope])
            .handler(|_, _| Ok::<_, String>(json!(null)))
    };
    let registry = Registry::builder()
        .tool(tool("shown_tool", "a:read"))
        .tool(tool("hidden_tool", "b:read"))
        .build()
        .unwrap();
    let run = registry.open_run("r1", &Subject::new("acme").with_scopes(["a:read"]));
    let debug = format!("{run:?}");
    assert!(debug.contains("shown_tool"), "{debug}");
    assert!(!debug.contains("hidden_tool"), "{debug}");
    let allowed = format!("{:?}", run.allowed());
    assert!(
        allowed.contains("shown_tool") && allowed.contains("r1"),
        "{allowed}"
    );
    assert!(!allowed.contains("hidden_tool"), "{allowed}");
}
