//! A table of policies in the style of Cedar's own examples (the cedar-examples repository's
//! `agent_governance` and `tags_n_roles` use cases, and the role- and attribute-based patterns
//! of its tutorials), written in this crate's vocabulary: each policy, and the calls it
//! allows and refuses. Each set stands alone, so Cedar's default (no permit, no call) shows too.

use registry_cedar::{AttributeType, CedarPolicies};
use registry_core::call::Caller;
use registry_core::{DynamicTool, Registry, Subject, ToolCall};
use serde_json::{Value, json};

fn tools() -> Vec<DynamicTool> {
    let ok = |_: &registry_core::ToolContext, args: Value| Ok::<_, String>(args);
    let strings = |names: &[&str]| {
        let properties: serde_json::Map<String, Value> = names
            .iter()
            .map(|name| ((*name).to_owned(), json!({"type": "string"})))
            .collect();
        json!({"type": "object", "properties": properties, "required": names})
    };
    vec![
        DynamicTool::new("read_file", "Read a file.")
            .scopes(["agent"])
            .read_only()
            .parameters(strings(&["path"]))
            .handler(ok),
        DynamicTool::new("grep", "Search files.")
            .scopes(["agent"])
            .read_only()
            .parameters(strings(&["pattern"]))
            .handler(ok),
        DynamicTool::new("write_file", "Write a file.")
            .scopes(["agent"])
            .parameters(strings(&["path", "text"]))
            .handler(ok),
        DynamicTool::new("exec", "Run a command.")
            .scopes(["agent"])
            .destructive()
            .parameters(strings(&["command", "cwd"]))
            .handler(ok),
    ]
}

/// An agent at `ring` (lower is more trusted) with `trust` (a percentage), and extra scopes.
fn agent(ring: i64, trust: i64, roles: &[&str]) -> Subject {
    Subject::new("acme")
        .with_scopes(["agent"].iter().chain(roles).copied())
        .with_agent("coder")
        .with_attribute("ring", ring)
        .with_attribute("trust", trust)
}

/// One row: who calls, which tool, with what, and whether it runs.
struct Row {
    subject: Subject,
    tool: &'static str,
    arguments: Value,
    caller: Caller,
    runs: bool,
}

fn row(subject: &Subject, tool: &'static str, arguments: Value, runs: bool) -> Row {
    Row {
        subject: subject.clone(),
        tool,
        arguments,
        caller: Caller::Model,
        runs,
    }
}

/// Builds a registry with `policies` alone and checks every row.
fn check(name: &str, policies: &str, rows: Vec<Row>) {
    let policies = CedarPolicies::parse(policies)
        .unwrap_or_else(|error| panic!("{name}: {error}"))
        .with_subject_attribute("ring", AttributeType::Long)
        .with_subject_attribute("trust", AttributeType::Long);
    let registry = tools()
        .into_iter()
        .fold(Registry::builder(), |builder, tool| builder.tool(tool))
        .policies(policies)
        .build()
        .unwrap_or_else(|error| panic!("{name}: {error}"));
    for (at, row) in rows.into_iter().enumerate() {
        let run = registry.open_run("r", &row.subject);
        let observation = run.call_blocking(
            ToolCall::new("c", row.tool, row.arguments.clone()).with_caller(row.caller),
        );
        assert_eq!(
            !observation.is_error(),
            row.runs,
            "{name}, row {at}: {} {} from {:?}: {observation:?}",
            row.tool,
            row.arguments,
            row.caller
        );
    }
}

const PERMIT_ALL: &str = "@id(\"everyone\") permit(principal, action, resource);\n";

#[test]
fn read_only_tools_for_agents_at_ring_one_or_more_trusted() {
    // agent_governance's allow-metadata-tool-ring-1: the named read-only tools, from ring 1.
    let policy = r#"
        @id("read-only-tools") permit(principal, action, resource)
        when { principal has ring && principal.ring <= 1
               && (resource == Tool::"read_file" || resource == Tool::"grep") };
    "#;
    let trusted = agent(1, 50, &[]);
    let outer = agent(2, 50, &[]);
    check(
        "read-only-tools",
        policy,
        vec![
            row(&trusted, "read_file", json!({"path": "/workspace/a"}), true),
            row(&trusted, "grep", json!({"pattern": "fn main"}), true),
            // Another tool: no permit, so Cedar's default denies (and hides it).
            row(
                &trusted,
                "write_file",
                json!({"path": "/w/a", "text": ""}),
                false,
            ),
            row(&outer, "read_file", json!({"path": "/workspace/a"}), false),
            // A subject without the attribute: `has` is false.
            row(
                &Subject::new("acme").with_scopes(["agent"]),
                "grep",
                json!({"pattern": "x"}),
                false,
            ),
        ],
    );
}

#[test]
fn writes_only_inside_the_workspace() {
    // agent_governance's allow-workspace-read, for writes: a path pattern on the arguments.
    // A permit that reads the arguments is for `call` alone (`list` has none: the strict
    // validator refuses it), so listing the tool is a permit of its own.
    let policy = r#"
        @id("reads") permit(principal, action, resource) when { resource.read_only };
        @id("list-writes") permit(principal, action == Action::"list", resource == Tool::"write_file");
        @id("workspace-writes") permit(principal, action == Action::"call", resource == Tool::"write_file")
        when { principal has ring && principal.ring <= 2
               && context.arguments has path && context.arguments.path like "/workspace/*" };
    "#;
    let agent = agent(2, 50, &[]);
    let write = |path: &str| json!({"path": path, "text": "hello"});
    check(
        "workspace-writes",
        policy,
        vec![
            row(&agent, "write_file", write("/workspace/src/main.rs"), true),
            row(&agent, "write_file", write("/etc/passwd"), false),
            row(&agent, "write_file", write("/workspace"), false),
            row(&agent, "write_file", write("/workspacex/a"), false),
            row(&agent, "read_file", json!({"path": "/etc/passwd"}), true),
        ],
    );
}

