//! Revocation and replacement of tools in a built registry: their effect on runs already open
//! and on new ones, and their records.

use std::time::SystemTime;

use registry_core::server::RegistryExt;
use registry_core::{
    BuildProblem, DynamicTool, ErrorKind, Registry, RegistryError, Run, Subject, ToolCall,
    access::HiddenReason,
    change::{ChangeKind, OldRuns, ReplaceOptions},
    tool,
};
use serde_json::{Value, json};

/// Read the current build status of a project.
#[tool(scopes = "build:read", read_only)]
fn get_status(
    /// Project identifier.
    project: String,
) -> String {
    format!("{project}: green (declared)")
}

/// A version of the `lookup` tool: answers `"v{version}: {key}"`, and takes `key` as the
/// argument named `argument` (so that versions can differ in what they accept).
fn lookup(version: u32, argument: &str) -> DynamicTool {
    let name = argument.to_owned();
    DynamicTool::new("lookup", format!("Look a key up (version {version})."))
        .parameters(json!({
            "type": "object",
            "properties": {(argument): {"type": "string"}},
            "required": [argument],
            "additionalProperties": false
        }))
        .scopes(["data:read"])
        .read_only()
        .handler(move |_, args: Value| {
            Ok::<_, String>(json!(format!(
                "v{version}: {}",
                args[&name].as_str().unwrap()
            )))
        })
}

fn registry() -> Registry {
    Registry::builder()
        .declared_in(["revocation"])
        .tool(lookup(1, "key"))
        .tool(
            DynamicTool::new("ping", "Answer pong.")
                .public()
                .read_only()
                .handler(|_, _| Ok::<_, String>(json!("pong"))),
        )
        .build()
        .unwrap()
}

fn subject() -> Subject {
    Subject::new("tenant-a").with_scopes(["build:read", "data:read"])
}

fn open(registry: &Registry, id: &str) -> Run {
    registry.open_run(id.to_owned(), &subject())
}

fn call(run: &Run, name: &str, arguments: Value) -> Result<Value, (ErrorKind, String)> {
    let observation = run.call_blocking(ToolCall::new("call", name, arguments));
    match observation.error_kind() {
        None => Ok(observation.into_json()),
        Some(kind) => Err((kind, observation.error_text().unwrap().to_owned())),
    }
}

fn kind(result: Result<Value, (ErrorKind, String)>) -> Option<ErrorKind> {
    result.err().map(|(kind, _)| kind)
}

#[test]
fn a_revocation_affects_old_and_new_runs_at_once() {
    let registry = registry();
    let old = open(&registry, "old");
    assert_eq!(
        call(&old, "lookup", json!({"key": "k"})),
        Ok(json!("v1: k"))
    );

    let change = registry
        .revoke("lookup", "returns other tenants' rows")
        .unwrap();
    assert_eq!(change.kind, ChangeKind::Revoked);

    // The old run still lists it (its set is frozen), but may not call it any more.
    assert!(old.allowed().permits("lookup"));
    assert_eq!(
        call(&old, "lookup", json!({"key": "k"})),
        Err((
            ErrorKind::Revoked,
            "the tool \"lookup\" has been withdrawn and can no longer be called; continue without it"
                .into()
        ))
    );
    // Even with invalid arguments: revocation is checked first.
    assert_eq!(
        kind(call(&old, "lookup", json!(null))),
        Some(ErrorKind::Revoked)
    );
    // Other tools are untouched.
    assert_eq!(call(&old, "ping", json!({})), Ok(json!("pong")));

    // A new run does not see it, and calling it is refused like any hidden tool.
    let new = open(&registry, "new");
    assert!(!new.allowed().permits("lookup"));
    assert_eq!(
        new.allowed().names().collect::<Vec<_>>(),
        ["get_status", "ping"]
    );
    assert_eq!(
        kind(call(&new, "lookup", json!({"key": "k"}))),
        Some(ErrorKind::NotAllowed)
    );
    // The operators are told why.
    let explanation = new.explain();
    assert_eq!(explanation.hidden.len(), 1);
    assert_eq!(explanation.hidden[0].name, "lookup");
    assert_eq!(
        explanation.hidden[0].reasons,
        [HiddenReason::Revoked {
            reason: "returns other tenants' rows".into()
        }]
    );
    assert!(
        explanation
            .to_string()
            .contains("  - lookup: revoked: returns other tenants' rows\n")
    );
    // The registry still has it, revoked.
    assert!(registry.contains("lookup"));
    assert_eq!(registry.len(), 3);
}

#[test]
fn a_declared_tool_can_be_revoked_too() {
    let registry = registry();
    let old = open(&registry, "old");
    registry.revoke("get_status", "maintenance").unwrap();
    assert_eq!(
        kind(call(&old, "get_status", json!({"project": "web"}))),
        Some(ErrorKind::Revoked)
    );
    assert!(!open(&registry, "new").allowed().permits("get_status"));
}

