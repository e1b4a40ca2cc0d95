//! Upstream MCP servers federated into the registry, against real processes: a small upstream
//! of our own (`upstreams/fake_upstream.py`, started with python3) that misbehaves on request.
//! Listing per subject, forwarded calls with their content, approval before forwarding,
//! timeouts and cancellation relayed, an upstream that dies, a poisoned description withheld,
//! a definition changed at run time withheld until accepted, a removed tool revoked, and no
//! call ever reaching a withheld or removed tool. A hostile upstream is one neighbour among
//! others: its colliding names refused, its pins its own, trust on first use never re-armed,
//! its listings, `list_changed` storms, progress and error texts bounded.

mod tracing_support;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use registry_core::access::Access;
use registry_core::change::ChangeKind;
use registry_core::content::{Content, ResourceLink};
use registry_core::host::{CallHost, CallInfo, Progress};
use registry_core::{DynamicTool, ErrorKind, Profile, Registry, Subject, ToolCall};
use registry_mcp::upstream::{Federation, UpstreamLock, UpstreamsConfig, Withheld};
use serde_json::json;

use registry_examples as _;

/// A directory of its own for one test: the upstream's notes, the lock file.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let path = std::env::temp_dir().join(format!("federation-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Dir(path)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The tools the upstream was called with, in order.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn touch(&self, name: &str) {
        std::fs::write(self.path(name), b"").unwrap();
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams/fake_upstream.py")
}

/// The upstreams file of one upstream `notes`, the fake started with `env` in `dir`, and
/// `more` appended (its own keys, then tool tables).
fn config(dir: &Dir, env: &str, more: &str) -> UpstreamsConfig {
    let text = format!(
        "[[upstream]]\nname = \"notes\"\ncommand = [\"env\", \"FAKE_DIR={}\", {env} \"python3\", {:?}]\n{more}",
        dir.0.display(),
        script().display().to_string(),
    );
    UpstreamsConfig::from_toml(&text).unwrap()
}

const POLICY: &str = "scopes = [\"notes:read\"]\n\
    [upstream.tools.delete_all]\nscopes = [\"notes:admin\"]\nneeds_approval = true\n\
    [upstream.tools.hang]\ntimeout_ms = 300\n\
    [upstream.tools.slow]\ntimeout_ms = 600\n";

async fn federate(config: UpstreamsConfig, lock: UpstreamLock) -> (Federation, Registry) {
    let federation = Federation::connect(config, lock, &[]).await.unwrap();
    let registry = federation
        .register(Registry::builder().host(Recorder))
        .build()
        .unwrap();
    federation.attach(&registry);
    registry.check_readiness().await;
    (federation, registry)
}

fn reader() -> Subject {
    Subject::new("acme").with_scopes(["notes:read"])
}

