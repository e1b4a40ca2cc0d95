//! Policies compose: every call policy and every access policy given applies, at the
//! registry's level and the run's, and the stricter decision wins whatever the order. A
//! second policy never silently replaces the first.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use registry_core::{
    DynamicTool, ErrorKind, Registry, RegistryBuilder, Subject, Tool, ToolCall,
    access::{HiddenReason, Visibility},
    gate::{CallRequest, Decision},
};
use serde_json::json;

/// Where a policy is given.
#[derive(Debug, Clone, Copy)]
enum Level {
    Registry,
    Run,
}

fn decision(name: &str) -> Decision {
    match name {
        "allow" => Decision::Allow,
        "deny" => Decision::Deny(format!("policy says {name}")),
        _ => Decision::RequireApproval(format!("policy says {name}")),
    }
}

/// What `first` then `second`, given at those levels, make of one call; and how often the
/// tool ran.
fn outcome(first: (&str, Level), second: (&str, Level)) -> (Option<ErrorKind>, usize) {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let tool = DynamicTool::new("restart", "Restart the service.")
        .scopes(["ops:write"])
        .handler(move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!("restarted"))
        });
    let mut builder = Registry::builder().tool(tool);
    let mut on_run = Vec::new();
    for (name, level) in [first, second] {
        let answer = decision(name);
        let policy = move |_: &CallRequest<'_>| answer.clone();
        match level {
            Level::Registry => builder = builder.call_policy(policy),
            Level::Run => on_run.push(policy),
        }
    }
    let registry = builder.build().unwrap();
    let mut run = registry.open_run("run-1", &Subject::new("acme").with_scopes(["ops:write"]));
    for policy in on_run {
        run = run.with_call_policy(policy);
    }
    let observation = run.call_blocking(ToolCall::new("c1", "restart", json!({})));
    (observation.error_kind(), ran.load(Ordering::SeqCst))
}

#[test]
fn the_stricter_call_policy_wins_in_any_order_and_at_any_level() {
    use Level::{Registry as Reg, Run};
    let levels = [(Reg, Reg), (Run, Run), (Reg, Run), (Run, Reg)];
    // (first, second, expected); each pair is also tried the other way round.
    let table = [
        ("allow", "allow", None),
        ("deny", "allow", Some(ErrorKind::Denied)),
        ("approval", "allow", Some(ErrorKind::ApprovalRequired)),
        ("deny", "approval", Some(ErrorKind::Denied)),
        ("deny", "deny", Some(ErrorKind::Denied)),
        ("approval", "approval", Some(ErrorKind::ApprovalRequired)),
    ];
    for (a, b, expected) in table {
        for (first, second) in [(a, b), (b, a)] {
            for (l1, l2) in levels {
                let (kind, ran) = outcome((first, l1), (second, l2));
                assert_eq!(kind, expected, "{first} at {l1:?}, then {second} at {l2:?}");
                let should_run = usize::from(expected.is_none());
                assert_eq!(
                    ran, should_run,
                    "{first} at {l1:?}, then {second} at {l2:?}"
                );
            }
        }
    }
}

#[test]
fn a_denial_names_its_reason_whichever_policy_came_first() {
    for deny_first in [true, false] {
        let mut builder: RegistryBuilder = Registry::builder().tool(
            DynamicTool::new("restart", "Restart the service.")
                .scopes(["ops:write"])
                .handler(|_, _| Ok::<_, String>(json!("restarted"))),
        );
        let allow = |_: &CallRequest<'_>| Decision::Allow;
        let deny = |_: &CallRequest<'_>| Decision::Deny("change freeze".into());
        builder = if deny_first {
            builder.call_policy(deny).call_policy(allow)
        } else {
            builder.call_policy(allow).call_policy(deny)
        };
        let run = builder
            .build()
            .unwrap()
            .open_run("run-1", &Subject::new("acme").with_scopes(["ops:write"]));
        let answer = run.call_blocking(ToolCall::new("c1", "restart", json!({})));
        assert_eq!(answer.error_kind(), Some(ErrorKind::Denied));
        assert!(
            answer.error_text().unwrap().contains("change freeze"),
            "{answer:?}"
        );
    }
}