#[test]
fn a_replacement_keeping_old_runs_serves_each_run_the_version_it_was_shown() {
    let registry = registry();
    let old = open(&registry, "old");
    let v1_definition = registry.get("lookup").unwrap().definition();

    let change = registry
        .replace(
            lookup(2, "id"),
            ReplaceOptions::keep_old_runs("ids, not keys"),
        )
        .unwrap();
    assert_eq!(change.kind, ChangeKind::Replaced(OldRuns::KeepShownVersion));
    let new = open(&registry, "new");

    // The old run calls exactly version 1, with version 1's schema.
    assert_eq!(
        call(&old, "lookup", json!({"key": "k"})),
        Ok(json!("v1: k"))
    );
    assert_eq!(
        kind(call(&old, "lookup", json!({"id": "k"}))),
        Some(ErrorKind::InvalidArguments)
    );
    assert_eq!(
        *old.definitions().find(|d| d.name == "lookup").unwrap(),
        *v1_definition
    );
    // The new run calls exactly version 2.
    assert_eq!(call(&new, "lookup", json!({"id": "k"})), Ok(json!("v2: k")));
    assert_eq!(
        kind(call(&new, "lookup", json!({"key": "k"}))),
        Some(ErrorKind::InvalidArguments)
    );
    assert_eq!(
        new.definitions()
            .find(|d| d.name == "lookup")
            .unwrap()
            .description,
        "Look a key up (version 2)."
    );
    assert_ne!(old.allowed().fingerprint(), new.allowed().fingerprint());
    assert_eq!(
        registry.get("lookup").unwrap().definition().description,
        "Look a key up (version 2)."
    );

    // A third version: each of the three runs keeps its own.
    registry
        .replace(
            lookup(3, "key"),
            ReplaceOptions::keep_old_runs("keys again"),
        )
        .unwrap();
    let newest = open(&registry, "newest");
    assert_eq!(
        call(&old, "lookup", json!({"key": "a"})),
        Ok(json!("v1: a"))
    );
    assert_eq!(call(&new, "lookup", json!({"id": "b"})), Ok(json!("v2: b")));
    assert_eq!(
        call(&newest, "lookup", json!({"key": "c"})),
        Ok(json!("v3: c"))
    );

    // A revocation then reaches every version.
    registry.revoke("lookup", "all of them").unwrap();
    for run in [&old, &new, &newest] {
        assert_eq!(
            kind(call(run, "lookup", json!({"key": "a"}))),
            Some(ErrorKind::Revoked),
            "{}",
            run.id()
        );
    }
}

#[test]
fn a_replacement_revoking_old_runs_stops_them_and_serves_new_runs() {
    let registry = registry();
    let old = open(&registry, "old");
    let change = registry
        .replace(
            lookup(2, "key"),
            ReplaceOptions::revoke_old_runs("v1 is broken"),
        )
        .unwrap();
    assert_eq!(change.kind, ChangeKind::Replaced(OldRuns::Revoke));
    let new = open(&registry, "new");

    assert_eq!(
        kind(call(&old, "lookup", json!({"key": "k"}))),
        Some(ErrorKind::Revoked)
    );
    assert_eq!(
        call(&new, "lookup", json!({"key": "k"})),
        Ok(json!("v2: k"))
    );
    assert_eq!(call(&old, "ping", json!({})), Ok(json!("pong")));

    // Keeping old runs on a later replacement does not bring version 1 back.
    let middle = open(&registry, "middle");
    registry
        .replace(lookup(3, "key"), ReplaceOptions::keep_old_runs("v3"))
        .unwrap();
    assert_eq!(
        kind(call(&old, "lookup", json!({"key": "k"}))),
        Some(ErrorKind::Revoked)
    );
    assert_eq!(
        call(&middle, "lookup", json!({"key": "k"})),
        Ok(json!("v2: k"))
    );
    // And revoking old runs on the next one stops versions 2 and 3's older runs.
    let third = open(&registry, "third");
    registry
        .replace(lookup(4, "key"), ReplaceOptions::revoke_old_runs("v4"))
        .unwrap();
    for run in [&middle, &third] {
        assert_eq!(
            kind(call(run, "lookup", json!({"key": "k"}))),
            Some(ErrorKind::Revoked),
            "{}",
            run.id()
        );
    }
    assert_eq!(
        call(&open(&registry, "fourth"), "lookup", json!({"key": "k"})),
        Ok(json!("v4: k"))
    );
}