fn names(registry: &Registry, subject: &Subject) -> Vec<String> {
    let run = registry.open_run("list", subject);
    run.export(Profile::Mcp)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "waited 20 s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Records the progress the calls report, by tool.
#[derive(Clone, Default)]
struct Recorder;

static PROGRESS: Mutex<Vec<(String, f64, String)>> = Mutex::new(Vec::new());

impl CallHost for Recorder {
    fn progress(&self, call: &CallInfo<'_>, progress: &Progress) {
        PROGRESS.lock().unwrap().push((
            call.tool_name.to_owned(),
            progress.done,
            progress.message.clone().unwrap_or_default(),
        ));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_tools_are_listed_per_subject_with_the_files_policy() {
    let dir = Dir::new("listing");
    let lock_path = dir.path("upstreams.lock");
    let (_federation, registry) = federate(
        config(&dir, "", POLICY),
        UpstreamLock::load(&lock_path).unwrap(),
    )
    .await;

    // Every tool of the upstream needs its scope; delete_all its own.
    assert_eq!(
        names(&registry, &reader()),
        [
            "notes_die",
            "notes_echo",
            "notes_fail",
            "notes_hang",
            "notes_pictures",
            "notes_slow"
        ]
    );
    let admin = Subject::new("acme").with_scopes(["notes:admin"]);
    assert_eq!(names(&registry, &admin), ["notes_delete_all"]);
    assert!(names(&registry, &Subject::new("acme")).is_empty());
    let explained = registry
        .open_run("e", &Subject::new("acme"))
        .explain()
        .to_string();
    assert!(
        explained.contains("notes_echo: missing scopes notes:read"),
        "{explained}"
    );

    // Annotations are hints: readOnlyHint grants nothing (a read-only run sees nothing),
    // the others are shown.
    assert!(names(&registry, &reader().with_access(Access::ReadOnly)).is_empty());
    let export = registry.open_run("x", &admin).export(Profile::Mcp).unwrap();
    assert_eq!(export[0]["annotations"]["destructiveHint"], true);
    let echo = registry.get("notes_echo").unwrap();
    assert!(echo.settings().hints.idempotent);
    assert!(!echo.settings().hints.read_only);

    // Trusted on first use: the lock file pins each tool with the registry's digest.
    let lock = std::fs::read_to_string(&lock_path).unwrap();
    assert!(
        lock.contains(
            "[upstream]\nname = notes\n\n[pin]\nupstream = notes\ntool = \"delete_all\"\n"
        ) && lock.contains("[pin]\nupstream = notes\ntool = \"echo\"\n"),
        "{lock}"
    );
    let pinned = registry.lock();
    let digest = pinned
        .lines()
        .skip_while(|line| *line != "[notes_echo]")
        .find(|line| line.starts_with("definition = "))
        .unwrap();
    assert!(
        lock.contains(digest),
        "the lock pins Registry::lock's digest: {digest}"
    );

    // A file without scopes gives the upstream's default scope, never unrestricted.
    let dir2 = Dir::new("default-scope");
    let (_f, defaults) = federate(config(&dir2, "", ""), UpstreamLock::in_memory()).await;
    assert!(names(&defaults, &reader()).is_empty());
    let upstream = Subject::new("acme").with_scopes(["upstream:notes"]);
    assert_eq!(names(&defaults, &upstream).len(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_call_comes_back_intact_and_only_after_the_gate() {
    let dir = Dir::new("calls");
    let (_federation, registry) =
        federate(config(&dir, "", POLICY), UpstreamLock::in_memory()).await;
    let run = registry.open_run("r1", &reader());

    let echo = run
        .call(ToolCall::new("c1", "notes_echo", json!({"text": "hi"})))
        .await;
    assert_eq!(echo.error_kind(), None, "{:?}", echo.error_text());
    assert_eq!(echo.blocks(), [Content::text("hi")]);

    let pictures = run
        .call(ToolCall::new("c2", "notes_pictures", json!({})))
        .await;
    assert_eq!(
        pictures.blocks(),
        [
            Content::text("a picture"),
            Content::image(&b"GIF89a"[..], "image/gif"),
            ResourceLink::new("file:///notes/1", "note 1").into(),
            Content::embedded_text("file:///notes/2", "text/plain", "second note"),
        ]
    );

    let fail = run.call(ToolCall::new("c3", "notes_fail", json!({}))).await;
    assert_eq!(fail.error_kind(), Some(ErrorKind::ExecutionFailed));
    assert!(fail.error_text().unwrap().contains("disk full"));

    // Validated against the schema that was shown: nothing reaches the upstream.
    let invalid = run
        .call(ToolCall::new("c4", "notes_echo", json!({"txt": "hi"})))
        .await;
    assert_eq!(invalid.error_kind(), Some(ErrorKind::InvalidArguments));
    // Approval first: a call that needs it is not forwarded.
    let admin = registry.open_run("r2", &Subject::new("acme").with_scopes(["notes:admin"]));
    let pending = admin
        .call(ToolCall::new("c5", "notes_delete_all", json!({})))
        .await;
    assert_eq!(pending.error_kind(), Some(ErrorKind::ApprovalRequired));
    // Hidden from this subject: not forwarded either.
    let hidden = run
        .call(ToolCall::new("c6", "notes_delete_all", json!({})))
        .await;
    assert_eq!(hidden.error_kind(), Some(ErrorKind::NotAllowed));
    assert_eq!(dir.calls(), ["echo", "pictures", "fail"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_upstream_times_out_and_a_slow_one_is_told_to_stop() {
    let dir = Dir::new("timeouts");
    let (_federation, registry) =
        federate(config(&dir, "", POLICY), UpstreamLock::in_memory()).await;
    let run = registry.open_run("r1", &reader());

    let started = Instant::now();
    let hang = run.call(ToolCall::new("c1", "notes_hang", json!({}))).await;
    assert_eq!(hang.error_kind(), Some(ErrorKind::TimedOut));
    assert!(started.elapsed() < Duration::from_secs(5));

    // Progress comes back; the deadline's cancellation goes to the upstream.
    let slow = run.call(ToolCall::new("c2", "notes_slow", json!({}))).await;
    assert_eq!(slow.error_kind(), Some(ErrorKind::TimedOut));
    until("the upstream to see the cancellation", || {
        dir.path("cancelled").exists()
    })
    .await;
    let progress: Vec<f64> = PROGRESS
        .lock()
        .unwrap()
        .iter()
        .filter(|(tool, _, _)| tool == "notes_slow")
        .map(|(_, done, _)| *done)
        .collect();
    assert!(progress.starts_with(&[1.0, 2.0]), "{progress:?}");

    // The upstream still answers.
    let echo = run
        .call(ToolCall::new(
            "c3",
            "notes_echo",
            json!({"text": "still here"}),
        ))
        .await;
    assert_eq!(echo.blocks(), [Content::text("still here")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_dies_mid_call_is_unavailable_until_it_is_back() {
    let dir = Dir::new("dies");
    let (federation, registry) =
        federate(config(&dir, "", POLICY), UpstreamLock::in_memory()).await;
    let run = registry.open_run("r1", &reader());

    let started = Instant::now();
    let died = run.call(ToolCall::new("c1", "notes_die", json!({}))).await;
    assert_eq!(
        died.error_kind(),
        Some(ErrorKind::Unavailable),
        "{:?}",
        died.error_text()
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    // Its health feeds readiness: hidden from new runs, refused in open ones.
    until("the upstream to be seen down", || !federation.is_healthy()).await;
    registry.check_readiness().await;
    let echo = run
        .call(ToolCall::new("c2", "notes_echo", json!({"text": "x"})))
        .await;
    if echo.error_kind() == Some(ErrorKind::Unavailable) {
        // The usual case: refused while down.
    } else {
        // Reconnected already (the pause before reconnecting is 500 ms): it answered.
        assert_eq!(echo.blocks(), [Content::text("x")]);
    }

    // Reconnected, and compared with its pins again: served once more.
    until("the upstream to be back", || federation.is_healthy()).await;
    until("its tools to be listed again", || {
        names(&registry, &reader()).contains(&"notes_echo".to_owned())
    })
    .await;
    let back = registry.open_run("r2", &reader());
    let echo = back
        .call(ToolCall::new("c3", "notes_echo", json!({"text": "back"})))
        .await;
    assert_eq!(echo.blocks(), [Content::text("back")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_description_is_withheld_with_its_rule() {
    let dir = Dir::new("poison");
    let (federation, registry) = federate(
        config(&dir, "\"FAKE_POISON=1\", \"FAKE_SECRET=1\",", POLICY),
        UpstreamLock::in_memory(),
    )
    .await;
    let listed = names(&registry, &reader());
    assert!(!listed.contains(&"notes_lookup".to_owned()));
    assert!(!listed.contains(&"notes_token".to_owned()));
    let run = registry.open_run("r1", &reader());
    let export = run.export(Profile::Mcp).unwrap().to_string();
    assert!(!export.contains("id_rsa"));
    // Its texts are not in the registry at all.
    assert!(!registry.lock().contains("id_rsa"));

    let explained = run.explain().to_string();
    assert!(
        explained.contains("notes_lookup: not ready: withheld: refused: lint injection/"),
        "{explained}"
    );
    assert!(explained.contains("secret/api-token"), "{explained}");
    let lookup = run
        .call(ToolCall::new("c1", "notes_lookup", json!({"note": "x"})))
        .await;
    assert!(lookup.is_error());
    assert!(!dir.calls().contains(&"lookup".to_owned()));
    let withheld = federation
        .tools()
        .into_iter()
        .find(|tool| tool.name == "notes_lookup")
        .unwrap()
        .withheld;
    assert!(matches!(withheld, Some(Withheld::Refused(_))));

    // An operator may allow one tool with a reason, but never past the secret rule.
    let allowed = format!(
        "{POLICY}[upstream.tools.lookup]\nscopes = [\"notes:read\"]\nallow_description = \"reviewed: the markup is the vendor's\"\n\
         [upstream.tools.token]\nscopes = [\"notes:read\"]\nallow_description = \"we know\"\n"
    );
    let dir2 = Dir::new("poison-allowed");
    let (_f, registry) = federate(
        config(&dir2, "\"FAKE_POISON=1\", \"FAKE_SECRET=1\",", &allowed),
        UpstreamLock::in_memory(),
    )
    .await;
    let listed = names(&registry, &reader());
    assert!(listed.contains(&"notes_lookup".to_owned()));
    assert!(!listed.contains(&"notes_token".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_changed_at_run_time_is_withheld_until_accepted() {
    let dir = Dir::new("rug-pull");
    let lock_path = dir.path("upstreams.lock");
    let (federation, registry) = federate(
        config(&dir, "", POLICY),
        UpstreamLock::load(&lock_path).unwrap(),
    )
    .await;
    let before = std::fs::read_to_string(&lock_path).unwrap();
    let open = registry.open_run("open", &reader());
    let ok = open
        .call(ToolCall::new("c1", "notes_echo", json!({"text": "a"})))
        .await;
    assert_eq!(ok.error_kind(), None);

    dir.touch("change");
    until("the change to be withheld", || {
        !names(&registry, &reader()).contains(&"notes_echo".to_owned())
    })
    .await;
    // Not callable in the open run, and the upstream never sees the call.
    let refused = open
        .call(ToolCall::new("c2", "notes_echo", json!({"text": "b"})))
        .await;
    assert!(refused.is_error());
    assert_eq!(dir.calls(), ["echo"]);
    let explained = registry.open_run("e", &reader()).explain().to_string();
    assert!(
        explained.contains(
            "notes_echo: not ready: withheld: its upstream definition changed (pinned sha256:"
        ),
        "{explained}"
    );
    assert!(explained.contains(", now sha256:"), "{explained}");
    // The lock is unchanged until an operator accepts.
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), before);

    let accepted = federation.accept("notes").await.unwrap();
    assert!(accepted.contains(&"notes_echo".to_owned()));
    assert!(names(&registry, &reader()).contains(&"notes_echo".to_owned()));
    // Installed through the registry's change path: recorded.
    let change = registry.changes().pop().unwrap();
    assert_eq!(change.name, "notes_echo");
    assert!(matches!(change.kind, ChangeKind::Replaced(_)));
    let export = registry
        .open_run("after", &reader())
        .export(Profile::Mcp)
        .unwrap();
    let echo = export
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "notes_echo")
        .unwrap();
    assert_eq!(echo["description"], "Repeat the text back, louder.");
    assert_ne!(std::fs::read_to_string(&lock_path).unwrap(), before);
    let after = registry.open_run("after2", &reader());
    let ok = after
        .call(ToolCall::new("c3", "notes_echo", json!({"text": "c"})))
        .await;
    assert_eq!(ok.blocks(), [Content::text("c")]);

    // Removed upstream: revoked in open runs, never forwarded.
    dir.touch("remove");
    until("the removal", || {
        !names(&registry, &reader()).contains(&"notes_fail".to_owned())
    })
    .await;
    let removed = after
        .call(ToolCall::new("c4", "notes_fail", json!({})))
        .await;
    assert_eq!(removed.error_kind(), Some(ErrorKind::Revoked));
    // New upstream: withheld, and served only from the next start once accepted.
    dir.touch("add");
    until("the new tool to be noted", || {
        federation
            .tools()
            .iter()
            .any(|tool| tool.name == "notes_extra")
    })
    .await;
    let extra = federation
        .tools()
        .into_iter()
        .find(|tool| tool.name == "notes_extra")
        .unwrap();
    assert!(!extra.registered);
    assert!(matches!(extra.withheld, Some(Withheld::New { .. })));
    assert!(!dir.calls().contains(&"fail".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_start_a_definition_that_differs_from_its_pin_is_withheld_until_accepted() {
    let dir = Dir::new("pinned");
    let lock_path = dir.path("upstreams.lock");
    let first = Federation::connect(
        config(&dir, "", POLICY),
        UpstreamLock::load(&lock_path).unwrap(),
        &[],
    )
    .await
    .unwrap();
    drop(first);
    // The pin of echo says something else than the upstream now offers.
    let text = std::fs::read_to_string(&lock_path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = lines
        .iter()
        .position(|line| line == "tool = \"echo\"")
        .unwrap();
    lines[at + 1] = format!("definition = sha256:{}", "0".repeat(64));
    std::fs::write(&lock_path, lines.join("\n") + "\n").unwrap();

    let (federation, registry) = federate(
        config(&dir, "", POLICY),
        UpstreamLock::load(&lock_path).unwrap(),
    )
    .await;
    assert!(!names(&registry, &reader()).contains(&"notes_echo".to_owned()));
    let explained = registry.open_run("e", &reader()).explain().to_string();
    assert!(
        explained.contains(&format!("pinned sha256:{}", "0".repeat(64))),
        "{explained}"
    );
    drop((federation, registry));

    // `--accept-upstream notes`: accepted into the lock at start.
    let accepted = Federation::connect(
        config(&dir, "", POLICY),
        UpstreamLock::load(&lock_path).unwrap(),
        &["notes".to_owned()],
    )
    .await
    .unwrap();
    assert!(accepted.tools().iter().all(|tool| tool.withheld.is_none()));
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), text);

    let unknown = Federation::connect(
        config(&dir, "", POLICY),
        UpstreamLock::in_memory(),
        &["nots".to_owned()],
    )
    .await
    .unwrap_err();
    assert!(unknown.to_string().contains("no upstream named \"nots\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_cannot_start_does_not_fail_the_start_and_says_why() {
    let config = UpstreamsConfig::from_toml(
        "[[upstream]]\nname = \"gone\"\ncommand = [\"/nonexistent/upstream\"]\n\
         [[upstream]]\nname = \"mute\"\ncommand = [\"sleep\", \"30\"]\nconnect_timeout_ms = 300\n",
    )
    .unwrap();
    let started = Instant::now();
    let federation = Federation::connect(config, UpstreamLock::in_memory(), &[])
        .await
        .unwrap();
    // Both tried at once, each within its connect timeout.
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!federation.is_healthy());
    let status = federation.upstreams();
    assert_eq!(status.len(), 2);
    assert!(!status[0].connected);
    let gone = status[0].last_error.as_deref().unwrap();
    assert!(
        gone.starts_with("cannot start \"/nonexistent/upstream\""),
        "{gone}"
    );
    let mute = status[1].last_error.as_deref().unwrap();
    assert!(mute.contains("connect_timeout_ms"), "{mute}");
    // Nothing of them is known, so nothing is registered; accepting is refused.
    assert!(federation.tools().is_empty());
    let error = federation.accept("gone").await.unwrap_err();
    assert!(error.to_string().contains("not connected"), "{error}");
}

/// An upstream that answers only while `DIR/up` exists (it fails the handshake otherwise).
fn gated(dir: &Dir, more: &str) -> UpstreamsConfig {
    let text = format!(
        "[[upstream]]\nname = \"notes\"\ncommand = [\"sh\", \"-c\", {:?}]\nconnect_timeout_ms = 3000\n{more}",
        format!(
            "test -e '{dir}/up' && FAKE_DIR='{dir}' exec python3 '{script}'",
            dir = dir.0.display(),
            script = script().display()
        ),
    );
    UpstreamsConfig::from_toml(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_unreachable_at_start_is_served_once_reached_and_checked() {
    let dir = Dir::new("late");
    let lock_path = dir.path("upstreams.lock");
    // Pinned by an earlier start.
    dir.touch("up");
    let earlier = Federation::connect(
        gated(&dir, POLICY),
        UpstreamLock::load(&lock_path).unwrap(),
        &[],
    )
    .await
    .unwrap();
    assert!(earlier.is_healthy());
    drop(earlier);
    let pins = std::fs::read_to_string(&lock_path).unwrap();
    std::fs::remove_file(dir.path("up")).unwrap();

    // Down at this start: the start goes on, its pinned tools have places, none is served.
    let (federation, registry) =
        federate(gated(&dir, POLICY), UpstreamLock::load(&lock_path).unwrap()).await;
    assert!(!federation.is_healthy());
    assert!(registry.contains("notes_echo"));
    assert!(names(&registry, &reader()).is_empty());
    let run = registry.open_run("before", &reader());
    let explained = run.explain().to_string();
    assert!(
        explained.contains("notes_echo: not ready: the upstream server \"notes\" is not connected (the MCP handshake failed"),
        "{explained}"
    );
    let refused = run
        .call(ToolCall::new("c1", "notes_echo", json!({"text": "early"})))
        .await;
    assert!(refused.is_error());
    // What the registry holds meanwhile is a placeholder: none of the upstream's texts.
    assert!(!registry.lock().contains("Repeat the text back"));

    // Reached (tried again with a growing pause), compared with its pins, then served, each
    // tool installed through the registry's change path.
    dir.touch("up");
    until("the upstream to be reached", || federation.is_healthy()).await;
    until("its tools to be served", || {
        names(&registry, &reader()).contains(&"notes_echo".to_owned())
    })
    .await;
    let after = registry.open_run("after", &reader());
    let echo = after
        .call(ToolCall::new("c2", "notes_echo", json!({"text": "late"})))
        .await;
    assert_eq!(echo.blocks(), [Content::text("late")]);
    assert!(
        registry
            .changes()
            .iter()
            .any(|change| change.name == "notes_echo"
                && matches!(change.kind, ChangeKind::Replaced(_))),
        "{:?}",
        registry.changes()
    );
    // The early call never reached it; the pins are as they were.
    assert_eq!(dir.calls(), ["echo"]);
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), pins);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_never_pinned_and_unreachable_at_start_is_trusted_once_reached() {
    let dir = Dir::new("late-first");
    let lock_path = dir.path("upstreams.lock");
    // Never met: only the file names a tool of it, so only that one has a place.
    let more = "scopes = [\"notes:read\"]\n[upstream.tools.echo]\nread_only = true\n";
    let (federation, registry) =
        federate(gated(&dir, more), UpstreamLock::load(&lock_path).unwrap()).await;
    assert_eq!(
        federation
            .tools()
            .iter()
            .map(|tool| (tool.name.as_str(), tool.withheld.clone()))
            .collect::<Vec<_>>(),
        [("notes_echo", Some(Withheld::Unseen))]
    );
    dir.touch("up");
    until("echo to be served", || {
        names(&registry, &reader()) == ["notes_echo"]
    })
    .await;
    // Trusted on first use when first listed: every tool pinned, the ones without a place
    // served from the next start.
    let lock = std::fs::read_to_string(&lock_path).unwrap();
    assert!(
        lock.contains("tool = \"echo\"") && lock.contains("tool = \"pictures\""),
        "{lock}"
    );
    let pictures = federation
        .tools()
        .into_iter()
        .find(|tool| tool.name == "notes_pictures")
        .unwrap();
    assert!(!pictures.registered);
    assert_eq!(pictures.withheld, None);
    let run = registry.open_run("r", &reader());
    let echo = run
        .call(ToolCall::new("c1", "notes_echo", json!({"text": "first"})))
        .await;
    assert_eq!(echo.blocks(), [Content::text("first")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_new_at_run_time_is_served_once_accepted_without_a_restart() {
    let dir = Dir::new("new-tool");
    let lock_path = dir.path("upstreams.lock");
    // The file names `extra` before the upstream offers it: it has a place.
    let policy = format!("{POLICY}[upstream.tools.extra]\nscopes = [\"notes:read\"]\n");
    let (federation, registry) = federate(
        config(&dir, "", &policy),
        UpstreamLock::load(&lock_path).unwrap(),
    )
    .await;
    assert!(!names(&registry, &reader()).contains(&"notes_extra".to_owned()));

    dir.touch("add");
    until("the new tool to be seen", || {
        federation.tools().iter().any(|tool| {
            tool.name == "notes_extra" && matches!(tool.withheld, Some(Withheld::New { .. }))
        })
    })
    .await;
    registry.check_readiness().await;
    let run = registry.open_run("r1", &reader());
    assert!(!names(&registry, &reader()).contains(&"notes_extra".to_owned()));
    let explained = run.explain().to_string();
    assert!(
        explained.contains("notes_extra: not ready: withheld: a tool new upstream, not pinned"),
        "{explained}"
    );
    let refused = run
        .call(ToolCall::new("c1", "notes_extra", json!({})))
        .await;
    assert!(refused.is_error());
    assert!(dir.calls().is_empty());

    // An acceptance bound to other digests than those offered changes nothing.
    let offered = federation
        .tools()
        .into_iter()
        .find(|tool| tool.name == "notes_extra")
        .unwrap();
    let (definition, annotations) = (offered.definition.unwrap(), offered.annotations.unwrap());
    let zeros = format!("sha256:{}", "0".repeat(64));
    assert!(
        !federation
            .accept_offer("notes", "notes_extra", &zeros, &annotations)
            .await
            .unwrap()
    );
    assert!(!names(&registry, &reader()).contains(&"notes_extra".to_owned()));
    // Bound to the digests offered: accepted.
    assert!(
        federation
            .accept_offer("notes", "notes_extra", &definition, &annotations)
            .await
            .unwrap()
    );
    assert!(names(&registry, &reader()).contains(&"notes_extra".to_owned()));
    let served = registry.open_run("r2", &reader());
    let extra = served
        .call(ToolCall::new("c2", "notes_extra", json!({})))
        .await;
    assert_eq!(extra.blocks(), [Content::text("extra done")]);
    let change = registry
        .changes()
        .into_iter()
        .find(|change| change.name == "notes_extra")
        .expect("installed through the registry's change path");
    assert!(matches!(change.kind, ChangeKind::Replaced(_)));
    assert!(
        std::fs::read_to_string(&lock_path)
            .unwrap()
            .contains("tool = \"extra\"")
    );
    assert_eq!(dir.calls(), ["extra"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_read_again_serves_what_now_matches_its_pin_and_withholds_the_rest() {
    let dir = Dir::new("reload");
    let lock_path = dir.path("upstreams.lock");
    let (federation, registry) = federate(
        config(&dir, "", POLICY),
        UpstreamLock::load(&lock_path).unwrap(),
    )
    .await;
    let before = std::fs::read_to_string(&lock_path).unwrap();
    dir.touch("change");
    let (pinned, now) = loop {
        let echo = federation
            .tools()
            .into_iter()
            .find(|tool| tool.name == "notes_echo")
            .unwrap();
        if let Some(Withheld::Changed { pinned, now }) = echo.withheld {
            break (pinned, now);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    until("the change to be withheld", || {
        !names(&registry, &reader()).contains(&"notes_echo".to_owned())
    })
    .await;

    // The operator writes the digest the explanation names into the file, and it is read
    // again: served without a restart.
    std::fs::write(&lock_path, before.replace(&pinned, &now)).unwrap();
    federation
        .reload_lock(UpstreamLock::load(&lock_path).unwrap())
        .await
        .unwrap();
    assert!(names(&registry, &reader()).contains(&"notes_echo".to_owned()));
    let run = registry.open_run("r1", &reader());
    let echo = run
        .call(ToolCall::new("c1", "notes_echo", json!({"text": "again"})))
        .await;
    assert_eq!(echo.blocks(), [Content::text("again")]);

    // The old pin back: withheld again, in the open run too.
    std::fs::write(&lock_path, &before).unwrap();
    federation
        .reload_lock(UpstreamLock::load(&lock_path).unwrap())
        .await
        .unwrap();
    assert!(!names(&registry, &reader()).contains(&"notes_echo".to_owned()));
    let refused = run
        .call(ToolCall::new("c2", "notes_echo", json!({"text": "no"})))
        .await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::Unavailable));
    assert_eq!(dir.calls(), ["echo"]);

    // A lock that no longer names the upstream (emptied, then deleted): met before, it is
    // not trusted anew; its changed tool stays withheld, as new, and the file names the
    // upstream again.
    for lost in [false, true] {
        if lost {
            std::fs::remove_file(&lock_path).unwrap();
        } else {
            std::fs::write(&lock_path, "").unwrap();
        }
        federation
            .reload_lock(UpstreamLock::load(&lock_path).unwrap())
            .await
            .unwrap();
        assert!(!names(&registry, &reader()).contains(&"notes_echo".to_owned()));
        let echo = federation
            .tools()
            .into_iter()
            .find(|tool| tool.name == "notes_echo")
            .unwrap();
        assert!(
            matches!(echo.withheld, Some(Withheld::New { .. })),
            "{:?}",
            echo.withheld
        );
        let rewritten = std::fs::read_to_string(&lock_path).unwrap();
        assert!(
            rewritten.contains("[upstream]\nname = notes\n"),
            "{rewritten}"
        );
        assert!(!rewritten.contains(&now), "{rewritten}");
    }
    assert_eq!(dir.calls(), ["echo"]);
}

/// One `[[upstream]]` table: the fake named `name`, started with `env` in `dir`, and `more`.
fn upstream(dir: &Dir, name: &str, env: &str, more: &str) -> String {
    format!(
        "[[upstream]]\nname = {name:?}\ncommand = [\"env\", \"FAKE_DIR={}\", {env} \"python3\", {:?}]\n{more}",
        dir.0.display(),
        script().display().to_string(),
    )
}

/// The `definition` line of `upstream`'s pin of `tool` in a lock text.
fn pinned_definition(lock: &str, upstream: &str, tool: &str) -> Option<String> {
    let block = format!("upstream = {upstream}\ntool = {tool:?}\n");
    let at = lock.find(&block)? + block.len();
    lock[at..].lines().next().map(str::to_owned)
}

/// The events logged with `message`, their fields.
fn logged(message: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    tracing_support::traced()
        .lock()
        .unwrap()
        .iter()
        .filter(|event| event.fields.get("message").is_some_and(|m| m == message))
        .map(|event| event.fields.clone())
        .collect()
}

/// Whether `text` holds a byte a hostile upstream sends to forge lines or reorder text.
fn hostile(text: &str) -> bool {
    text.contains(['\0', '\n', '\u{202E}'])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_colliding_name_is_refused_and_logged_and_the_server_still_builds() {
    tracing_support::traced();
    let dir = Dir::new("collide");
    // `prefix = ""`: the upstream's `deploy` is the application's `deploy`, its
    // `search_tools` the deferred search tool's name.
    let config = UpstreamsConfig::from_toml(&upstream(
        &dir,
        "notes",
        "\"FAKE_EXTRA_TOOLS=deploy,search_tools\",",
        "prefix = \"\"\npublic = true\n",
    ))
    .unwrap();
    let federation = Federation::connect(config, UpstreamLock::in_memory(), &[])
        .await
        .unwrap();
    let local = DynamicTool::new("deploy", "Deploy the application.")
        .public()
        .handler(|_, _| Ok::<_, String>(json!("deployed here")));
    let registry = federation
        .register(Registry::builder().tool(local))
        .build()
        .expect("an upstream's name never fails the build");
    federation.attach(&registry);
    registry.check_readiness().await;
    let run = registry.open_run("r", &Subject::new("acme"));
    let deploy = run.call(ToolCall::new("c1", "deploy", json!({}))).await;
    assert_eq!(deploy.error_kind(), None, "{:?}", deploy.error_text());
    assert_eq!(deploy.value(), Some(&json!("deployed here")));
    let echo = run
        .call(ToolCall::new("c2", "echo", json!({"text": "up"})))
        .await;
    assert_eq!(echo.blocks(), [Content::text("up")]);
    assert_eq!(dir.calls(), ["echo"]);
    let upstream_names: Vec<String> = federation.tools().into_iter().map(|t| t.name).collect();
    assert!(upstream_names.contains(&"echo".to_owned()));
    assert!(!upstream_names.contains(&"deploy".to_owned()));
    assert!(!upstream_names.contains(&"search_tools".to_owned()));
    let refused = logged(
        "an upstream tool whose registry name is taken is refused; give the upstream another `prefix` to serve it",
    );
    let by = |tool: &str| {
        refused
            .iter()
            .find(|fields| fields["upstream"] == "notes" && fields["tool"] == tool)
            .map(|fields| fields["taken_by"].clone())
    };
    assert_eq!(by("deploy").as_deref(), Some("a tool of the application"));
    assert_eq!(
        by("search_tools").as_deref(),
        Some("the deferred search tool")
    );

    // `gh` + `x_search` and `gh_x` + `search` are both `gh_x_search`: the first upstream in
    // the file keeps the name, and neither overwrites the other's pin.
    let dir = Dir::new("collide-two");
    let lock_path = dir.path("upstreams.lock");
    let gh = upstream(
        &dir,
        "gh",
        "\"FAKE_EXTRA_TOOLS=x_search\",",
        "public = true\n",
    );
    let gh_x = upstream(
        &dir,
        "gh_x",
        "\"FAKE_EXTRA_TOOLS=search\",",
        "public = true\n",
    );
    let first = Federation::connect(
        UpstreamsConfig::from_toml(&gh_x).unwrap(),
        UpstreamLock::load(&lock_path).unwrap(),
        &[],
    )
    .await
    .unwrap();
    drop(first);
    let before = std::fs::read_to_string(&lock_path).unwrap();
    let pin = pinned_definition(&before, "gh_x", "search").expect("gh_x's search pinned");
    let (federation, registry) = federate(
        UpstreamsConfig::from_toml(&format!("{gh}{gh_x}")).unwrap(),
        UpstreamLock::load(&lock_path).unwrap(),
    )
    .await;
    let after = std::fs::read_to_string(&lock_path).unwrap();
    assert_eq!(
        pinned_definition(&after, "gh_x", "search").as_ref(),
        Some(&pin),
        "{after}"
    );
    let theirs = pinned_definition(&after, "gh", "x_search").expect("gh's x_search pinned");
    assert_ne!(theirs, pin);
    let run = registry.open_run("r", &Subject::new("acme"));
    let search = run
        .call(ToolCall::new("c1", "gh_x_search", json!({})))
        .await;
    assert!(
        search.is_error(),
        "the fake answers no call of an extra tool"
    );
    assert_eq!(dir.calls(), ["x_search"]);
    let gh_x_search: Vec<String> = federation
        .tools()
        .into_iter()
        .filter(|tool| tool.name == "gh_x_search")
        .map(|tool| tool.upstream)
        .collect();
    assert_eq!(gh_x_search, ["gh"]);
    assert!(logged(
        "an upstream tool whose registry name is taken is refused; give the upstream another `prefix` to serve it"
    )
    .iter()
    .any(|fields| fields["upstream"] == "gh_x"
        && fields["tool"] == "gh_x_search"
        && fields["taken_by"] == "a tool of the upstream \"gh\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_met_before_is_never_trusted_anew_when_its_pins_are_gone() {
    tracing_support::traced();
    let dir = Dir::new("retrust");
    let lock_path = dir.path("upstreams.lock");
    drop(
        Federation::connect(
            config(&dir, "", POLICY),
            UpstreamLock::load(&lock_path).unwrap(),
            &[],
        )
        .await
        .unwrap(),
    );
    // No lock file: every upstream is met for the first time, never silently.
    let here = std::thread::current().id();
    assert!(
        tracing_support::traced()
            .lock()
            .unwrap()
            .iter()
            .any(|event| event.thread == here
                && event.level == tracing::Level::WARN
                && event.target == registry_core::audit::AUDIT_TARGET
                && event.fields.get("upstream").is_some_and(|u| u == "notes")
                && event
                    .fields
                    .get("lock_file_missing")
                    .is_some_and(|m| m == "true")),
        "the first use is logged and audited, saying the lock file is missing"
    );
    // Every pin removed by hand, the upstream's block kept; meanwhile `echo` changed.
    let text = std::fs::read_to_string(&lock_path).unwrap();
    let (kept, _) = text.split_once("\n[pin]\n").unwrap();
    assert!(kept.ends_with("[upstream]\nname = notes\n"), "{kept}");
    std::fs::write(&lock_path, kept).unwrap();
    dir.touch("change");
    let (federation, registry) = federate(
        config(&dir, "", POLICY),
        UpstreamLock::load(&lock_path).unwrap(),
    )
    .await;
    assert!(!names(&registry, &reader()).contains(&"notes_echo".to_owned()));
    assert!(
        federation
            .tools()
            .iter()
            .all(|tool| matches!(tool.withheld, Some(Withheld::New { .. }))),
        "{:?}",
        federation.tools()
    );
    let lock = std::fs::read_to_string(&lock_path).unwrap();
    assert!(!lock.contains("\n[pin]\n"), "{lock}");
    // Accepted by an operator: pinned and served.
    federation.accept("notes").await.unwrap();
    assert!(names(&registry, &reader()).contains(&"notes_echo".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_annotation_only_change_is_installed() {
    let dir = Dir::new("annotations");
    let (federation, registry) = federate(
        config(&dir, "", POLICY),
        UpstreamLock::load(dir.path("upstreams.lock")).unwrap(),
    )
    .await;
    assert!(
        !registry
            .get("notes_echo")
            .unwrap()
            .settings()
            .hints
            .destructive
    );
    dir.touch("destroy");
    until("the annotation change to be withheld", || {
        federation
            .tools()
            .iter()
            .any(|tool| tool.name == "notes_echo" && tool.withheld.is_some())
    })
    .await;
    let echo = federation
        .tools()
        .into_iter()
        .find(|tool| tool.name == "notes_echo")
        .unwrap();
    assert!(
        matches!(&echo.withheld, Some(Withheld::Changed { pinned, .. }) if pinned.starts_with("annotations ")),
        "{:?}",
        echo.withheld
    );
    federation.accept("notes").await.unwrap();
    assert!(
        registry
            .get("notes_echo")
            .unwrap()
            .settings()
            .hints
            .destructive
    );
    let export = registry
        .open_run("after", &reader())
        .export(Profile::Mcp)
        .unwrap();
    let echo = export
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "notes_echo")
        .expect("served once accepted");
    assert_eq!(echo["annotations"]["destructiveHint"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_listing_is_refused_within_its_bounds() {
    let dir = Dir::new("pages");
    let started = Instant::now();
    let federation = Federation::connect(
        config(&dir, "\"FAKE_PAGES=1\",", "connect_timeout_ms = 30000\n"),
        UpstreamLock::in_memory(),
        &[],
    )
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let status = federation.upstreams();
    let reason = status[0].last_error.clone().unwrap_or_default();
    assert!(
        reason.contains("more than the 1000 tools taken from one upstream"),
        "{reason}"
    );
    assert!(federation.tools().is_empty());
    // Two pages of 1,000 read, and no more.
    let lists = std::fs::read_to_string(dir.path("lists")).unwrap();
    assert_eq!(lists.lines().count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_of_ten_mib_is_left_out_and_the_others_served() {
    let dir = Dir::new("huge");
    let (federation, registry) = federate(
        config(&dir, "\"FAKE_HUGE=1\",", POLICY),
        UpstreamLock::in_memory(),
    )
    .await;
    assert!(names(&registry, &reader()).contains(&"notes_echo".to_owned()));
    assert!(
        federation
            .tools()
            .iter()
            .all(|tool| tool.name != "notes_huge")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_list_changed_makes_a_bounded_number_of_listings() {
    let dir = Dir::new("storm");
    let (_federation, _registry) =
        federate(config(&dir, "", POLICY), UpstreamLock::in_memory()).await;
    let lists = || {
        std::fs::read_to_string(dir.path("lists"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(lists(), 1);
    let started = Instant::now();
    dir.touch("storm");
    until("the 10,000 notifications to be sent", || {
        dir.path("stormed").exists()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // At most one listing a second, and one more for the notifications of the last second.
    let bound = 2 + started.elapsed().as_secs() as usize;
    assert!(lists() <= 1 + bound, "{} listings", lists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_hostile_progress_notifications_are_coalesced_and_escaped() {
    let dir = Dir::new("chatty");
    let (_federation, registry) = federate(
        config(&dir, "\"FAKE_HOSTILE=1\",", POLICY),
        UpstreamLock::in_memory(),
    )
    .await;
    let run = registry.open_run("r", &reader());
    let started = Instant::now();
    let chatty = run
        .call(ToolCall::new("c1", "notes_chatty", json!({})))
        .await;
    assert_eq!(chatty.blocks(), [Content::text("chatted")]);
    let relayed: Vec<(f64, String)> = PROGRESS
        .lock()
        .unwrap()
        .iter()
        .filter(|(tool, _, _)| tool == "notes_chatty")
        .map(|(_, done, message)| (*done, message.clone()))
        .collect();
    // One every 100 ms at most, and the latest held back relayed before the answer.
    let most = 2 + started.elapsed().as_millis() as usize / 100;
    assert!(
        !relayed.is_empty() && relayed.len() <= most,
        "{} relayed in {:?}: {:?}",
        relayed.len(),
        started.elapsed(),
        relayed.iter().map(|(done, _)| *done).collect::<Vec<_>>()
    );
    // In order, though the upstream's notifications are handled concurrently: one older than
    // a progress taken is dropped, and relays happen under the routes' lock.
    assert!(relayed.windows(2).all(|pair| pair[0].0 < pair[1].0));
    assert!(relayed.last().unwrap().0 >= 9_000.0, "{relayed:?}");
    for (done, message) in &relayed {
        assert!(!hostile(message), "{message:?}");
        assert!(message.len() <= 4096, "{} bytes", message.len());
        // The even steps hold an API key: the lint withholds their text. Step 5,000's text
        // is 1 MiB, cut to its first 256 characters (before the key) and escaped: relayed.
        assert!(!message.contains("sk-proj"), "{message:?}");
        if *done == 5000.0 {
            assert!(
                message.starts_with("\\u{0}\\n\\u{202e}[FORGED] ") && message.ends_with("..."),
                "{message:?}"
            );
        } else if *done % 2.0 == 0.0 {
            assert_eq!(
                message,
                "(the upstream's progress message is withheld: lint secret/api-token)"
            );
        } else {
            // The odd steps' text is relayed, escaped. Which steps are relayed depends on
            // timing: under load, the first one relayed may be an even step.
            assert!(
                message.starts_with("\\u{0}\\n\\u{202e}[FORGED] "),
                "{message:?}"
            );
        }
    }
    assert!(
        relayed.iter().any(|(done, _)| *done % 2.0 == 1.0),
        "no odd step relayed: {:?}",
        relayed.iter().map(|(done, _)| *done).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_error_text_reaches_the_model_bounded_and_escaped() {
    tracing_support::traced();
    let dir = Dir::new("boom");
    let (_federation, registry) = federate(
        config(&dir, "\"FAKE_HOSTILE=1\",", POLICY),
        UpstreamLock::in_memory(),
    )
    .await;
    let run = registry.open_run("r", &reader());
    let boom = run.call(ToolCall::new("c1", "notes_boom", json!({}))).await;
    assert_eq!(boom.error_kind(), Some(ErrorKind::Unavailable));
    let text = boom.error_text().unwrap();
    assert!(!hostile(text) && !text.contains("FORGED"), "{text:?}");
    assert!(text.len() < 512, "{} bytes", text.len());
    // What the model reads.
    let message = Profile::Anthropic.render(&boom).to_string();
    assert!(
        !message.contains("FORGED") && message.len() < 1024,
        "{message}"
    );
    // The detail is in the log, bounded and escaped.
    let logged = logged("the upstream answered a call with an error");
    let error = &logged
        .iter()
        .find(|fields| fields["upstream"] == "notes" && fields["tool"] == "boom")
        .expect("the detail logged")["error"];
    assert!(!hostile(error), "{error:?}");
    assert!(error.contains("\\u{0}\\n\\u{202e}[FORGED] "), "{error}");
    assert!(error.len() < 8192, "{} bytes", error.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_error_is_bounded_and_escaped_where_it_is_shown() {
    let dir = Dir::new("list-error");
    let (federation, registry) = federate(
        config(&dir, "\"FAKE_LIST_ERROR=1\",", POLICY),
        UpstreamLock::in_memory(),
    )
    .await;
    let reason = federation.upstreams()[0].last_error.clone().unwrap();
    assert!(reason.starts_with("tools/list failed: "), "{reason}");
    assert!(
        !hostile(&reason) && reason.len() < 4096,
        "{} bytes",
        reason.len()
    );
    // The places the file names say why they are not ready: bounded, escaped.
    let explained = registry.open_run("e", &reader()).explain().to_string();
    assert!(
        explained.contains(
            "notes_hang: not ready: the upstream server \"notes\" is not connected (tools/list failed: "
        ),
        "{explained}"
    );
    assert!(
        !explained.contains(['\0', '\u{202E}']) && explained.len() < 16_384,
        "{} bytes",
        explained.len()
    );
}

/// A policy set that reads the argument `text` of `notes_echo` as a string: it holds only
/// while the tool declares `text` a string (as a Cedar policy comparing it to a string does).
#[derive(Clone)]
struct ReadsEchoText;

impl registry_core::access::AccessRule for ReadsEchoText {
    fn check(&self, _: &Subject, _: &registry_core::Tool) -> registry_core::access::Visibility {
        registry_core::access::Visibility::Visible
    }
}

impl registry_core::gate::CallPolicy for ReadsEchoText {
    fn decide(&self, _: &registry_core::gate::CallRequest<'_>) -> registry_core::gate::Decision {
        registry_core::gate::Decision::Allow
    }
}

impl registry_core::policy::PolicySet for ReadsEchoText {
    fn validate(&self, registry: &Registry) -> Result<(), Vec<String>> {
        let Some(echo) = registry.get("notes_echo") else {
            return Err(vec![
                "rule `echo-text` names notes_echo, which is not registered".into(),
            ]);
        };
        let text = &echo.definition().parameters["properties"]["text"]["type"];
        // The placeholder held before the upstream is seen declares nothing.
        if text.is_null() || text == "string" {
            Ok(())
        } else {
            Err(vec![format!(
                "rule `echo-text` reads the argument \"text\" of notes_echo as a String, which the tool now types {text}"
            )])
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_definition_a_policy_set_refuses_is_not_installed_and_stays_withheld() {
    let dir = Dir::new("policy-refused");
    let federation = Federation::connect(
        config(&dir, "\"FAKE_RETYPE=1\",", POLICY),
        UpstreamLock::in_memory(),
        &[],
    )
    .await
    .unwrap();
    let registry = federation
        .register(Registry::builder().policies(ReadsEchoText))
        .build()
        .unwrap();
    federation.attach(&registry);
    registry.check_readiness().await;
    let fingerprint = registry.get("notes_echo").unwrap().version_fingerprint();
    let ok = registry
        .open_run("before", &reader())
        .call(ToolCall::new("c1", "notes_echo", json!({"text": "a"})))
        .await;
    assert_eq!(ok.error_kind(), None);

    // The upstream retypes `text`; an operator accepts the new definition; the registry
    // refuses it, since the policy set would no longer see `text` as it reads it.
    dir.touch("change");
    until("the change to be withheld", || {
        !names(&registry, &reader()).contains(&"notes_echo".to_owned())
    })
    .await;
    let accepted = federation.accept("notes").await.unwrap();
    assert!(accepted.contains(&"notes_echo".to_owned()));
    assert!(
        !names(&registry, &reader()).contains(&"notes_echo".to_owned()),
        "the refused definition is served"
    );
    assert_eq!(
        registry.get("notes_echo").unwrap().version_fingerprint(),
        fingerprint,
        "the registry holds another version than the one it had"
    );
    assert!(
        !registry
            .changes()
            .iter()
            .any(|change| change.name == "notes_echo"),
        "{:?}",
        registry.changes()
    );
    let explained = registry.open_run("e", &reader()).explain().to_string();
    assert!(
        explained.contains("notes_echo: not ready: withheld: refused: policy: rule `echo-text`"),
        "{explained}"
    );
    let echo = federation
        .tools()
        .into_iter()
        .find(|tool| tool.name == "notes_echo")
        .unwrap();
    assert!(matches!(echo.withheld, Some(Withheld::Refused(_))));
    // Never forwarded with the new definition.
    let refused = registry
        .open_run("after", &reader())
        .call(ToolCall::new("c2", "notes_echo", json!({"text": 5})))
        .await;
    assert!(refused.is_error());
    assert_eq!(dir.calls(), ["echo"]);
}