/// An access policy, boxed.
type Access = Box<dyn Fn(&Subject, &Tool) -> Visibility + Send + Sync>;

fn registry_with_access(policies: Vec<Access>) -> Registry {
    let mut builder = Registry::builder()
        .tool(
            DynamicTool::new("restart", "Restart the service.")
                .scopes(["ops:write"])
                .handler(|_, _| Ok::<_, String>(json!("restarted"))),
        )
        .tool(
            DynamicTool::new("status", "Read the service status.")
                .scopes(["ops:read"])
                .read_only()
                .handler(|_, _| Ok::<_, String>(json!("up"))),
        );
    for policy in policies {
        builder = builder.access_rule(move |subject: &Subject, tool: &Tool| policy(subject, tool));
    }
    builder.build().unwrap()
}

fn subject() -> Subject {
    Subject::new("acme").with_scopes(["ops:write", "ops:read"])
}

#[test]
fn every_access_policy_applies_and_hidden_wins_in_any_order() {
    let hides_restart = || -> Access {
        Box::new(|_, tool| {
            if tool.name() == "restart" {
                Visibility::Hidden("no restarts today".into())
            } else {
                Visibility::Visible
            }
        })
    };
    let hides_status = || -> Access {
        Box::new(|_, tool| {
            if tool.name() == "status" {
                Visibility::Hidden("status is for operators".into())
            } else {
                Visibility::Visible
            }
        })
    };
    let allows = || -> Access { Box::new(|_, _| Visibility::Visible) };
    // One that hides and one that allows: hidden, whichever came first.
    for policies in [
        vec![hides_restart(), allows()],
        vec![allows(), hides_restart()],
    ] {
        let run = registry_with_access(policies).open_run("run-1", &subject());
        assert_eq!(run.allowed().names().collect::<Vec<_>>(), ["status"]);
        let call = run.call_blocking(ToolCall::new("c1", "restart", json!({})));
        assert_eq!(call.error_kind(), Some(ErrorKind::NotAllowed));
        let hidden = &run.explain().hidden;
        assert_eq!(hidden.len(), 1);
        assert_eq!(
            hidden[0].reasons,
            [HiddenReason::HiddenByRule {
                reason: "no restarts today".into()
            }]
        );
    }
    // Two that hide different tools: both are hidden, neither policy replaced the other.
    for policies in [
        vec![hides_restart(), hides_status()],
        vec![hides_status(), hides_restart()],
    ] {
        let run = registry_with_access(policies).open_run("run-1", &subject());
        assert!(run.allowed().is_empty(), "{:?}", run.allowed());
        assert_eq!(run.explain().hidden.len(), 2);
    }
}

#[test]
fn an_access_policy_that_panics_hides_and_the_others_still_apply() {
    let panics: Access = Box::new(|_, tool| {
        if tool.name() == "status" {
            panic!("policy bug")
        }
        Visibility::Visible
    });
    let hides_restart: Access = Box::new(|_, tool| {
        if tool.name() == "restart" {
            Visibility::Hidden("no restarts today".into())
        } else {
            Visibility::Visible
        }
    });
    let run = registry_with_access(vec![panics, hides_restart]).open_run("run-1", &subject());
    assert!(run.allowed().is_empty(), "{:?}", run.allowed());
    let explained = run.explain();
    let status = explained
        .hidden
        .iter()
        .find(|hidden| hidden.name == "status")
        .unwrap();
    assert!(
        matches!(&status.reasons[..], [HiddenReason::HiddenByRule { reason }] if reason.contains("policy bug")),
        "{status:?}"
    );
}