#[test]
fn a_replacement_brings_a_revoked_tool_back_for_new_runs() {
    let registry = registry();
    let before = open(&registry, "before");
    registry.revoke("lookup", "broken").unwrap();
    let during = open(&registry, "during");
    assert!(!during.allowed().permits("lookup"));

    registry
        .replace(lookup(2, "key"), ReplaceOptions::keep_old_runs("fixed"))
        .unwrap();
    let after = open(&registry, "after");
    assert!(after.allowed().permits("lookup"));
    assert_eq!(
        call(&after, "lookup", json!({"key": "k"})),
        Ok(json!("v2: k"))
    );
    assert!(after.explain().hidden.is_empty());

    // Runs opened before keep what they had: the revoked version, or nothing.
    assert_eq!(
        kind(call(&before, "lookup", json!({"key": "k"}))),
        Some(ErrorKind::Revoked)
    );
    assert_eq!(
        kind(call(&during, "lookup", json!({"key": "k"}))),
        Some(ErrorKind::NotAllowed)
    );
}

#[test]
fn every_change_is_recorded() {
    let registry = registry();
    assert!(registry.changes().is_empty());
    let v1 = registry.get("lookup").unwrap().fingerprint();
    let version_1 = registry.get("lookup").unwrap().version_fingerprint();
    let started = SystemTime::now();

    let revoked = registry.revoke("lookup", "first reason").unwrap();
    registry
        .replace(
            lookup(2, "key"),
            ReplaceOptions::keep_old_runs("second reason"),
        )
        .unwrap();
    let v2 = registry.get("lookup").unwrap().fingerprint();
    let version_2 = registry.get("lookup").unwrap().version_fingerprint();
    assert_ne!(v1, v2);
    registry
        .replace(
            lookup(3, "key"),
            ReplaceOptions::revoke_old_runs("third reason"),
        )
        .unwrap();
    let status = registry.get("get_status").unwrap().fingerprint();
    registry.revoke("get_status", "fourth reason").unwrap();
    let ended = SystemTime::now();

    let changes = registry.changes();
    let summary: Vec<_> = changes
        .iter()
        .map(|c| {
            (
                c.kind,
                c.reason.as_str(),
                c.name.as_str(),
                c.old_fingerprint,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (ChangeKind::Revoked, "first reason", "lookup", v1),
            (
                ChangeKind::Replaced(OldRuns::KeepShownVersion),
                "second reason",
                "lookup",
                v1
            ),
            (
                ChangeKind::Replaced(OldRuns::Revoke),
                "third reason",
                "lookup",
                v2
            ),
            (ChangeKind::Revoked, "fourth reason", "get_status", status),
        ]
    );
    assert_eq!(changes[0], revoked);
    for pair in changes.windows(2) {
        assert!(pair[0].at <= pair[1].at);
    }
    assert!(changes[0].at >= started && changes[3].at <= ended);

    let json = serde_json::to_value(&changes[1]).unwrap();
    let at = json["at_unix_ms"].as_u64().unwrap();
    let expected_ms = changes[1]
        .at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert_eq!(at, expected_ms);
    assert_eq!(
        json,
        json!({
            "at_unix_ms": at,
            "name": "lookup",
            "kind": {"replaced": "keep_shown_version"},
            "reason": "second reason",
            "old_fingerprint": v1.to_string(),
            "old_version": version_1.to_string(),
            "new_version": version_2.to_string()
        })
    );
    assert_eq!(
        serde_json::to_value(&changes[0]).unwrap()["kind"],
        "revoked"
    );
}

#[test]
fn an_invalid_replacement_is_an_error_and_changes_nothing() {
    let registry = registry();
    let old = open(&registry, "old");
    let fingerprint = registry.get("lookup").unwrap().fingerprint();

    let invalid = [
        DynamicTool::new("lookup", "No handler.").public(),
        DynamicTool::new("lookup", "A schema that is not an object.")
            .public()
            .parameters(json!({"type": "array"}))
            .handler(|_, _| Ok::<_, String>(json!("x"))),
        DynamicTool::new("lookup", "")
            .scopes(["bad scope"])
            .handler(|_, _| Ok::<_, String>(json!("x"))),
        DynamicTool::new("lookup", "Read-only and destructive.")
            .public()
            .read_only()
            .destructive()
            .handler(|_, _| Ok::<_, String>(json!("x"))),
    ];
    for (index, tool) in invalid.into_iter().enumerate() {
        let policy = if index % 2 == 0 {
            ReplaceOptions::revoke_old_runs("bad")
        } else {
            ReplaceOptions::keep_old_runs("bad")
        };
        let error = registry.replace(tool, policy).unwrap_err();
        assert!(
            matches!(error, RegistryError::Build(ref problems) if !problems.is_empty()),
            "{error:?}"
        );
    }
    let error = registry
        .replace(
            DynamicTool::new("lookup", "")
                .scopes(["bad scope"])
                .handler(|_, _| Ok::<_, String>(json!("x"))),
            ReplaceOptions::keep_old_runs("bad"),
        )
        .unwrap_err();
    assert_eq!(error.problems().len(), 2, "{error}");

    // Replacing a name that is not registered: nothing to replace.
    let error = registry
        .replace(
            DynamicTool::new("lookup_two", "Not registered.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("x"))),
            ReplaceOptions::keep_old_runs("new"),
        )
        .unwrap_err();
    assert!(
        matches!(error.problems(), [BuildProblem::NothingToReplace { name, .. }] if name == "lookup_two"),
        "{error:?}"
    );

    assert!(registry.changes().is_empty());
    assert_eq!(registry.get("lookup").unwrap().fingerprint(), fingerprint);
    assert!(!registry.contains("lookup_two"));
    assert_eq!(
        call(&old, "lookup", json!({"key": "k"})),
        Ok(json!("v1: k"))
    );
    assert_eq!(
        call(&open(&registry, "new"), "lookup", json!({"key": "k"})),
        Ok(json!("v1: k"))
    );
}

#[test]
fn revoking_an_unknown_name_is_an_error() {
    let registry = registry();
    for name in ["no_such_tool", "Lookup", "lookup ", ""] {
        assert_eq!(
            registry.revoke(name, "why not"),
            Err(RegistryError::UnknownTool { name: name.into() })
        );
    }
    assert!(registry.changes().is_empty());
    assert_eq!(
        call(&open(&registry, "run"), "lookup", json!({"key": "k"})),
        Ok(json!("v1: k"))
    );
}

#[test]
fn changes_are_shared_by_clones_of_the_registry() {
    let registry = registry();
    let clone = registry.clone();
    let old = open(&registry, "old");
    clone.revoke("ping", "from the clone").unwrap();
    assert_eq!(
        kind(call(&old, "ping", json!({}))),
        Some(ErrorKind::Revoked)
    );
    assert_eq!(registry.changes(), clone.changes());
    assert_eq!(registry.changes().len(), 1);
}

/// `explain` names the change that revoked the version a run was shown, not a later one.
#[test]
fn explain_gives_the_reason_of_the_revocation_of_the_version_shown() {
    let registry = registry();
    // Hidden by its scope from this subject, so that explain lists it whatever happens.
    let outsider = Subject::new("tenant-a");
    let revoked_reason = |run: &Run| {
        run.explain()
            .hidden
            .iter()
            .find(|hidden| hidden.name == "lookup")
            .unwrap()
            .reasons
            .iter()
            .find_map(|reason| match reason {
                HiddenReason::Revoked { reason } => Some(reason.clone()),
                _ => None,
            })
    };

    let at_v1 = registry.open_run("at-v1", &outsider);
    assert_eq!(revoked_reason(&at_v1), None);
    registry.revoke("lookup", "first revocation").unwrap();
    let during_v1 = registry.open_run("during-v1", &subject());
    registry
        .replace(lookup(2, "key"), ReplaceOptions::keep_old_runs("v2"))
        .unwrap();
    let at_v2 = registry.open_run("at-v2", &outsider);
    assert_eq!(revoked_reason(&at_v2), None);
    registry
        .replace(
            lookup(3, "key"),
            ReplaceOptions::revoke_old_runs("v2 is broken"),
        )
        .unwrap();
    let at_v3 = registry.open_run("at-v3", &outsider);
    registry.revoke("lookup", "second revocation").unwrap();

    assert_eq!(revoked_reason(&at_v1).as_deref(), Some("first revocation"));
    assert_eq!(
        revoked_reason(&during_v1).as_deref(),
        Some("first revocation")
    );
    assert_eq!(revoked_reason(&at_v2).as_deref(), Some("v2 is broken"));
    assert_eq!(revoked_reason(&at_v3).as_deref(), Some("second revocation"));
}

#[test]
fn a_restore_brings_a_revoked_tool_back_for_new_runs_only() {
    let registry = registry();
    assert_eq!(registry.is_revoked_now("ping"), Some(false));
    assert_eq!(registry.is_revoked_now("nope"), None);
    assert_eq!(
        registry.restore("ping", "nothing to restore"),
        Err(RegistryError::NotRevoked {
            name: "ping".into()
        })
    );
    let generation = registry.generation();
    assert_eq!(
        registry.generation(),
        generation,
        "a refused restore changes nothing"
    );

    let before = open(&registry, "before");
    registry.revoke("ping", "incident").unwrap();
    assert_eq!(
        kind(call(&before, "ping", json!({}))),
        Some(ErrorKind::Revoked)
    );
    let during = open(&registry, "during");
    assert!(!during.allowed().permits("ping"));

    let change = registry.restore("ping", "incident over").unwrap();
    assert_eq!(change.kind, ChangeKind::Restored);
    assert_eq!(change.reason, "incident over");
    assert_eq!(registry.is_revoked_now("ping"), Some(false));
    assert_eq!(registry.generation(), generation + 2);
    let after = open(&registry, "after");
    assert_eq!(call(&after, "ping", json!({})), Ok(json!("pong")));
    // The runs that saw it revoked stay as they were: what they were told stays true.
    assert_eq!(
        kind(call(&before, "ping", json!({}))),
        Some(ErrorKind::Revoked)
    );
    assert_eq!(
        kind(call(&during, "ping", json!({}))),
        Some(ErrorKind::NotAllowed)
    );

    // Revoked again after the restore: the new version is revoked too.
    registry.revoke("ping", "again").unwrap();
    assert_eq!(
        kind(call(&after, "ping", json!({}))),
        Some(ErrorKind::Revoked)
    );
    let kinds: Vec<ChangeKind> = registry.changes().iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [
            ChangeKind::Revoked,
            ChangeKind::Restored,
            ChangeKind::Revoked
        ]
    );
    assert_eq!(
        registry.restore("nope", "x"),
        Err(RegistryError::UnknownTool {
            name: "nope".into()
        })
    );
}

#[test]
fn a_suspended_registry_runs_nothing_until_it_resumes() {
    let registry = registry();
    let run = open(&registry, "run");
    assert_eq!(registry.suspended(), None);
    registry.suspend("the control plane is unreachable");
    let refused = run.call_blocking(ToolCall::new("c1", "ping", json!({})));
    assert_eq!(refused.error_kind(), Some(ErrorKind::Unavailable));
    assert!(refused.error_text().unwrap().contains("not available"));
    // Lists do not change while held; the run still shows the tool.
    assert!(run.allowed().permits("ping"));
    let new_run = open(&registry, "new");
    assert!(new_run.allowed().permits("ping"));
    assert_eq!(
        kind(call(&new_run, "lookup", json!({"key": "k"}))),
        Some(ErrorKind::Unavailable)
    );
    registry.resume();
    assert_eq!(registry.suspended(), None);
    assert_eq!(call(&run, "ping", json!({})), Ok(json!("pong")));
}

/// A policy set that reads the argument `argument` of `lookup`: it holds only while `lookup`
/// declares it, and notes the arguments of `lookup` in every registry it is checked against.
#[derive(Clone)]
struct ReadsArgument {
    argument: &'static str,
    seen: std::sync::Arc<std::sync::Mutex<Vec<Vec<String>>>>,
}

impl ReadsArgument {
    fn new(argument: &'static str) -> Self {
        ReadsArgument {
            argument,
            seen: std::sync::Arc::default(),
        }
    }

    fn seen(&self) -> Vec<Vec<String>> {
        self.seen.lock().unwrap().clone()
    }
}

impl registry_core::access::AccessRule for ReadsArgument {
    fn check(&self, _: &Subject, _: &registry_core::Tool) -> registry_core::access::Visibility {
        registry_core::access::Visibility::Visible
    }
}

impl registry_core::gate::CallPolicy for ReadsArgument {
    fn decide(&self, _: &registry_core::gate::CallRequest<'_>) -> registry_core::gate::Decision {
        registry_core::gate::Decision::Allow
    }
}

impl registry_core::policy::PolicySet for ReadsArgument {
    fn validate(&self, registry: &Registry) -> Result<(), Vec<String>> {
        let arguments: Vec<String> = registry
            .get("lookup")
            .and_then(|tool| {
                tool.definition().parameters["properties"]
                    .as_object()
                    .cloned()
            })
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default();
        let holds = arguments.iter().any(|name| name == self.argument);
        self.seen.lock().unwrap().push(arguments);
        if holds {
            Ok(())
        } else {
            Err(vec![format!(
                "rule `limit` reads the argument {:?} of lookup, which it no longer declares",
                self.argument
            )])
        }
    }
}

#[test]
fn a_replacement_a_policy_set_refuses_changes_nothing_and_every_set_is_checked_again() {
    // Two sets: the first holds for any `lookup`, the second reads `key`.
    let any = ReadsArgument::new("");
    /// Holds whatever it is shown, noting it.
    #[derive(Clone)]
    struct Always(ReadsArgument);
    impl registry_core::access::AccessRule for Always {
        fn check(&self, s: &Subject, t: &registry_core::Tool) -> registry_core::access::Visibility {
            self.0.check(s, t)
        }
    }
    impl registry_core::gate::CallPolicy for Always {
        fn decide(
            &self,
            c: &registry_core::gate::CallRequest<'_>,
        ) -> registry_core::gate::Decision {
            self.0.decide(c)
        }
    }
    impl registry_core::policy::PolicySet for Always {
        fn validate(&self, registry: &Registry) -> Result<(), Vec<String>> {
            let _ = self.0.validate(registry);
            Ok(())
        }
    }
    let reads_key = ReadsArgument::new("key");
    let registry = Registry::builder()
        .tool(lookup(1, "key"))
        .policies(Always(any.clone()))
        .policies(reads_key.clone())
        .build()
        .unwrap();
    let old = open(&registry, "old");
    let fingerprint = registry.get("lookup").unwrap().version_fingerprint();
    assert_eq!(reads_key.seen(), [["key"]]);

    // Version 2 takes `query`: the second set refuses it, so nothing changes.
    let error = registry
        .replace(lookup(2, "query"), ReplaceOptions::revoke_old_runs("v2"))
        .unwrap_err();
    assert!(
        matches!(error.problems(), [BuildProblem::Policy { message }] if message.contains("\"key\"")),
        "{error:?}"
    );
    // Both were shown the registry as the replacement would leave it; the first, which took
    // it, was then checked again against the registry as it stays.
    assert_eq!(reads_key.seen(), [vec!["key"], vec!["query"]]);
    assert_eq!(any.seen(), [vec!["key"], vec!["query"], vec!["key"]]);
    assert!(registry.changes().is_empty());
    assert_eq!(
        registry.get("lookup").unwrap().version_fingerprint(),
        fingerprint
    );
    assert_eq!(
        call(&old, "lookup", json!({"key": "k"})),
        Ok(json!("v1: k"))
    );
    assert_eq!(
        call(&open(&registry, "new"), "lookup", json!({"key": "k"})),
        Ok(json!("v1: k"))
    );

    // A version that keeps `key` goes through.
    registry
        .replace(lookup(3, "key"), ReplaceOptions::revoke_old_runs("v3"))
        .unwrap();
    assert_eq!(reads_key.seen().last().unwrap(), &["key"]);
    assert_eq!(
        call(&open(&registry, "newer"), "lookup", json!({"key": "k"})),
        Ok(json!("v3: k"))
    );
}

/// An asynchronous call policy that, the first time it decides, does something to the
/// registry (revokes the tool, suspends every call), then allows: what a remote engine's
/// network round trip leaves time for (security review of 2026-12-03, L8).
struct ChangesWhileDeciding {
    registry: std::sync::Arc<std::sync::OnceLock<Registry>>,
    change: fn(&Registry),
    done: std::sync::atomic::AtomicBool,
}

impl registry_core::gate::AsyncCallPolicy for ChangesWhileDeciding {
    fn determine<'a>(
        &'a self,
        _: registry_core::gate::CallRequest<'a>,
    ) -> registry_core::definition::BoxFuture<'a, registry_core::gate::Determined> {
        Box::pin(async move {
            if !self.done.swap(true, std::sync::atomic::Ordering::SeqCst) {
                (self.change)(self.registry.get().expect("set after build"));
            }
            registry_core::gate::Determined::new(registry_core::gate::Decision::Allow, Vec::new())
        })
    }
}

