//! `registry-mcp` with deferred loading (`ServerOptions::with_deferred_loading`), with rmcp's
//! real client over an in-memory pipe: `tools/list` holds the loaded tools and
//! `search_tools`; calling it loads what it finds and announces it with
//! `notifications/tools/list_changed` to that client only; the next list appends the found
//! tools, the earlier entries unchanged to the byte; a found tool can be called; a hidden tool
//! is never found; and without the option nothing changes.

use crate::mcp_support;

use std::time::Duration;

use mcp_support::*;
use registry_core::{DynamicTool, Registry, RegistryBuilder, Subject, deferred::DeferredOptions};
use registry_mcp::{McpServer, ServerOptions};
use rmcp::model::{CallToolResult, Tool};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

#[derive(Clone)]
struct Notified(mpsc::UnboundedSender<()>);

impl ClientHandler for Notified {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

/// Serves `server` in this process to a client named `id` acting for `subject`, over an
/// in-memory pipe; gives the client's end.
fn pipe(server: &McpServer, id: &str, subject: Subject) -> tokio::io::DuplexStream {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    let serving = server.clone();
    let id = id.to_owned();
    tokio::spawn(async move {
        serving
            .serve_io(&id, subject, server_read, server_write)
            .await
    });
    client_io
}

/// A client of `server` named `id`, acting for `subject`, and what it hears of list changes.
async fn connect(
    server: &McpServer,
    id: &str,
    subject: Subject,
) -> (
    RunningService<RoleClient, Notified>,
    mpsc::UnboundedReceiver<()>,
) {
    let client_io = pipe(server, id, subject);
    let (sender, notified) = mpsc::unbounded_channel();
    let client = within(
        "initialize",
        Notified(sender).serve(tokio::io::split(client_io)),
    )
    .await
    .unwrap();
    (client, notified)
}

fn tool(name: &str, description: &str, scope: &str) -> DynamicTool {
    let answer = format!("{name} done");
    DynamicTool::new(name, description)
        .scopes([scope])
        .read_only()
        .handler(move |_ctx, _args| Ok::<_, String>(json!(answer)))
}

/// Build tools an `ops` subject may use, one always loaded, and a secret one it may not.
fn registry() -> Registry {
    registry_of(Registry::builder())
}

/// [`registry`]'s tools in `builder`.
fn registry_of(builder: RegistryBuilder) -> Registry {
    builder
        .tool(
            tool(
                "get_status",
                "Read the build status of a project.",
                "builds:read",
            )
            .always_loaded(),
        )
        .tool(tool(
            "list_builds",
            "List the recent builds of a project.",
            "builds:read",
        ))
        .tool(tool(
            "rollback_deploy",
            "Roll a deployment back to the previous release.",
            "deploy:write",
        ))
        .tool(tool(
            "restart_server",
            "Restart a web server that stopped answering.",
            "deploy:write",
        ))
        .tool(tool(
            "rotate_password",
            "Rotate the database password of a deployment.",
            "secrets:admin",
        ))
        .build()
        .unwrap()
}

fn ops() -> Subject {
    Subject::new("acme").with_scopes(["builds:read", "deploy:write"])
}

fn deferred_server(registry: &Registry) -> McpServer {
    let options = ServerOptions::default()
        .with_poll_interval(Duration::from_secs(3600))
        .with_deferred_loading(DeferredOptions::new().results(2));
    McpServer::new(registry.clone(), options).unwrap()
}

/// The registry, a deferred server of it, and its client `one` acting for [`ops`].
async fn start() -> (
    Registry,
    McpServer,
    RunningService<RoleClient, Notified>,
    mpsc::UnboundedReceiver<()>,
) {
    let registry = registry();
    let server = deferred_server(&registry);
    let (client, notified) = connect(&server, "one", ops()).await;
    (registry, server, client, notified)
}

fn bytes(tool: &Tool) -> String {
    serde_json::to_string(tool).unwrap()
}

/// The search answer's JSON (the text of its one block).
fn found(result: &CallToolResult) -> Value {
    serde_json::from_str(&text(result)).unwrap()
}

/// Calls `search_tools` with `query`.
async fn search(peer: &Peer<RoleClient>, query: &str) -> CallToolResult {
    call(peer, "search_tools", json!({"query": query}))
        .await
        .unwrap()
}

/// The names of the tools an answer found, best group first (its tools grouped by namespace).
fn found_names(answer: &Value) -> Vec<String> {
    answer["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|group| group["tools"].as_array().unwrap())
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_search_loads_tools_and_tells_only_the_client_that_searched() {
    let (_registry, server, client, mut notified) = start().await;
    let (other, mut other_notified) = connect(&server, "two", ops()).await;

    // The first list: the always-loaded tool and the search tool.
    let (before, _) = list_all(&client).await;
    assert_eq!(names(&before), ["get_status", "search_tools"]);
    assert_eq!(
        names(&list_all(&other).await.0),
        ["get_status", "search_tools"]
    );
    let search_tool = &before[1];
    assert!(
        search_tool
            .description
            .as_deref()
            .unwrap()
            .contains("3 more tools"),
        "{:?}",
        search_tool.description
    );
    assert_eq!(search_tool.input_schema["required"], json!(["query"]));

    // The search loads what it found, and this client hears that its list changed.
    let result = search(&client, "roll back a bad deployment").await;
    assert_eq!(result.is_error, Some(false));
    let answer = found(&result);
    let hits = found_names(&answer);
    assert_eq!(hits[0], "rollback_deploy", "{answer}");
    assert!(!hits.contains(&"rotate_password".to_owned()), "{answer}");
    // Those not listed before are loaded now.
    let listed = names(&before);
    let loaded: Vec<String> = hits
        .into_iter()
        .filter(|name| !listed.contains(name))
        .collect();
    within("list_changed", notified.recv()).await.unwrap();

    // The list again: the earlier entries unchanged to the byte, the found ones appended.
    let (after, _) = list_all(&client).await;
    assert_eq!(
        after.len(),
        before.len() + loaded.len(),
        "{:?}",
        names(&after)
    );
    for (old, new) in before.iter().zip(&after) {
        assert_eq!(bytes(old), bytes(new));
    }
    assert_eq!(names(&after[before.len()..]), loaded);

    // A found tool can be called.
    let rolled = call(&client, "rollback_deploy", json!({})).await.unwrap();
    assert_eq!(rolled.is_error, Some(false));
    assert_eq!(text(&rolled), "rollback_deploy done");

    // The same search again loads nothing new, and announces nothing.
    search(&client, "roll back a bad deployment").await;
    assert_eq!(list_all(&client).await.0.len(), after.len());

    // The other client heard nothing and still lists what it had.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        other_notified.try_recv().is_err(),
        "the other client heard of it"
    );
    assert!(
        notified.try_recv().is_err(),
        "a search that loads nothing announces nothing"
    );
    assert_eq!(
        names(&list_all(&other).await.0),
        ["get_status", "search_tools"]
    );

    within("shutdown", client.cancel()).await.unwrap();
    within("shutdown", other.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_hidden_tool_is_never_found_listed_or_called() {
    let (_registry, _server, client, mut notified) = start().await;
    for query in [
        "rotate the database password",
        "rotate_password",
        "password secrets",
    ] {
        let result = search(&client, query).await;
        let answer = text(&result);
        assert!(!answer.contains("rotate_password"), "{query}: {answer}");
        assert!(!answer.contains("Rotate the database"), "{query}: {answer}");
    }
    // Whatever those searches loaded, the hidden tool is not among it.
    while notified.try_recv().is_ok() {}
    let (tools, _) = list_all(&client).await;
    assert!(!names(&tools).contains(&"rotate_password".to_owned()));
    for tool in &tools {
        assert!(!bytes(tool).contains("rotate_password"), "{}", bytes(tool));
    }
    let refused = call(&client, "rotate_password", json!({}))
        .await
        .unwrap_err();
    assert!(!invalid_params(refused).contains("Rotate the database"));
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn an_allowed_tool_not_loaded_yet_can_be_called_and_a_bad_search_is_a_tool_error() {
    let (_registry, _server, client, _notified) = start().await;
    assert_eq!(
        names(&list_all(&client).await.0),
        ["get_status", "search_tools"]
    );
    // Never listed, but the client may use it: resolved as usual.
    let result = call(&client, "restart_server", json!({})).await.unwrap();
    assert_eq!(text(&result), "restart_server done");
    // Calling it does not load it.
    assert_eq!(
        names(&list_all(&client).await.0),
        ["get_status", "search_tools"]
    );

    let bad = call(&client, "search_tools", json!({"topic": "deploys"}))
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("\"query\""), "{}", text(&bad));
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn loaded_tools_stay_loaded_when_a_change_opens_a_new_run() {
    let (registry, server, client, mut notified) = start().await;
    list_all(&client).await;
    search(&client, "restart a web server").await;
    within("list_changed", notified.recv()).await.unwrap();
    let (loaded, _) = list_all(&client).await;
    assert!(names(&loaded).contains(&"restart_server".to_owned()));

    registry.revoke("list_builds", "retired").unwrap();
    server.check_changes().await;
    within("list_changed", notified.recv()).await.unwrap();
    let (tools, _) = list_all(&client).await;
    let tools = names(&tools);
    assert!(tools.contains(&"restart_server".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"list_builds".to_owned()), "{tools:?}");
    assert_eq!(
        tools[..2],
        ["get_status", "restart_server"].map(String::from)
    );
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn without_the_option_every_visible_tool_is_listed_and_search_tools_is_unknown() {
    let registry = registry();
    let options = ServerOptions::default().with_poll_interval(Duration::from_secs(3600));
    let server = McpServer::new(registry.clone(), options).unwrap();
    let (client, _notified) = connect(&server, "one", ops()).await;
    let (tools, _) = list_all(&client).await;
    assert_eq!(
        names(&tools),
        [
            "get_status",
            "list_builds",
            "restart_server",
            "rollback_deploy"
        ]
    );
    // Exactly the run's MCP export, as before.
    let run = registry.open_run("check", &ops());
    let export = run.export(registry_core::Profile::Mcp).unwrap();
    let listed: Vec<Value> = tools
        .iter()
        .map(|tool| serde_json::to_value(tool).unwrap())
        .collect();
    assert_eq!(Value::Array(listed), export);
    let unknown = call(&client, "search_tools", json!({"query": "deploy"}))
        .await
        .unwrap_err();
    invalid_params(unknown);
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_long_deferred_list_pages_and_keeps_its_cursor_across_a_search() {
    let mut builder = Registry::builder();
    for i in 0..5 {
        builder = builder.tool(
            DynamicTool::new(format!("base_{i}"), "One of the tools loaded first.")
                .public()
                .read_only()
                .always_loaded()
                .handler(|_ctx, _args| Ok::<_, String>(json!("ok"))),
        );
    }
    builder = builder.tool(
        DynamicTool::new("compress_archive", "Compress files into a zip archive.")
            .public()
            .read_only()
            .handler(|_ctx, _args| Ok::<_, String>(json!("ok"))),
    );
    let registry = builder.build().unwrap();
    let options = ServerOptions::default()
        .with_poll_interval(Duration::from_secs(3600))
        .with_page_size(4)
        .with_deferred_loading(DeferredOptions::new());
    let server = McpServer::new(registry, options).unwrap();
    let (client, mut notified) = connect(&server, "one", Subject::new("t")).await;
    let first = within("tools/list", client.list_tools(None)).await.unwrap();
    assert_eq!(
        names(&first.tools),
        ["base_0", "base_1", "base_2", "base_3"]
    );
    let cursor = first.next_cursor.expect("a second page");
    search(&client, "zip archive").await;
    within("list_changed", notified.recv()).await.unwrap();
    // Loading appends: the cursor still points at the same place.
    let page = rmcp::model::PaginatedRequestParams::default().with_cursor(Some(cursor));
    let second = within("tools/list", client.list_tools(Some(page)))
        .await
        .unwrap();
    assert_eq!(
        names(&second.tools),
        ["base_4", "search_tools", "compress_archive"]
    );
    assert!(second.next_cursor.is_none());
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_2026_07_28_client_hears_of_what_its_search_loaded_on_its_subscription() {
    let server = deferred_server(&registry());
    let client_io = pipe(&server, "modern", ops());
    let (client, mut subscription) = modern_client(tokio::io::split(client_io)).await;
    assert_eq!(
        names(&list_all(&client).await.0),
        ["get_status", "search_tools"]
    );
    search(&client, "restart a web server").await;
    tool_list_changed(&mut subscription).await;
    assert!(names(&list_all(&client).await.0).contains(&"restart_server".to_owned()));
    within("shutdown", client.cancel()).await.unwrap();
}

/// How long [`Slow`] takes to embed a query holding "slowly".
const BLOCK: Duration = Duration::from_millis(1500);

/// [`WordEmbedder`](registry_tests::WordEmbedder)'s vectors, taking [`BLOCK`] for a query
/// holding "slowly" (as a slow endpoint or a busy local model would), and saying when it
/// began.
struct Slow {
    began: std::sync::Arc<std::sync::Mutex<Option<std::time::Instant>>>,
    words: registry_tests::WordEmbedder,
}

impl registry_core::search::Embedder for Slow {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, registry_core::search::EmbedError> {
        if texts.iter().any(|text| text.contains("slowly")) {
            *self.began.lock().unwrap() = Some(std::time::Instant::now());
            std::thread::sleep(BLOCK);
        }
        self.words.embed(texts)
    }
}

/// While client `one`'s search waits for a slow embedder, `one` itself (whose runs the
/// search reads) and client `two` are answered at once: the embedding is made on a blocking
/// thread, with the client's lock on its runs released.
async fn a_slow_embedder_holds_no_worker_and_no_lock() {
    let began = std::sync::Arc::new(std::sync::Mutex::new(None));
    let registry = registry_of(Registry::builder().embedder(Slow {
        began: began.clone(),
        words: registry_tests::WordEmbedder::default(),
    }));
    let server = deferred_server(&registry);
    let (one, _) = connect(&server, "one", ops()).await;
    let (two, _) = connect(&server, "two", ops()).await;
    // The snapshot's vectors built, by a quick search.
    search(&one, "restart a server").await;

    let searching = {
        let peer = one.peer().clone();
        tokio::spawn(async move { search(&peer, "roll back a deployment slowly").await })
    };
    let began = within("the embedder called", async {
        loop {
            if let Some(began) = *began.lock().unwrap() {
                break began;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    // The same client lists its tools (`relist` takes its runs' lock) and calls a tool, and
    // the other client lists: all answered well within the embedder's block, counted from
    // the moment it began (a blocked worker would keep this task from even seeing that).
    let listed = list_all(&one).await.0;
    assert!(names(&listed).contains(&"search_tools".to_owned()));
    let status = call(&one, "get_status", json!({})).await.unwrap();
    assert_eq!(text(&status), "get_status done");
    assert_eq!(
        names(&list_all(&two).await.0),
        ["get_status", "search_tools"]
    );
    let waited = began.elapsed();
    assert!(
        waited < BLOCK / 3,
        "answered {waited:?} after the embedder began blocking for {BLOCK:?}"
    );
    // The search is answered once the embedder is done, by meaning and words.
    let result = within("the slow search", searching).await.unwrap();
    assert_eq!(found_names(&found(&result))[0], "rollback_deploy");
    assert!(began.elapsed() >= BLOCK);
}

#[tokio::test(flavor = "current_thread")]
async fn a_slow_embedder_blocks_no_worker_of_a_current_thread_runtime() {
    a_slow_embedder_holds_no_worker_and_no_lock().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_embedder_holds_no_lock_of_the_client() {
    a_slow_embedder_holds_no_worker_and_no_lock().await;
}

/// [`WordEmbedder`](registry_tests::WordEmbedder)'s vectors, a query holding "slowly" taking
/// 300 ms; counts how many such queries it embeds at once, and the most it did.
#[derive(Default)]
struct Counting {
    now: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    words: registry_tests::WordEmbedder,
}

/// A [`Counting`] the test keeps a handle on.
struct Shared(std::sync::Arc<Counting>);

impl registry_core::search::Embedder for Shared {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, registry_core::search::EmbedError> {
        use std::sync::atomic::Ordering;
        let counting = &self.0;
        if texts.iter().any(|text| text.contains("slowly")) {
            let now = counting.now.fetch_add(1, Ordering::SeqCst) + 1;
            counting.most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(300));
            counting.now.fetch_sub(1, Ordering::SeqCst);
        }
        counting.words.embed(texts)
    }
}

/// The most searches a server embeds at once (`EMBEDDING_SEARCHES` in registry-mcp).
const EMBEDDING_SEARCHES: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_sixteen_searches_are_embedded_at_once_and_the_rest_wait_their_turn() {
    let counting = std::sync::Arc::new(Counting::default());
    let registry = registry_of(Registry::builder().embedder(Shared(counting.clone())));
    let server = deferred_server(&registry);
    let mut clients = Vec::new();
    for n in 0..EMBEDDING_SEARCHES + 8 {
        clients.push(connect(&server, &format!("client-{n}"), ops()).await.0);
    }
    let searches: Vec<_> = clients
        .iter()
        .map(|client| {
            let peer = client.peer().clone();
            tokio::spawn(async move { search(&peer, "roll back a deployment slowly").await })
        })
        .collect();
    for searching in searches {
        let result = within("a search", searching).await.unwrap();
        assert_eq!(found_names(&found(&result))[0], "rollback_deploy");
    }
    let most = counting.most.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        (2..=EMBEDDING_SEARCHES).contains(&most),
        "{most} queries embedded at once"
    );
}