#[test]
fn credential_files_are_never_read() {
    // agent_governance's deny-credential-files, with a reason the model is given.
    let policy = format!(
        "{PERMIT_ALL}{}",
        r#"
        @id("credential-files") @reason("credential files are off limits")
        forbid(principal, action == Action::"call", resource == Tool::"read_file")
        when { context.arguments has path &&
               (context.arguments.path like "*/.ssh/*" || context.arguments.path like "*/.aws/credentials"
                || context.arguments.path like "*/.kube/config") };
    "#
    );
    let agent = agent(0, 90, &[]);
    let read = |path: &str| json!({"path": path});
    check(
        "credential-files",
        &policy,
        vec![
            row(&agent, "read_file", read("/home/me/.ssh/id_ed25519"), false),
            row(
                &agent,
                "read_file",
                read("/home/me/.aws/credentials"),
                false,
            ),
            row(&agent, "read_file", read("/root/.kube/config"), false),
            row(&agent, "read_file", read("/home/me/.aws/config"), true),
            row(&agent, "read_file", read("/workspace/ssh.md"), true),
            // Another tool is not concerned.
            row(&agent, "grep", json!({"pattern": ".ssh/"}), true),
        ],
    );
    // The reason reaches the model.
    let registry = tools()
        .into_iter()
        .fold(Registry::builder(), |builder, tool| builder.tool(tool))
        .policies(
            CedarPolicies::parse(&policy)
                .unwrap()
                .with_subject_attribute("ring", AttributeType::Long)
                .with_subject_attribute("trust", AttributeType::Long),
        )
        .build()
        .unwrap();
    let observation = registry.open_run("r", &agent).call_blocking(ToolCall::new(
        "c",
        "read_file",
        read("/x/.ssh/config"),
    ));
    assert!(
        observation.error_text().unwrap().contains("off limits"),
        "{observation:?}"
    );
}

#[test]
fn commands_need_the_inner_ring_trust_and_the_workspace() {
    // agent_governance's require-trust-for-exec (trust as a percentage: this crate builds
    // Cedar without the decimal extension), and no exec from the model's own code.
    let policy = r#"
        @id("list-exec") permit(principal, action == Action::"list", resource == Tool::"exec");
        @id("exec") permit(principal, action == Action::"call", resource == Tool::"exec")
        when { principal has ring && principal.ring <= 1 && principal has trust && principal.trust > 70
               && context.arguments has cwd && context.arguments.cwd like "/workspace/*" };
        @id("no-exec-from-code") forbid(principal, action == Action::"call", resource == Tool::"exec")
        when { context.caller == "code" };
    "#;
    let run = |cwd: &str| json!({"command": "cargo test", "cwd": cwd});
    let trusted = agent(1, 71, &[]);
    let mut from_code = row(&trusted, "exec", run("/workspace/app"), false);
    from_code.caller = Caller::Code;
    check(
        "exec",
        policy,
        vec![
            row(&trusted, "exec", run("/workspace/app"), true),
            row(&trusted, "exec", run("/tmp"), false),
            row(&agent(1, 70, &[]), "exec", run("/workspace/app"), false),
            row(&agent(2, 99, &[]), "exec", run("/workspace/app"), false),
            from_code,
        ],
    );
}

#[test]
fn roles_grant_tools_by_their_hints() {
    // tags_n_roles and the role-based pattern: a role (here a scope) grants a class of tools,
    // and a forbid narrows one role.
    let policy = r#"
        @id("role-reader") permit(principal, action, resource)
        when { principal.scopes.contains("role-reader") && resource.read_only };
        @id("role-maintainer") permit(principal, action, resource)
        when { principal.scopes.contains("role-maintainer") && !resource.destructive };
        @id("role-operator") permit(principal, action, resource)
        when { principal.scopes.contains("role-operator") };
        @id("operators-not-on-the-outer-ring") forbid(principal, action, resource)
        when { resource.destructive && principal has ring && principal.ring >= 3 };
    "#;
    let reader = agent(1, 50, &["role-reader"]);
    let maintainer = agent(1, 50, &["role-maintainer"]);
    let operator = agent(1, 50, &["role-operator"]);
    let outer_operator = agent(3, 50, &["role-operator"]);
    let exec = json!({"command": "ls", "cwd": "/"});
    let write = json!({"path": "/a", "text": ""});
    check(
        "roles",
        policy,
        vec![
            row(&reader, "grep", json!({"pattern": "x"}), true),
            row(&reader, "write_file", write.clone(), false),
            row(&maintainer, "write_file", write.clone(), true),
            row(&maintainer, "exec", exec.clone(), false),
            row(&operator, "exec", exec.clone(), true),
            row(&outer_operator, "exec", exec, false),
            row(&outer_operator, "write_file", write, true),
        ],
    );
}

#[test]
fn a_rule_reading_the_arguments_for_every_action_fails_the_build_once() {
    // `list` has no arguments: the strict validator refuses the policy, and the build names
    // it, once (Cedar reports it for each action it applies to).
    let policies = CedarPolicies::parse(
        r#"@id("writes") permit(principal, action, resource == Tool::"write_file")
           when { context.arguments has path && context.arguments.path like "/workspace/*" };"#,
    )
    .unwrap();
    let error = tools()
        .into_iter()
        .fold(Registry::builder(), |builder, tool| builder.tool(tool))
        .policies(policies)
        .build()
        .unwrap_err()
        .to_string();
    assert_eq!(error.matches("policy writes:").count(), 1, "{error}");
    assert!(error.contains("`arguments`"), "{error}");
}