/// A registry of one tool, `deploy` (also a task), whose runs `runs` counts, behind a
/// policy that applies `change` while it decides the first call.
fn changing_while_deciding(
    change: fn(&Registry),
    runs: &std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> Registry {
    let cell = std::sync::Arc::new(std::sync::OnceLock::new());
    let counted = runs.clone();
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("deploy", "Deploy the service.")
                .public()
                .task()
                .handler(move |_, _| {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok::<_, String>(json!("deployed"))
                }),
        )
        .async_call_policy(
            ChangesWhileDeciding {
                registry: cell.clone(),
                change,
                done: std::sync::atomic::AtomicBool::new(false),
            },
            std::time::Duration::from_secs(5),
        )
        .build()
        .unwrap();
    assert!(cell.set(registry.clone()).is_ok(), "set once");
    registry
}

fn revoke_deploy(registry: &Registry) {
    registry.revoke("deploy", "incident 7").unwrap();
}

fn suspend_all(registry: &Registry) {
    registry.suspend("the control plane is unreachable");
}

#[test]
fn a_tool_revoked_while_its_call_is_in_the_gate_does_not_run() {
    type Call = fn(&Run, ToolCall) -> registry_core::Observation;
    let paths: [(&str, Call); 3] = [
        ("call", |run, call| pollster::block_on(run.call(call))),
        ("call_blocking", |run, call| run.call_blocking(call)),
        ("start_task", |run, call| {
            pollster::block_on(run.start_task(call)).expect_err("refused, not started")
        }),
    ];
    for (path, call) in paths {
        let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let registry = changing_while_deciding(revoke_deploy, &runs);
        let run = registry.open_run("run", &Subject::new("acme"));
        let during = call(&run, ToolCall::new("c1", "deploy", json!({})));
        // What a call made once the tool is revoked gets (refused before the gate).
        let after = run.call_blocking(ToolCall::new("c1", "deploy", json!({})));
        assert_eq!(after.error_kind(), Some(ErrorKind::Revoked), "{path}");
        assert_eq!(during, after, "{path}");
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 0, "{path}");
    }
}

