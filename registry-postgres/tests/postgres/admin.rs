//! `registry-admin`, the real binary, against a throwaway PostgreSQL cluster.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use registry_core::{DynamicTool, ErrorKind, Registry, RegistryBuilder, Subject, ToolCall};
use registry_postgres::throwaway::Cluster;
use registry_postgres::{AuditConfig, ControlPlane};
use serde_json::{Value, json};

use crate::common::sql;

/// How long one run of the command may take.
const PATIENCE: Duration = Duration::from_secs(60);

/// What a run of the command did.
#[derive(Debug)]
struct Done {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// The command with `args`, as user `tester`, without a `DATABASE_URL` of the caller's.
fn admin(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_registry-admin"));
    command
        .args(args)
        .env_remove("DATABASE_URL")
        .env_remove("LOGNAME")
        .env("USER", "tester")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// The command with `--database url` and `args`, run to the end.
fn run(url: &str, args: &[&str]) -> Done {
    let mut all = vec!["--database", url];
    all.extend_from_slice(args);
    finish(admin(&all).spawn().unwrap())
}

/// Waits for `child`, for `PATIENCE` at most (then kills it and fails).
fn finish(mut child: Child) -> Done {
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("registry-admin took longer than {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Done {
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn assert_ok(done: &Done) {
    assert_eq!(done.code, Some(0), "{done:#?}");
}

/// `deploy` needs a person's approval; `status` does not.
fn registry_builder() -> RegistryBuilder {
    Registry::builder()
        .tool(
            DynamicTool::new("deploy", "Deploy a project.")
                .public()
                .parameters(json!({
                    "type": "object",
                    "properties": {"env": {"type": "string"}},
                    "required": ["env"],
                    "additionalProperties": false
                }))
                .needs_approval()
                .handler(|_: &registry_core::ToolContext, args: Value| {
                    Ok::<_, String>(json!(format!("deployed {args}")))
                }),
        )
        .tool(
            DynamicTool::new("status", "Read the status.")
                .public()
                .read_only()
                .handler(|_: &registry_core::ToolContext, _: Value| {
                    Ok::<_, String>(json!("all good"))
                }),
        )
}

fn subject() -> Subject {
    Subject::new("acme").with_agent("release-bot")
}

/// Asks for `deploy` through a registry on `plane`; returns the pending request's id.
async fn pending_request(plane: &ControlPlane, call_id: &str) -> String {
    pending_request_for(plane, call_id, Duration::from_secs(15 * 60)).await
}

/// The same, with requests that expire after `ttl`.
async fn pending_request_for(plane: &ControlPlane, call_id: &str, ttl: Duration) -> String {
    let registry = registry_builder()
        .approval_store(plane.approval_store())
        .approval_ttl(ttl)
        .build()
        .unwrap();
    let run = registry.open_run(format!("run-{call_id}"), &subject());
    let observation = run
        .call(ToolCall::new(
            call_id,
            "deploy",
            json!({"env": "production"}),
        ))
        .await;
    assert_eq!(
        observation.error_kind(),
        Some(ErrorKind::ApprovalRequired),
        "{observation:?}"
    );
    observation.approval().unwrap().id().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_is_recorded_and_listed_in_the_changes() {
    let cluster = Cluster::shared().unwrap();
    let url = cluster.fresh_database("admin_revoke").unwrap();

    // Before any replica recorded its tools, a name cannot be checked: refused without
    // --force, and nothing recorded.
    let done = run(&url, &["revoke", "deploy", "--reason", "incident 4711"]);
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(done.stderr.contains("--force"), "{done:#?}");
    {
        let plane = ControlPlane::connect(&url).await.unwrap();
        assert!(plane.changes(0, 10).await.unwrap().is_empty());
        // A replica follows: its tools are recorded, and a typo is refused with a suggestion.
        let registry = registry_builder().build().unwrap();
        let feed = plane.follow(&registry).await.unwrap();
        let done = run(&url, &["revoke", "depoly", "--reason", "incident 4711"]);
        assert_eq!(done.code, Some(1), "{done:#?}");
        assert!(
            done.stderr
                .contains("no replica has a tool named \"depoly\"")
                && done.stderr.contains("did you mean \"deploy\"?"),
            "{done:#?}"
        );
        assert!(plane.changes(0, 10).await.unwrap().is_empty());
        feed.shutdown().await;
    }

    let done = run(&url, &["revoke", "deploy", "--reason", "incident 4711"]);
    assert_ok(&done);
    assert!(done.stdout.contains("#1"), "{done:#?}");
    assert!(done.stdout.contains("within moments"), "{done:#?}");

    let plane = ControlPlane::connect(&url).await.unwrap();
    let changes = plane.changes(0, 10).await.unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].tool, "deploy");
    assert_eq!(changes[0].reason, "incident 4711");
    assert_eq!(changes[0].origin, "registry-admin (tester)");

    let done = run(&url, &["changes"]);
    assert_ok(&done);
    for expected in [
        "deploy",
        "revoke",
        "incident 4711",
        "registry-admin (tester)",
    ] {
        assert!(done.stdout.contains(expected), "{expected}: {done:#?}");
    }

    // Now it can be restored, and both changes are listed, in order.
    let done = run(&url, &["restore", "deploy", "--reason", "fixed"]);
    assert_ok(&done);
    assert!(done.stdout.contains("#2"), "{done:#?}");
    let done = run(&url, &["changes", "--since-seq", "1"]);
    assert_ok(&done);
    assert!(done.stdout.contains("restore") && done.stdout.contains("fixed"));
    assert!(!done.stdout.contains("incident 4711"), "{done:#?}");

    // As JSON lines, with the times as text.
    let done = run(&url, &["--json", "changes"]);
    assert_ok(&done);
    let lines: Vec<Value> = done
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["kind"], "revoke");
    assert_eq!(lines[1]["kind"], "restore");
    assert!(lines[0]["at"].as_str().unwrap().ends_with('Z'), "{lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restoring_a_tool_that_is_not_revoked_is_refused_and_records_nothing() {
    let cluster = Cluster::shared().unwrap();
    let url = cluster.fresh_database("admin_restore").unwrap();
    let plane = ControlPlane::connect(&url).await.unwrap();

    let done = run(&url, &["restore", "deploy"]);
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(
        done.stderr
            .contains("deploy is not revoked: nothing to restore"),
        "{done:#?}"
    );
    assert!(plane.changes(0, 10).await.unwrap().is_empty());

    // Revoked, restored, then restored again: the second restore is refused.
    plane.revoke("deploy", "incident", "test").await.unwrap();
    assert_ok(&run(&url, &["restore", "deploy"]));
    let done = run(&url, &["restore", "deploy"]);
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(done.stderr.contains("nothing to restore"), "{done:#?}");
    let changes = plane.changes(0, 10).await.unwrap();
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert_eq!(changes[1].origin, "registry-admin (tester)");

    // Another tool's revocation does not make this one restorable.
    plane.revoke("status", "incident", "test").await.unwrap();
    assert_eq!(run(&url, &["restore", "deploy"]).code, Some(1));
    assert_eq!(plane.changes(0, 10).await.unwrap().len(), 3);
}

#[test]
fn the_database_comes_from_database_url_or_the_command_says_it_needs_one() {
    let cluster = Cluster::shared().unwrap();
    let url = cluster.fresh_database("admin_env").unwrap();

    let done = finish(
        admin(&["changes"])
            .env("DATABASE_URL", &url)
            .spawn()
            .unwrap(),
    );
    assert_ok(&done);
    assert!(done.stdout.contains("no changes"), "{done:#?}");

    let done = finish(admin(&["changes"]).spawn().unwrap());
    assert_eq!(done.code, Some(2), "{done:#?}");
    assert!(
        done.stderr.contains("--database") && done.stderr.contains("DATABASE_URL"),
        "{done:#?}"
    );

    // A database that is not there: the error says so, without a panic.
    let done = run(
        &cluster.url_of("no_such_database"),
        &["approvals", "--pending"],
    );
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(done.stderr.starts_with("error: "), "{done:#?}");
    assert!(done.stderr.contains("no_such_database"), "{done:#?}");
    assert!(!done.stderr.contains("panicked"), "{done:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_database_errors_say_what_went_wrong() {
    let cluster = Cluster::shared().unwrap();
    let error = ControlPlane::connect(&cluster.url_of("no_such_database"))
        .await
        .unwrap_err()
        .to_string();
    // The driver's own message is only "db error": the server's is its cause.
    assert!(
        error.contains("\"no_such_database\" does not exist"),
        "{error}"
    );
    let error = ControlPlane::connect("postgres://postgres@127.0.0.1:1/none")
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("refused"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_requests_are_listed_and_decided_once() {
    let cluster = Cluster::shared().unwrap();
    let url = cluster.fresh_database("admin_approvals").unwrap();
    let plane = ControlPlane::connect(&url).await.unwrap();
    let id = pending_request(&plane, "c1").await;

    let done = run(&url, &["approvals", "--pending"]);
    assert_ok(&done);
    for expected in [id.as_str(), "deploy", "acme", "release-bot", "pending"] {
        assert!(done.stdout.contains(expected), "{expected}: {done:#?}");
    }

    let done = run(&url, &["approve", &id, "--as", "alice"]);
    assert_ok(&done);
    assert!(done.stdout.contains("approved by alice"), "{done:#?}");
    assert_eq!(
        plane.pending_approval_by(&id).await.unwrap().as_deref(),
        Some("alice")
    );

    let done = run(&url, &["approve", &id, "--as", "bob"]);
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(done.stderr.contains("already"), "{done:#?}");
    assert!(done.stderr.contains("alice"), "{done:#?}");

    let done = run(&url, &["deny", "apr_unknown", "--reason", "no"]);
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(done.stderr.contains("apr_unknown"), "{done:#?}");

    // A denial, by the OS user by default, is final at once.
    let other = pending_request(&plane, "c2").await;
    let done = run(&url, &["deny", &other, "--reason", "not on a Friday"]);
    assert_ok(&done);
    assert!(done.stdout.contains("denied by tester"), "{done:#?}");
    let done = run(&url, &["approve", &other, "--as", "alice"]);
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(
        done.stderr.contains("already decided (denied)"),
        "{done:#?}"
    );

    let done = run(&url, &["--json", "approvals"]);
    assert_ok(&done);
    let records: Vec<Value> = done
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{records:?}");
    let denied = records.iter().find(|record| record["id"] == other).unwrap();
    assert_eq!(denied["state"], "denied");
    assert_eq!(denied["decided_by"], "tester");

    // Only the first request is still pending (its approval waits for its replica).
    let done = run(&url, &["approvals", "--pending"]);
    assert_ok(&done);
    assert!(done.stdout.contains(&id) && !done.stdout.contains(&other));

    // A request that expired undecided takes no verdict.
    let expiring = pending_request_for(&plane, "c3", Duration::from_millis(300)).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let done = run(&url, &["approve", &expiring, "--as", "alice"]);
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(done.stderr.contains("expired"), "{done:#?}");
    assert_eq!(plane.pending_approval_by(&expiring).await.unwrap(), None);
    let done = run(&url, &["approvals", "--pending"]);
    assert!(!done.stdout.contains(&expiring), "{done:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_approvals_given_at_once_exactly_one_is_recorded() {
    let cluster = Cluster::shared().unwrap();
    let url = cluster.fresh_database("admin_race").unwrap();
    let plane = ControlPlane::connect(&url).await.unwrap();
    for round in 0..3 {
        let id = pending_request(&plane, &format!("c{round}")).await;
        let children: Vec<Child> = ["alice", "bob"]
            .into_iter()
            .map(|who| {
                admin(&["--database", &url, "approve", &id, "--as", who])
                    .spawn()
                    .unwrap()
            })
            .collect();
        let done: Vec<Done> = children.into_iter().map(finish).collect();
        let winners = done.iter().filter(|done| done.code == Some(0)).count();
        assert_eq!(winners, 1, "{done:#?}");
        let loser = done.iter().find(|done| done.code != Some(0)).unwrap();
        assert_eq!(loser.code, Some(1), "{loser:#?}");
        assert!(loser.stderr.contains("already"), "{loser:#?}");
        let by = plane.pending_approval_by(&id).await.unwrap().unwrap();
        let winner = done.iter().find(|done| done.code == Some(0)).unwrap();
        assert!(
            winner.stdout.contains(&format!("approved by {by}")),
            "{done:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_trail_shows_the_calls_of_a_registry() {
    let cluster = Cluster::shared().unwrap();
    let url = cluster.fresh_database("admin_audit").unwrap();
    let plane = ControlPlane::builder(&url)
        .replica("api-1")
        .connect()
        .await
        .unwrap();
    let (sink, writer) = plane.audit_sink(AuditConfig::default());
    let registry = registry_builder().audit_sink(sink).build().unwrap();
    let run_ = registry.open_run("run-audit", &subject());
    for call_id in ["s1", "s2"] {
        let observation = run_.call(ToolCall::new(call_id, "status", json!({}))).await;
        assert!(!observation.is_error(), "{observation:?}");
    }
    assert!(writer.flush(Duration::from_secs(10)).await);

    let done = run(&url, &["audit", "--tool", "status"]);
    assert_ok(&done);
    for expected in ["call", "status", "s1", "s2", "ok", "run-audit", "api-1"] {
        assert!(done.stdout.contains(expected), "{expected}: {done:#?}");
    }

    let done = run(
        &url,
        &["--json", "audit", "--kind", "call", "--since", "1h"],
    );
    assert_ok(&done);
    let records: Vec<Value> = done
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(records.iter().all(|record| record["kind"] == "call"));
    // Newest first.
    assert_eq!(records[0]["call_id"], "s2");

    // Nothing from the future; nothing about another tool.
    let done = run(&url, &["audit", "--since", "2999-01-01T00:00:00Z"]);
    assert_ok(&done);
    assert!(done.stdout.contains("no audit events"), "{done:#?}");
    let done = run(&url, &["audit", "--tool", "deploy"]);
    assert!(done.stdout.contains("no audit events"), "{done:#?}");
    writer.shutdown(Duration::from_secs(10)).await.unwrap();
}

#[test]
fn bad_input_is_refused_with_a_clear_error_and_no_panic() {
    // Refused before any database is needed.
    let url = "postgres://postgres@127.0.0.1:1/never";
    for (args, expected) in [
        (&["audit", "--since", "yesterday"][..], "RFC 3339"),
        (
            &["audit", "--since", "2026-13-01T00:00:00Z"][..],
            "no such date",
        ),
        (&["audit", "--since", "15x"][..], "15m"),
        (&["audit", "--kind", "nonsense"][..], "possible values"),
        (&["revoke", "deploy"][..], "--reason"),
        (&["revoke", "", "--reason", "x"][..], "must not be empty"),
        (&["changes", "--limit", "0"][..], "--limit"),
        (&["approve", "apr_1"][..], "--as"),
    ] {
        let done = run(url, args);
        assert_eq!(done.code, Some(2), "{args:?}: {done:#?}");
        assert!(done.stderr.contains(expected), "{args:?}: {done:#?}");
        assert!(!done.stderr.contains("panicked"), "{args:?}: {done:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_deletes_old_records_and_prints_the_counts() {
    let cluster = Cluster::shared().unwrap();
    let url = cluster.fresh_database("admin_prune").unwrap();
    let plane = ControlPlane::builder(&url)
        .no_retention()
        .connect()
        .await
        .unwrap();
    plane.revoke("deploy", "one", "test").await.unwrap();
    plane.restore("deploy", "two", "test").await.unwrap();
    plane.revoke("deploy", "three", "test").await.unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(
            "INSERT INTO audit_events (at, replica, kind, event)
             SELECT now() - interval '40 days', 'old', 'call', '{}'::jsonb
               FROM generate_series(1, 1500);
             INSERT INTO audit_events (at, replica, kind, event)
             VALUES (now(), 'new', 'call', '{}'::jsonb);
             UPDATE registry_changes SET at = now() - interval '40 days';",
        )
        .await
        .unwrap();

    let done = run(&url, &["prune", "--older-than", "30d"]);
    assert_ok(&done);
    assert_eq!(
        done.stdout,
        "deleted 1500 audit events, 2 superseded changes, 0 decided or expired approval \
         requests, 0 upstream offers of dead replicas, 0 ended tasks, 0 old policy sets, 0 \
         policy status rows of dead replicas and 0 quota buckets full again older than 30d\n",
        "{done:#?}"
    );
    let left: i64 = client
        .query_one(
            "SELECT count(*) FROM audit_events WHERE kind <> 'prune'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 1);
    // The prune left its trace, read with `audit --kind prune`.
    let trail = run(&url, &["--json", "audit", "--kind", "prune"]);
    assert_ok(&trail);
    let prune: Value = serde_json::from_str(trail.stdout.trim()).unwrap();
    assert_eq!(prune["kind"], "prune", "{trail:#?}");
    assert_eq!(prune["event"]["audit_events"], 1500, "{trail:#?}");

    // Below the floor: refused, nothing deleted; with --force, done (and recorded).
    let refused = run(&url, &["prune", "--older-than", "1h"]);
    assert_eq!(refused.code, Some(1), "{refused:#?}");
    assert!(
        refused.stderr.contains("below the floor of 7d") && refused.stderr.contains("--force"),
        "{refused:#?}"
    );
    // The newest change of deploy stays: it is still revoked, and restore finds it.
    let changes = run(&url, &["changes"]);
    assert!(changes.stdout.contains("three"), "{changes:#?}");

    let done = run(&url, &["--json", "prune", "--older-than", "1h", "--force"]);
    assert_ok(&done);
    let report: Value = serde_json::from_str(done.stdout.trim()).unwrap();
    assert_eq!(
        report,
        json!({"audit_events": 0, "changes": 0, "approvals": 0, "offers": 0, "tasks": 0,
               "policy_sets": 0, "policy_status": 0, "quota_buckets": 0})
    );

    for bad in ["30", "thirty days", "-1d", "99999999999999999999d"] {
        let done = run(&url, &["prune", "--older-than", bad]);
        assert_eq!(done.code, Some(2), "{bad}: {done:#?}");
        assert!(done.stderr.contains("--older-than"), "{bad}: {done:#?}");
    }
}

/// A directory of this test's own under the system's temporary one, emptied.
fn policy_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("registry-admin-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_push_reaches_a_replica_and_show_escapes_what_it_reports() {
    let cluster = Cluster::shared().unwrap();
    let url = cluster.fresh_database("admin_policy").unwrap();
    let dir = policy_dir("policy");

    // Nothing pushed yet.
    let done = run(&url, &["policy", "show"]);
    assert_ok(&done);
    assert_eq!(done.stdout, "no policy set was pushed\n");

    // An empty directory, a file that is not UTF-8, a name out of bounds: refused, naming the
    // file and the fix, and nothing recorded.
    let path = dir.to_str().unwrap();
    let done = run(&url, &["policy", "push", path]);
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(
        done.stderr
            .contains("holds no `.cedar` file; nothing was pushed"),
        "{done:#?}"
    );
    std::fs::write(
        dir.join("base.cedar"),
        b"permit(principal, action, resource);\n",
    )
    .unwrap();
    std::fs::write(dir.join("latin1.cedar"), b"// caf\xe9\n").unwrap();
    let done = run(&url, &["policy", "push", path]);
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(
        done.stderr.contains("policy file latin1.cedar: its text is not UTF-8 (byte 6 is not valid); save it as UTF-8"),
        "{done:#?}"
    );
    std::fs::remove_file(dir.join("latin1.cedar")).unwrap();
    std::fs::write(dir.join("bad name.cedar"), b"").unwrap();
    let done = run(&url, &["policy", "push", path]);
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(
        done.stderr.contains("policy file \"bad name.cedar\"") && done.stderr.contains("rename it"),
        "{done:#?}"
    );
    std::fs::remove_file(dir.join("bad name.cedar")).unwrap();
    let plane = ControlPlane::connect(&url).await.unwrap();
    assert!(plane.policies().await.unwrap().is_none());
    assert!(plane.changes(0, 10).await.unwrap().is_empty());

    // A replica whose validation refuses everything, with hostile bytes in its words.
    let registry = registry_builder().build().unwrap();
    let replica = ControlPlane::builder(&url)
        .replica("api-1\u{202e}")
        .connect()
        .await
        .unwrap();
    let feed = replica.follow(&registry).await.unwrap();
    feed.on_policies(|files: &[(String, String)]| {
        Err(format!(
            "{} refused: \u{202e}evil\0 \u{1b}[31mred\nline two",
            files[0].0
        ))
    })
    .await
    .unwrap();

    // Pushed in name order; other files of the directory are left out.
    std::fs::write(
        dir.join("a-tools.cedar"),
        "forbid(principal, action, resource)\nunless { true };",
    )
    .unwrap();
    std::fs::write(dir.join("README.md"), "not a policy").unwrap();
    let done = run(&url, &["policy", "push", path]);
    assert_ok(&done);
    let set = plane.policies().await.unwrap().unwrap();
    assert_eq!(set.generation, 1);
    let names: Vec<&str> = set.files.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["a-tools.cedar", "base.cedar"]);
    assert_eq!(set.origin, "registry-admin (tester)");
    assert!(
        done.stdout.starts_with(&format!(
            "pushed policy set generation 1: 2 files, sha256 {}\n",
            set.digest
        )),
        "{done:#?}"
    );
    crate::common::wait_until_async(Duration::from_secs(5), "the replica reports", || async {
        !plane.policy_status().await.unwrap().is_empty()
    })
    .await;

    let done = run(&url, &["policy", "show"]);
    assert_ok(&done);
    for expected in [
        "policy set generation 1\n",
        &format!("digest: sha256 {}\n", set.digest),
        "by registry-admin (tester)",
        "a-tools.cedar",
        "| 52 ",
        "api-1\\u{202e}",
        "refused",
        "api-1\\u{202e} refused generation 1: a-tools.cedar refused: \\u{202e}evil\\u{0} \\u{1b}[31mred\\nline two\n",
    ] {
        assert!(done.stdout.contains(expected), "{expected:?}: {done:#?}");
    }
    // Nothing a terminal would act on, nothing that reorders the text.
    assert!(
        !done
            .stdout
            .chars()
            .any(|c| c == '\u{202e}' || c == '\u{1b}' || c == '\0'),
        "{done:#?}"
    );
    assert!(!done.stdout.contains("forbid"), "{done:#?}");

    // --text prints the texts, lines kept.
    let done = run(&url, &["policy", "show", "--text"]);
    assert_ok(&done);
    assert!(
        done.stdout.contains(
            "--- a-tools.cedar ---\nforbid(principal, action, resource)\nunless { true };\n"
        ),
        "{done:#?}"
    );

    // As JSON lines: the set, then each replica.
    let done = run(&url, &["--json", "policy", "show"]);
    assert_ok(&done);
    let lines: Vec<Value> = done
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{done:#?}");
    assert_eq!(lines[0]["generation"], 1);
    assert_eq!(
        lines[0]["files"][1],
        json!({"name": "base.cedar", "bytes": 37})
    );
    assert!(lines[0]["at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(lines[1]["replica"], "api-1\u{202e}");
    assert_eq!(lines[1]["applied"], false);

    // A second push, keeping only the newest.
    let done = run(&url, &["--json", "policy", "push", path, "--keep", "1"]);
    assert_ok(&done);
    let pushed: Value = serde_json::from_str(done.stdout.trim()).unwrap();
    assert_eq!(pushed["generation"], 2);
    assert_eq!(pushed["pruned"], 1);
    assert_eq!(pushed["digest"], set.digest.as_str());
    feed.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run`, on a blocking thread: the replicas' feeds in this process keep running meanwhile.
async fn run_beside(url: &str, args: &[&str]) -> Done {
    let url = url.to_owned();
    let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&url, &args)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_push_wait_reports_each_live_replica_and_fails_on_a_mixed_fleet() {
    let cluster = Cluster::shared().unwrap();
    let url = cluster.fresh_database("admin_policy_wait").unwrap();
    let dir = policy_dir("wait");
    let path = dir.to_str().unwrap();
    std::fs::write(
        dir.join("base.cedar"),
        "permit(principal, action, resource);",
    )
    .unwrap();

    // Two replicas: `api-new` validates every set; `api-old` (an older binary, say, which
    // lacks a tool the set names) refuses it, with hostile bytes in its words.
    let mut replicas = Vec::new();
    let mut feeds = Vec::new();
    for name in ["api-new", "api-old"] {
        let plane = ControlPlane::builder(&url)
            .replica(name)
            .no_retention()
            .connect()
            .await
            .unwrap();
        let registry = registry_builder().build().unwrap();
        let feed = plane.follow(&registry).await.unwrap();
        let refuses = name == "api-old";
        feed.on_policies(move |_files: &[(String, String)]| {
            if refuses {
                Err("unknown tool `purge`\u{202e}\n\u{1b}[2J".to_owned())
            } else {
                Ok(())
            }
        })
        .await
        .unwrap();
        replicas.push(plane);
        feeds.push(feed);
    }
    // A replica that died long ago, which refused: not waited for, shown dead.
    let client = sql(&url).await;
    client
        .batch_execute(
            "INSERT INTO registry_policy_status
                 (replica, generation, outcome, error, running, at, seen_at)
             VALUES ('api-gone', 0, 'refused', 'gone', NULL, now() - interval '2 days',
                     now() - interval '2 days')",
        )
        .await
        .unwrap();

    // Generation 1: api-old refuses it. The push says so and exits 1.
    let done = run_beside(&url, &["policy", "push", path, "--wait", "20s"]).await;
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(
        done.stdout
            .starts_with("pushed policy set generation 1: 1 file, sha256 "),
        "{done:#?}"
    );
    for expected in [
        "| api-new | applied ",
        "| api-old | refused ",
        "api-old refused generation 1: unknown tool `purge`\\u{202e}\\n\\u{1b}[2J\n",
    ] {
        assert!(done.stdout.contains(expected), "{expected:?}: {done:#?}");
    }
    assert!(!done.stdout.contains("api-gone"), "{done:#?}");
    assert!(!done.stdout.contains('\u{202e}') && !done.stdout.contains('\u{1b}'));
    assert!(
        done.stderr
            .contains("of 2 live replicas, 1 refused generation 1 and 0 did not report")
            && done.stderr.contains("mixed"),
        "{done:#?}"
    );
    // `policy show` tells the live replicas from the dead one.
    let shown = run_beside(&url, &["policy", "show"]).await;
    assert_ok(&shown);
    let row = |name: &str| {
        shown
            .stdout
            .lines()
            .find(|line| line.starts_with(&format!("| {name} ")))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        row("api-new").ends_with("| live                            |"),
        "{shown:#?}"
    );
    assert!(row("api-old").contains("| live "), "{shown:#?}");
    assert!(row("api-gone").contains("| dead since "), "{shown:#?}");

    // Generation 2, once api-old validates too: every live replica applied it, exit 0.
    feeds[1]
        .on_policies(|_files: &[(String, String)]| Ok(()))
        .await
        .unwrap();
    let done = run_beside(&url, &["--json", "policy", "push", path, "--wait"]).await;
    assert_ok(&done);
    let lines: Vec<Value> = done
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{done:#?}");
    assert_eq!(lines[0]["generation"], 2);
    for line in &lines[1..] {
        assert_eq!(line["outcome"], "applied", "{done:#?}");
        assert_eq!(line["running"], 2, "{done:#?}");
    }

    // A live replica that does not report in time (its feed stopped validating, say):
    // named, and exit 1.
    client
        .batch_execute(
            "INSERT INTO registry_policy_status
                 (replica, generation, outcome, error, running, at, seen_at)
             VALUES ('api-stuck', 2, 'applied', NULL, 2, now(), now())",
        )
        .await
        .unwrap();
    let done = run_beside(&url, &["policy", "push", path, "--wait", "1s"]).await;
    assert_eq!(done.code, Some(1), "{done:#?}");
    assert!(
        done.stdout.contains("| api-stuck | not reported "),
        "{done:#?}"
    );
    assert!(
        done.stderr
            .contains("0 refused generation 3 and 1 did not report it within 1s"),
        "{done:#?}"
    );
    for feed in &feeds {
        feed.shutdown().await;
    }
    drop(replicas);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_replicas_url_registry_admin_is_refused_the_operators_work() {
    let cluster = Cluster::shared().unwrap();
    let url = cluster.fresh_database("admin_roles").unwrap();
    let owner = ControlPlane::connect(&url).await.unwrap();
    let roles = owner.roles().await.unwrap().unwrap();
    let db = url.rsplit('/').next().unwrap().to_owned();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "CREATE ROLE \"{db}_api\" LOGIN IN ROLE \"{}\";
             CREATE ROLE \"{db}_ops\" LOGIN IN ROLE \"{}\";",
            roles.replica, roles.admin
        ))
        .await
        .unwrap();
    let replica_url = url.replacen("postgres@", &format!("{db}_api@"), 1);
    let admin_url = url.replacen("postgres@", &format!("{db}_ops@"), 1);
    let replica = ControlPlane::builder(&replica_url)
        .replica("api-1")
        .connect()
        .await
        .unwrap();
    let definition = "{\"name\":\"echo\",\"description\":\"Say it\\n\\u202eback\"}";
    replica
        .report_upstream_offers(&[registry_postgres::UpstreamOffer::new(
            "notes",
            "notes_echo",
            "echo",
            "sha256:d1",
            "sha256:aa",
            "withheld: new",
        )
        .with_offered(definition)])
        .await
        .unwrap();
    let dir = policy_dir("roles");
    std::fs::write(
        dir.join("all.cedar"),
        "permit(principal, action, resource);",
    )
    .unwrap();

    // The replica's URL: PostgreSQL refuses each, and the command says what happened.
    for args in [
        vec!["policy", "push", dir.to_str().unwrap()],
        vec!["upstream", "accept", "notes", "--digest", "sha256:d1"],
        vec!["prune", "--older-than", "30d"],
    ] {
        let done = run(&replica_url, &args);
        assert_eq!(done.code, Some(1), "{args:?}: {done:#?}");
        assert!(
            done.stderr.contains("permission denied") && done.stderr.contains("admin role"),
            "{args:?}: {done:#?}"
        );
    }

    // The admin's URL: the list shows the digest to pass and the definition, escaped.
    let listed = run(&admin_url, &["upstream", "list", "notes"]);
    assert_ok(&listed);
    assert!(listed.stdout.contains("sha256:d1"), "{listed:#?}");
    assert!(listed.stdout.contains("Say it"), "{listed:#?}");
    assert!(!listed.stdout.contains('\u{202e}'), "{listed:#?}");
    // A stale digest: refused, nothing accepted.
    let stale = run(
        &admin_url,
        &["upstream", "accept", "notes", "--digest", "sha256:d0"],
    );
    assert_eq!(stale.code, Some(1), "{stale:#?}");
    assert!(stale.stderr.contains("sha256:d1"), "{stale:#?}");
    assert!(owner.upstream_acceptances(0, 10).await.unwrap().is_empty());
    // The digest reviewed: exactly that one.
    let accepted = run(
        &admin_url,
        &["upstream", "accept", "notes", "--digest", "sha256:d1"],
    );
    assert_ok(&accepted);
    let all = owner.upstream_acceptances(0, 10).await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].definition, "sha256:d1");
    let pushed = run(&admin_url, &["policy", "push", dir.to_str().unwrap()]);
    assert_ok(&pushed);
    let pruned = run(&admin_url, &["prune", "--older-than", "30d"]);
    assert_ok(&pruned);
}
