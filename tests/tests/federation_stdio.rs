//! Issue 44, item 1 (review findings N1, N14 and L13's argv): a stdio upstream gets an
//! environment of its own. The example server runs with secrets in its environment (another
//! upstream's `token_env`, `DATABASE_URL` with a password, `PGPASSWORD`,
//! `AWS_SECRET_ACCESS_KEY`) and with its control plane on a throwaway PostgreSQL cluster; its
//! stdio upstream (`upstreams/fake_upstream.py` with `FAKE_REPORT`) writes down what it sees:
//! its environment, its working directory, its parent's command line. None of the secrets is
//! there; its table's `env` and `pass_env` are; it runs in a directory of its own, empty; and
//! the hostile bytes it writes to its stderr reach the server's log escaped and bounded. A
//! database URL with a password is refused on either program's command line.

mod mcp_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp_support::*;
use serde_json::Value;

use registry_examples as _;

const REMOTE_TOKEN: &str = "remote-t0ken-s3cret";
const DB_PASSWORD: &str = "db-pa55word-s3cret";
const PG_PASSWORD: &str = "pg-pa55word-s3cret";
const AWS_SECRET: &str = "aws-s3cret-access-key";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("federation-stdio-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn script() -> PathBuf {
    workspace().join("tests/tests/upstreams/fake_upstream.py")
}

/// The throwaway cluster's database `name`, its URL given a password (the cluster trusts
/// loopback, so any password connects).
async fn database_with_password(name: &'static str) -> String {
    let url = tokio::task::spawn_blocking(move || {
        registry_postgres::throwaway::Cluster::shared()?.fresh_database(name)
    })
    .await
    .unwrap()
    .expect("a throwaway PostgreSQL cluster (initdb, pg_ctl)");
    let with_password = url.replacen("postgres@", &format!("postgres:{DB_PASSWORD}@"), 1);
    assert_ne!(with_password, url, "{url}");
    with_password
}