#[test]
fn a_registry_suspended_while_a_call_is_in_the_gate_runs_nothing() {
    type Call = fn(&Run, ToolCall) -> registry_core::Observation;
    let paths: [(&str, Call); 3] = [
        ("call", |run, call| pollster::block_on(run.call(call))),
        ("call_blocking", |run, call| run.call_blocking(call)),
        ("start_task", |run, call| {
            pollster::block_on(run.start_task(call)).expect_err("refused, not started")
        }),
    ];
    for (path, call) in paths {
        let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let registry = changing_while_deciding(suspend_all, &runs);
        let run = registry.open_run("run", &Subject::new("acme"));
        let during = call(&run, ToolCall::new("c1", "deploy", json!({})));
        let after = run.call_blocking(ToolCall::new("c1", "deploy", json!({})));
        assert_eq!(after.error_kind(), Some(ErrorKind::Unavailable), "{path}");
        assert_eq!(during, after, "{path}");
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 0, "{path}");
        // Resumed, the tool runs again (the policy changes nothing the second time).
        registry.resume();
        let resumed = run.call_blocking(ToolCall::new("c2", "deploy", json!({})));
        assert_eq!(resumed.json(), &json!("deployed"), "{path}");
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1, "{path}");
    }
}

// A run that learns the registry changed under it, and its reopening (#40).

