//! The published reference server `@modelcontextprotocol/server-everything` (npm, pinned in
//! `upstreams/package.json` and `package-lock.json`, installed with `npm ci` on the first
//! run) federated into the registry, over stdio and over streamable HTTP: its tools listed per subject, called through the gate, their
//! content (text, an image) intact.

mod upstreams;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use registry_core::content::Content;
use registry_core::{ErrorKind, Profile, Registry, Subject, ToolCall};
use registry_mcp::upstream::{Federation, UpstreamLock, UpstreamsConfig};
use serde_json::json;

use registry_examples as _;

/// The server's entry point, installed (`npm ci`, the versions of the lock file) once.
fn everything() -> PathBuf {
    upstreams::installed("@modelcontextprotocol/server-everything/dist/index.js")
}

async fn federate(text: &str) -> (Federation, Registry) {
    let config = UpstreamsConfig::from_toml(text).unwrap();
    let federation = Federation::connect(config, UpstreamLock::in_memory(), &[])
        .await
        .unwrap();
    let registry = federation.register(Registry::builder()).build().unwrap();
    federation.attach(&registry);
    registry.check_readiness().await;
    (federation, registry)
}

async fn exercise(registry: &Registry) {
    let subject = Subject::new("acme").with_scopes(["demo:read"]);
    let run = registry.open_run("r1", &subject);
    let listed: Vec<String> = run
        .export(Profile::Mcp)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    for name in [
        "everything_echo",
        "everything_get-sum",
        "everything_get-tiny-image",
    ] {
        assert!(
            listed.contains(&name.to_owned()),
            "{listed:?}\n{}",
            run.explain()
        );
    }
    // Without the scope the file gives, nothing of it.
    let nobody = registry.open_run("r0", &Subject::new("acme"));
    assert!(
        nobody
            .export(Profile::Mcp)
            .unwrap()
            .as_array()
            .unwrap()
            .is_empty()
    );

    let echo = run
        .call(ToolCall::new(
            "c1",
            "everything_echo",
            json!({"message": "hello"}),
        ))
        .await;
    assert_eq!(echo.blocks(), [Content::text("Echo: hello")]);
    let sum = run
        .call(ToolCall::new(
            "c2",
            "everything_get-sum",
            json!({"a": 1, "b": 2}),
        ))
        .await;
    assert_eq!(sum.blocks()[0].as_text(), Some("The sum of 1 and 2 is 3."));
    // Validated against the schema it listed, before anything is forwarded.
    let invalid = run
        .call(ToolCall::new(
            "c3",
            "everything_get-sum",
            json!({"a": "one"}),
        ))
        .await;
    assert_eq!(invalid.error_kind(), Some(ErrorKind::InvalidArguments));
    let image = run
        .call(ToolCall::new("c4", "everything_get-tiny-image", json!({})))
        .await;
    let png = image
        .blocks()
        .iter()
        .find_map(|block| match block {
            Content::Image(media) => Some(media.clone()),
            _ => None,
        })
        .expect("an image block");
    assert_eq!(png.mime_type(), "image/png");
    assert!(png.data().starts_with(b"\x89PNG"), "the bytes of a PNG");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_over_stdio_is_served_through_the_gate() {
    let text = format!(
        "[[upstream]]\nname = \"everything\"\ncommand = [\"node\", {:?}, \"stdio\"]\nscopes = [\"demo:read\"]\nconnect_timeout_ms = 30000\n",
        everything().display().to_string()
    );
    let (_federation, registry) = federate(&text).await;
    exercise(&registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_over_streamable_http_is_served_through_the_gate() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = tokio::process::Command::new("node")
        .args([everything().as_os_str(), "streamableHttp".as_ref()])
        .env("PORT", port.to_string())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let start = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the server listens"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A token from an environment variable that is not set: refused at start, naming it.
    let with_token = format!(
        "[[upstream]]\nname = \"everything\"\nurl = \"http://127.0.0.1:{port}/mcp\"\ntoken_env = \"REGISTRY_TESTS_UNSET_TOKEN\"\nscopes = [\"demo:read\"]\n"
    );
    let config = UpstreamsConfig::from_toml(&with_token).unwrap();
    let error = Federation::connect(config, UpstreamLock::in_memory(), &[])
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("REGISTRY_TESTS_UNSET_TOKEN (its token_env) is not set"),
        "{error}"
    );
    let text = format!(
        "[[upstream]]\nname = \"everything\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nscopes = [\"demo:read\"]\nconnect_timeout_ms = 30000\n"
    );
    let (_federation, registry) = federate(&text).await;
    exercise(&registry).await;
    server.kill().await.unwrap();
}
