//! The example server with `--upstreams`: an upstream MCP server of our own
//! (`upstreams/fake_upstream.py`) served beside the example tools over HTTP, per token, driven
//! with rmcp's client; and a bad upstreams file refused at start, naming the line.

mod mcp_support;

use std::path::PathBuf;

use mcp_support::*;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

use registry_examples as _;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-federation-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn script() -> PathBuf {
    workspace().join("tests/tests/upstreams/fake_upstream.py")
}

/// The example server with the development tokens, the upstreams of `file`, their lock at
/// `lock`, and `more` arguments.
async fn federating(
    file: &std::path::Path,
    lock: &std::path::Path,
    more: &[&str],
) -> ExampleServer {
    let mut args: Vec<std::ffi::OsString> = vec![
        "--tokens".into(),
        tokens_file().into(),
        "--upstreams".into(),
        file.into(),
        "--upstreams-lock".into(),
        lock.into(),
    ];
    args.extend(more.iter().map(Into::into));
    start_example(args).await
}

async fn client(
    server: &ExampleServer,
    token: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).auth_header(token),
    );
    within("initialize", ().serve(transport))
        .await
        .expect("the client connects")
}

#[tokio::test]
async fn upstream_tools_are_served_per_token_beside_the_servers_own() {
    let dir = scratch("served");
    let file = dir.join("upstreams.toml");
    std::fs::write(
        &file,
        format!(
            "[[upstream]]\nname = \"notes\"\ncommand = [\"env\", \"FAKE_DIR={}\", \"python3\", {:?}]\n\
             scopes = [\"build:read\"]\n\
             [upstream.tools.echo]\nread_only = true\n\
             [upstream.tools.delete_all]\nscopes = [\"deploy:write\"]\nneeds_approval = true\n",
            dir.display(),
            script().display().to_string()
        ),
    )
    .unwrap();
    let lock = dir.join("upstreams.lock");
    let server = federating(&file, &lock, &[]).await;

    // The read-only support bot: the example's read tools and the one upstream tool the file
    // calls read-only.
    let support = client(&server, SUPPORT_TOKEN).await;
    let (tools, _) = list_all(support.peer()).await;
    let listed = names(&tools);
    let mut expected: Vec<String> = READER_TOOLS.iter().map(|s| (*s).to_owned()).collect();
    expected.push("notes_echo".to_owned());
    expected.sort();
    assert_eq!(listed, expected);

    // The release bot: everything, the upstream's too.
    let release = client(&server, RELEASE_TOKEN).await;
    let (tools, _) = list_all(release.peer()).await;
    let listed = names(&tools);
    for name in ["deploy", "notes_delete_all", "notes_echo", "notes_pictures"] {
        assert!(listed.contains(&name.to_owned()), "{listed:?}");
    }
    let delete_all = tools.iter().find(|t| t.name == "notes_delete_all").unwrap();
    assert_eq!(
        delete_all.annotations.as_ref().unwrap().destructive_hint,
        Some(true)
    );

    let echo = call(release.peer(), "notes_echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "hi");
    let pictures = call(release.peer(), "notes_pictures", json!({}))
        .await
        .unwrap();
    let image = pictures.content[1].as_image().expect("an image block");
    assert_eq!(image.data, "R0lGODlh");
    assert_eq!(image.mime_type, "image/gif");

    // Approval before forwarding: this client cannot give it, so nothing reaches the upstream.
    let refused = call(release.peer(), "notes_delete_all", json!({}))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true));
    let calls = std::fs::read_to_string(dir.join("calls")).unwrap();
    assert_eq!(calls, "echo\npictures\n");

    // Pinned on first use.
    let pins = std::fs::read_to_string(&lock).unwrap();
    assert!(pins.contains("tool = \"delete_all\""), "{pins}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits until `done` says yes about the tools `peer` lists, asking every 50 ms.
async fn until_listed(
    peer: &rmcp::service::Peer<rmcp::RoleClient>,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) {
    let start = std::time::Instant::now();
    loop {
        let (tools, _) = list_all(peer).await;
        if done(&names(&tools)) {
            return;
        }
        assert!(
            start.elapsed() < STEP,
            "waited for {what}: {:?}",
            names(&tools)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The value of `key=` in the last line of `lines` that holds `needle`.
fn logged(server: &ExampleServer, needle: &str, key: &str) -> Option<String> {
    let lines = server.lines.lock().unwrap();
    let line = lines.iter().rev().find(|line| line.contains(needle))?;
    let at = line.find(&format!("{key}="))? + key.len() + 1;
    let value: String = line[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    Some(value.trim_matches('"').to_owned())
}

#[tokio::test]
async fn an_operator_accepts_at_run_time_with_the_lock_file_and_sighup_and_a_late_upstream_is_served_once_reached()
 {
    let dir = scratch("accept");
    let late = dir.join("late");
    std::fs::create_dir_all(&late).unwrap();
    let file = dir.join("upstreams.toml");
    std::fs::write(
        &file,
        format!(
            "[[upstream]]\nname = \"notes\"\ncommand = [\"env\", \"FAKE_DIR={dir}\", \"python3\", {script:?}]\n\
             scopes = [\"build:read\"]\n\
             [[upstream]]\nname = \"late\"\ncommand = [\"sh\", \"-c\", {gated:?}]\n\
             scopes = [\"build:read\"]\n[upstream.tools.echo]\nread_only = true\n",
            dir = dir.display(),
            script = script().display().to_string(),
            gated = format!(
                "test -e '{late}/up' && FAKE_DIR='{late}' exec python3 '{script}'",
                late = late.display(),
                script = script().display()
            ),
        ),
    )
    .unwrap();
    let lock = dir.join("upstreams.lock");
    let server = federating(&file, &lock, &[]).await;

    // `late` could not be reached: the server started anyway, and serves nothing of it.
    let release = client(&server, RELEASE_TOKEN).await;
    let (tools, _) = list_all(release.peer()).await;
    let listed = names(&tools);
    assert!(listed.contains(&"notes_echo".to_owned()), "{listed:?}");
    assert!(!listed.contains(&"late_echo".to_owned()), "{listed:?}");
    assert!(
        logged(&server, "upstream unreachable", "upstream").as_deref() == Some("late"),
        "{:?}",
        server.lines.lock().unwrap()
    );
    // Hidden, so unknown to this client: never forwarded.
    let early = call(release.peer(), "late_echo", json!({"text": "early"}))
        .await
        .unwrap_err();
    assert!(
        early.to_string().contains("unknown tool \"late_echo\""),
        "{early}"
    );
    // Reached: the tool the file names is served, trusted on first use.
    std::fs::write(late.join("up"), b"").unwrap();
    until_listed(release.peer(), "late_echo", |listed| {
        listed.contains(&"late_echo".to_owned())
    })
    .await;
    let echo = call(release.peer(), "late_echo", json!({"text": "late"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "late");
    assert_eq!(
        std::fs::read_to_string(late.join("calls")).unwrap(),
        "echo\n"
    );

    // A rug pull on `notes`: withheld.
    std::fs::write(dir.join("change"), b"").unwrap();
    until_listed(release.peer(), "notes_echo withheld", |listed| {
        !listed.contains(&"notes_echo".to_owned())
    })
    .await;
    let old = logged(
        &server,
        "upstream tool definition changed",
        "old_definition",
    )
    .unwrap();
    let new = logged(
        &server,
        "upstream tool definition changed",
        "new_definition",
    )
    .unwrap();
    assert!(new.starts_with("sha256:") && new != old, "{old} {new}");

    // The operator writes the new digest into the lock and sends SIGHUP: served again,
    // without a restart.
    let pinned = std::fs::read_to_string(&lock).unwrap();
    assert!(pinned.contains(&old));
    std::fs::write(&lock, pinned.replace(&old, &new)).unwrap();
    let pid = logged(&server, "on SIGHUP", "pid").expect("the server names its pid");
    let status = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    until_listed(release.peer(), "notes_echo served again", |listed| {
        listed.contains(&"notes_echo".to_owned())
    })
    .await;
    let (tools, _) = list_all(release.peer()).await;
    let echo = tools.iter().find(|tool| tool.name == "notes_echo").unwrap();
    assert_eq!(
        echo.description.as_deref(),
        Some("Repeat the text back, louder.")
    );
    let echo = call(release.peer(), "notes_echo", json!({"text": "accepted"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "accepted");
    assert_eq!(
        std::fs::read_to_string(dir.join("calls")).unwrap(),
        "echo\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `registry-admin --database URL args...` to completion.
async fn admin(url: &str, args: &[&str]) -> std::process::Output {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let binary = BINARY.get_or_init(|| package_binary("registry-postgres", "registry-admin"));
    let mut command = tokio::process::Command::new(binary);
    command.arg("--database").arg(url).args(args);
    within("registry-admin", command.output())
        .await
        .expect("registry-admin runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_admin_accepts_an_upstream_change_on_every_replica() {
    let dir = scratch("admin");
    let file = dir.join("upstreams.toml");
    std::fs::write(
        &file,
        format!(
            "[[upstream]]\nname = \"notes\"\ncommand = [\"env\", \"FAKE_DIR={}\", \"python3\", {:?}]\n\
             scopes = [\"build:read\"]\n",
            dir.display(),
            script().display().to_string()
        ),
    )
    .unwrap();
    let url = tokio::task::spawn_blocking(|| {
        registry_postgres::throwaway::Cluster::shared()?.fresh_database("federation")
    })
    .await
    .unwrap()
    .expect("a throwaway PostgreSQL cluster (initdb, pg_ctl)");
    // Built before the replicas start, so that no wait below includes a build.
    assert!(admin(&url, &["upstream", "list"]).await.status.success());
    let mut replicas = Vec::new();
    let mut clients = Vec::new();
    for name in ["a", "b"] {
        let lock = dir.join(format!("{name}.lock"));
        let server = federating(&file, &lock, &["--postgres", &url, "--replica", name]).await;
        clients.push(client(&server, RELEASE_TOKEN).await);
        replicas.push(server);
    }
    for client in &clients {
        until_listed(client.peer(), "notes_echo", |listed| {
            listed.contains(&"notes_echo".to_owned())
        })
        .await;
    }

    // A rug pull, seen by both replicas' upstreams: withheld on both, and reported.
    std::fs::write(dir.join("change"), b"").unwrap();
    for client in &clients {
        until_listed(client.peer(), "notes_echo withheld", |listed| {
            !listed.contains(&"notes_echo".to_owned())
        })
        .await;
    }
    let start = std::time::Instant::now();
    let offers = loop {
        let output = admin(&url, &["upstream", "list", "notes", "--json"]).await;
        assert!(output.status.success());
        let offers: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        if offers.len() == 2 {
            break offers;
        }
        assert!(start.elapsed() < STEP, "both replicas report: {offers:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(offers[0]["tool"], "notes_echo");
    assert_eq!(
        (&offers[0]["replica"], &offers[1]["replica"]),
        (&json!("a"), &json!("b"))
    );
    assert_eq!(offers[0]["definition"], offers[1]["definition"]);
    let digest = offers[0]["definition"].as_str().unwrap().to_owned();
    assert!(
        offers[0]["withheld"]
            .as_str()
            .unwrap()
            .contains("its upstream definition changed"),
        "{offers:?}"
    );

    // The definition itself is shown for review.
    let offered = offers[0]["offered"].as_str().unwrap_or_default();
    assert!(offered.contains("\"name\":\"echo\""), "{offers:?}");

    // A lock as it was before: a replica started with it later must catch up.
    let stale = dir.join("c.lock");
    std::fs::copy(dir.join("a.lock"), &stale).unwrap();

    // The digest reviewed before the rug pull (the pinned one) is no longer offered: refused,
    // nothing accepted. The upstream's own name is not the registry's.
    let pinned = std::fs::read_to_string(&stale).unwrap();
    let pinned = pinned
        .lines()
        .find_map(|line| line.strip_prefix("definition = "))
        .expect("a pinned definition")
        .trim_matches('"')
        .to_owned();
    assert_ne!(pinned, digest);
    for args in [
        vec!["upstream", "accept", "notes", "--digest", pinned.as_str()],
        vec![
            "upstream",
            "accept",
            "notes",
            "--tool",
            "echo",
            "--digest",
            digest.as_str(),
        ],
    ] {
        let refused = admin(&url, &args).await;
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success(), "{args:?}: {stderr}");
        assert!(
            stderr.contains("nothing was accepted"),
            "{args:?}: {stderr}"
        );
    }

    // One acceptance, of exactly the digest reviewed; every replica serves the tool again.
    let accepted = admin(&url, &["upstream", "accept", "notes", "--digest", &digest]).await;
    let stdout = String::from_utf8_lossy(&accepted.stdout);
    assert!(
        accepted.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&accepted.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "recorded acceptance #1: notes_echo of upstream notes (definition {digest}"
        )),
        "{stdout}"
    );
    for (client, name) in clients.iter().zip(["a", "b"]) {
        until_listed(client.peer(), "notes_echo accepted", |listed| {
            listed.contains(&"notes_echo".to_owned())
        })
        .await;
        let echo = call(client.peer(), "notes_echo", json!({"text": name}))
            .await
            .unwrap();
        assert_eq!(text(&echo), name);
        let lock = std::fs::read_to_string(dir.join(format!("{name}.lock"))).unwrap();
        assert!(lock.contains(&format!("definition = {digest}")), "{lock}");
    }
    // Nothing withheld any more: nothing to accept, and it says so.
    let start = std::time::Instant::now();
    loop {
        let again = admin(&url, &["upstream", "accept", "notes", "--digest", &digest]).await;
        if !again.status.success() {
            let stderr = String::from_utf8_lossy(&again.stderr);
            assert!(
                stderr.contains("no live replica offers upstream \"notes\""),
                "{stderr}"
            );
            break;
        }
        // A report not yet renewed: accepting the same digests again changes nothing.
        assert!(start.elapsed() < STEP);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // A replica started after the acceptance, with the lock from before it: its upstream's
    // definition differs from its pin, and the acceptance recorded earlier serves it.
    let late = federating(&file, &stale, &["--postgres", &url, "--replica", "c"]).await;
    let c = client(&late, RELEASE_TOKEN).await;
    until_listed(c.peer(), "notes_echo on the late replica", |listed| {
        listed.contains(&"notes_echo".to_owned())
    })
    .await;
    let lock = std::fs::read_to_string(&stale).unwrap();
    assert!(lock.contains(&format!("definition = {digest}")), "{lock}");
    drop((c, late, clients, replicas));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_upstreams_file_is_refused_naming_the_line_and_the_fix() {
    let dir = scratch("bad");
    let file = dir.join("upstreams.toml");
    std::fs::write(
        &file,
        "[[upstream]]\nname = \"notes\"\ncommand = [\"python3\", \"notes.py\"]\nscope = [\"notes:read\"]\n",
    )
    .unwrap();
    let output = std::process::Command::new(server_binary())
        .args(["--upstreams".as_ref(), file.as_os_str()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{}:4: unknown field `scope`", file.display())),
        "{stderr}"
    );
    assert!(stderr.contains("correct its spelling"), "{stderr}");

    let output = std::process::Command::new(server_binary())
        .args(["--accept-upstream", "notes"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("need --upstreams FILE"));
    let _ = std::fs::remove_dir_all(&dir);
}