/// A registry of [`registry`]'s tools and a readiness check on `ping` that reads `ready`,
/// whose audit events go to the returned list.
fn audited_registry(
    ready: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (
    Registry,
    std::sync::Arc<std::sync::Mutex<Vec<registry_core::audit::AuditEvent>>>,
) {
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        move |event: &registry_core::audit::AuditEvent| events.lock().unwrap().push(event.clone())
    };
    let registry = Registry::builder()
        .tool(lookup(1, "key"))
        .tool(
            DynamicTool::new("ping", "Answer pong.")
                .public()
                .read_only()
                .handler(|_, _| Ok::<_, String>(json!("pong"))),
        )
        .tool(
            DynamicTool::new("admin_only", "Administer.")
                .scopes(["admin"])
                .handler(|_, _| Ok::<_, String>(json!("done"))),
        )
        .readiness("ping", move || {
            if ready.load(std::sync::atomic::Ordering::SeqCst) {
                Ok(())
            } else {
                Err("the pong service is down".to_owned())
            }
        })
        .audit_sink(sink)
        .build()
        .unwrap();
    (registry, events)
}

#[test]
fn a_run_is_current_until_something_it_may_see_or_call_changes() {
    let ready = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (registry, _) = audited_registry(ready.clone());

    // Replacing a tool, whichever way old runs go.
    for options in [
        ReplaceOptions::keep_old_runs("v2"),
        ReplaceOptions::revoke_old_runs("v3"),
    ] {
        let run = open(&registry, "replaced");
        assert!(run.is_current());
        registry.replace(lookup(2, "key"), options).unwrap();
        assert!(!run.is_current());
        assert!(open(&registry, "after").is_current());
    }

    // Revoking, and restoring: the restored tool is a version the run was not shown.
    let run = open(&registry, "revoked");
    registry.revoke("lookup", "incident").unwrap();
    assert!(!run.is_current());
    let between = open(&registry, "between");
    assert!(between.is_current());
    registry.restore("lookup", "over").unwrap();
    assert!(!run.is_current());
    assert!(
        !between.is_current(),
        "a restored tool joins what the subject may see"
    );

    // A change to a tool this subject cannot see leaves the run current.
    let run = open(&registry, "unrelated");
    registry.revoke("admin_only", "not for tenant-a").unwrap();
    assert!(run.is_current());
    assert!(
        run.is_current(),
        "the second answer, from what the first found, agrees"
    );

    // Readiness: a tool the run was shown stops being ready, then comes back.
    ready.store(false, std::sync::atomic::Ordering::SeqCst);
    pollster::block_on(registry.check_readiness());
    assert!(!run.is_current());
    let without_ping = open(&registry, "without-ping");
    ready.store(true, std::sync::atomic::Ordering::SeqCst);
    pollster::block_on(registry.check_readiness());
    assert!(
        run.is_current(),
        "it is shown the same versions as a new run again"
    );
    assert!(!without_ping.is_current(), "ping is back for this subject");
}