async fn until_file(path: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        assert!(start.elapsed() < STEP, "{} never written", path.display());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The server's log lines that hold `needle`, once there is one.
async fn until_logged(server: &ExampleServer, needle: &str) -> Vec<String> {
    let start = Instant::now();
    loop {
        let found: Vec<String> = server
            .lines
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line.contains(needle))
            .cloned()
            .collect();
        if !found.is_empty() {
            return found;
        }
        assert!(start.elapsed() < STEP, "nothing logged with {needle:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_upstream_sees_no_secret_of_the_server_and_none_of_its_files() {
    let dir = scratch("secrets");
    // The server's working directory, with the files a child must not find there.
    let home = dir.join("server");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("state.key"), "5f".repeat(32)).unwrap();
    let report = dir.join("report.json");
    std::fs::write(
        home.join("upstreams.toml"),
        format!(
            "[[upstream]]\nname = \"remote\"\nurl = \"http://127.0.0.1:9/mcp\"\ntoken_env = \"REMOTE_TOKEN\"\n\
             [[upstream]]\nname = \"notes\"\ncommand = [\"python3\", {script:?}]\n\
             env = {{ FAKE_DIR = {dir:?}, FAKE_REPORT = {report:?}, NOTES_MODE = \"literal-value\" }}\n\
             pass_env = [\"NOTES_PASSED\"]\nscopes = [\"build:read\"]\n",
            script = script().display().to_string(),
            dir = dir.display().to_string(),
            report = report.display().to_string(),
        ),
    )
    .unwrap();
    let database = database_with_password("stdio_secrets").await;
    let server = start_example_with(
        [
            "--tokens",
            tokens_file().to_str().unwrap(),
            "--request-state-key-file",
            "state.key",
            "--upstreams",
            "upstreams.toml",
            "--replica",
            "stdio",
        ],
        |command| {
            command
                .current_dir(&home)
                .env("REMOTE_TOKEN", REMOTE_TOKEN)
                .env("DATABASE_URL", &database)
                .env("PGPASSWORD", PG_PASSWORD)
                .env("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
                .env("NOTES_PASSED", "passed-on-purpose");
        },
    )
    .await;

    let text = until_file(&report).await;
    let seen: Value = serde_json::from_str(&text).unwrap();
    // What it read is the server's command line, and nothing it can read holds a secret.
    let cmdline = seen["parent_cmdline"].as_str().unwrap();
    assert!(cmdline.contains("--upstreams upstreams.toml"), "{cmdline}");
    for secret in [REMOTE_TOKEN, DB_PASSWORD, PG_PASSWORD, AWS_SECRET] {
        assert!(
            !text.contains(secret),
            "{secret} reached the upstream: {text}"
        );
    }
    let env = seen["env"].as_object().unwrap();
    for name in [
        "REMOTE_TOKEN",
        "DATABASE_URL",
        "PGPASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "CARGO_MANIFEST_DIR",
    ] {
        assert!(
            !env.contains_key(name),
            "{name} reached the upstream: {env:?}"
        );
    }
    // Its table's `env` and `pass_env`, and the base.
    assert_eq!(env["NOTES_MODE"], "literal-value");
    assert_eq!(env["NOTES_PASSED"], "passed-on-purpose");
    assert_eq!(env["FAKE_REPORT"], report.display().to_string());
    assert!(env.contains_key("PATH"), "{env:?}");
    // A directory of its own, not the server's, holding none of its files.
    let cwd = PathBuf::from(seen["cwd"].as_str().unwrap());
    assert_ne!(cwd, home);
    assert!(!cwd.starts_with(&home), "{}", cwd.display());
    assert_eq!(seen["cwd_holds"], serde_json::json!([]), "{text}");

    // Its stderr: in the server's log, escaped, one event a line, bounded.
    let hostile = until_logged(&server, "hostile").await;
    assert!(
        hostile[0].contains("upstream stderr")
            && hostile[0].contains("upstream=notes")
            // Escaped by the upstream's reader (`\u{0}`), under any subscriber; the text
            // format quotes the value and escapes that backslash once more.
            && hostile[0].contains("\\u{0}NUL"),
        "{hostile:?}"
    );
    let forged = until_logged(&server, "FORGED").await;
    assert!(
        forged[0].contains("upstream stderr") && forged[0].contains("\\u{202e}eulav"),
        "{forged:?}"
    );
    assert!(
        !forged[0].starts_with("1999-01-01T00:00:00"),
        "a line of its own: {forged:?}"
    );
    let long = until_logged(&server, "xxxxxxxxxx").await;
    assert!(long[0].contains("truncated"), "{}", &long[0][..200]);
    assert!(long[0].len() < 4096, "{} bytes logged", long[0].len());
    let lines = server.lines.lock().unwrap();
    for line in lines.iter() {
        assert!(
            !line.contains('\0') && !line.contains('\u{202E}'),
            "raw: {line:?}"
        );
    }
    drop(lines);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the example server to its exit with `args`, and the environment variable
/// `DATABASE_URL` removed: its exit code and stderr.
async fn refused(args: &[&str]) -> (Option<i32>, String) {
    let output = within(
        "the server refuses",
        tokio::process::Command::new(server_binary())
            .args(args)
            .env_remove("DATABASE_URL")
            .stdin(std::process::Stdio::null())
            .output(),
    )
    .await
    .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_password_never_has_to_go_on_a_command_line() {
    let dir = scratch("argv");
    let database = database_with_password("stdio_argv").await;

    // On the example server's command line: refused, saying where it goes, not echoed.
    let (code, stderr) = refused(&["--http", "127.0.0.1:0", "--postgres", &database]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("DATABASE_URL") && stderr.contains("--postgres-url-file"),
        "{stderr}"
    );
    assert!(!stderr.contains(DB_PASSWORD), "{stderr}");

    // In a file: the server connects and serves.
    let file = dir.join("database.url");
    std::fs::write(&file, format!("{database}\n")).unwrap();
    let server = start_example([
        "--tokens",
        tokens_file().to_str().unwrap(),
        "--postgres-url-file",
        file.to_str().unwrap(),
        "--replica",
        "from-file",
    ])
    .await;
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    drop(server);
    let (code, stderr) =
        refused(&["--postgres-url-file", dir.join("missing").to_str().unwrap()]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--postgres-url-file: cannot read"),
        "{stderr}"
    );

    // registry-admin: the same rule.
    let admin = package_binary("registry-postgres", "registry-admin");
    let output = tokio::process::Command::new(&admin)
        .args(["--database", &database, "changes"])
        .env_remove("DATABASE_URL")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("DATABASE_URL") && stderr.contains("--database-url-file"),
        "{stderr}"
    );
    assert!(!stderr.contains(DB_PASSWORD), "{stderr}");
    for (flag, value) in [("--database-url-file", file.to_str().unwrap())] {
        let output = tokio::process::Command::new(&admin)
            .args([flag, value, "changes"])
            .env_remove("DATABASE_URL")
            .output()
            .await
            .unwrap();
        assert!(output.status.success(), "{output:?}");
    }
    let output = tokio::process::Command::new(&admin)
        .arg("changes")
        .env("DATABASE_URL", &database)
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