#[test]
fn reopening_a_run_keeps_its_subject_and_options_and_links_to_it() {
    use registry_core::change::RunEndKind;

    let (registry, events) = audited_registry(std::sync::Arc::new(true.into()));
    let subject = Subject::new("tenant-a")
        .with_scopes(["data:read"])
        .with_principal("ana")
        .with_attribute("region", "eu");
    let run = registry
        .open_run("session-7", &subject)
        .with_call_budget(3)
        .with_call_policy(|call: &registry_core::gate::CallRequest<'_>| {
            match call.arguments()["key"].as_str() {
                Some("secret") => registry_core::gate::Decision::Deny("no secrets".into()),
                _ => registry_core::gate::Decision::Allow,
            }
        });
    assert_eq!(
        call(&run, "lookup", json!({"key": "a"})).unwrap(),
        json!("v1: a")
    );
    registry
        .replace(lookup(2, "key"), ReplaceOptions::revoke_old_runs("v2"))
        .unwrap();
    assert_eq!(
        kind(call(&run, "lookup", json!({"key": "a"}))),
        Some(ErrorKind::Revoked)
    );

    let next = registry.reopen(&run);
    assert!(next.is_current());
    assert_eq!(next.id(), format!("session-7~{}", registry.generation()));
    assert_eq!(next.reopened_from(), Some("session-7"));
    assert_eq!(run.reopened_from(), None);
    assert_eq!(next.subject(), run.subject());
    assert_eq!(next.subject().principal(), Some("ana"));
    assert!(next.subject().attribute("region").is_some());
    assert_eq!(
        next.subject().attribute("region"),
        run.subject().attribute("region")
    );
    // The current version, through the run's own policy, against the shared budget (one
    // call of three spent in the old run).
    assert_eq!(
        call(&next, "lookup", json!({"key": "a"})).unwrap(),
        json!("v2: a")
    );
    assert_eq!(
        kind(call(&next, "lookup", json!({"key": "secret"}))),
        Some(ErrorKind::Denied)
    );
    assert_eq!(
        call(&next, "lookup", json!({"key": "b"})).unwrap(),
        json!("v2: b")
    );
    assert_eq!(
        kind(call(&next, "lookup", json!({"key": "c"}))),
        Some(ErrorKind::RateLimited),
        "the budget is shared, not granted again"
    );

    // Reopening the reopened run keeps the first id as the prefix.
    registry.revoke("ping", "down").unwrap();
    let third = registry.reopen(&next);
    assert_eq!(third.id(), format!("session-7~{}", registry.generation()));
    assert_eq!(third.reopened_from(), Some(next.id()));

    // Each reopening is recorded and audited, once: dropping a reopened run adds nothing.
    let (first_id, next_id, third_id) = (
        run.id().to_owned(),
        next.id().to_owned(),
        third.id().to_owned(),
    );
    drop((run, next));
    let ends = registry.run_ends();
    let recorded: Vec<_> = ends
        .iter()
        .map(|end| (end.run_id.as_str(), end.kind, end.reopened_as.as_deref()))
        .collect();
    assert_eq!(
        recorded,
        [
            (
                first_id.as_str(),
                RunEndKind::Migrated,
                Some(next_id.as_str())
            ),
            (
                next_id.as_str(),
                RunEndKind::Migrated,
                Some(third_id.as_str())
            ),
        ]
    );
    assert_eq!(ends[0].principal.as_deref(), Some("ana"));
    let audited: Vec<_> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            registry_core::audit::AuditEvent::RunEnd(end) => Some(end.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(audited, ends);
}

#[test]
fn old_runs_that_end_are_recorded_as_finished_or_stopped_and_current_ones_are_not() {
    use registry_core::change::RunEndKind;

    let (registry, _) = audited_registry(std::sync::Arc::new(true.into()));
    let current = open(&registry, "current");
    drop(current);
    assert!(
        registry.run_ends().is_empty(),
        "a current run ends unrecorded"
    );

    let kept = open(&registry, "kept");
    let revoked = open(&registry, "revoked");
    registry
        .replace(lookup(2, "key"), ReplaceOptions::keep_old_runs("v2"))
        .unwrap();
    // `kept` can still call everything it was shown: it finishes on its versions.
    assert_eq!(
        call(&kept, "lookup", json!({"key": "a"})).unwrap(),
        json!("v1: a")
    );
    drop(kept);
    registry.revoke("ping", "down").unwrap();
    drop(revoked);
    let ends: Vec<_> = registry
        .run_ends()
        .into_iter()
        .map(|end| (end.run_id, end.kind))
        .collect();
    assert_eq!(
        ends,
        [
            ("kept".to_owned(), RunEndKind::Finished),
            ("revoked".to_owned(), RunEndKind::Stopped),
        ]
    );
    let json = serde_json::to_value(&registry.run_ends()[1]).unwrap();
    assert_eq!(json["kind"], "stopped");
    assert_eq!(json["tenant"], "tenant-a");
}

#[test]
fn the_record_of_run_ends_is_bounded() {
    use registry_core::change::RUN_ENDS_KEPT;

    let (registry, _) = audited_registry(std::sync::Arc::new(true.into()));
    let runs: Vec<Run> = (0..RUN_ENDS_KEPT + 2)
        .map(|index| open(&registry, &format!("run-{index}")))
        .collect();
    registry.revoke("ping", "down").unwrap();
    drop(runs);
    let ends = registry.run_ends();
    assert_eq!(ends.len(), RUN_ENDS_KEPT);
    assert_eq!(ends[0].run_id, "run-2", "the oldest go first");
    assert_eq!(
        ends.last().unwrap().run_id,
        format!("run-{}", RUN_ENDS_KEPT + 1)
    );
}
