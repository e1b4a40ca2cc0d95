//! Search by meaning: an `Embedder` given to the registry, fused with the lexical ranking.
//!
//! - a tool no word of the query names is found by meaning; one the words find stays first;
//! - tools are embedded once per snapshot, the query once per search;
//! - only the allowed set is searched, and hidden tools change no score;
//! - an embedder that fails leaves search lexical, exactly;
//! - `OpenAiEmbedder` (feature `openai-embeddings`) against an OpenAI-compatible endpoint on
//!   loopback, over real HTTP: what it sends, what it reads, and its failures.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use registry_core::search::{EmbedError, Embedder, SearchHit};
use registry_core::{DynamicTool, Registry, RegistryBuilder, Subject};
use registry_tests::{SharedEmbedder, WordEmbedder};
use serde_json::{Value, json};

fn tool(name: &str, description: &str) -> DynamicTool {
    DynamicTool::new(name, description)
        .public()
        .handler(|_ctx, _args| Ok::<_, String>(Value::Null))
}

fn tools() -> Vec<DynamicTool> {
    vec![
        tool("delete_record", "Delete a record from the table."),
        tool("read_record", "Read one record of the table."),
        tool("send_message", "Send a message to a channel."),
        tool("create_invoice", "Create an invoice for a customer."),
        tool("get_forecast", "The weather forecast of a city."),
        tool("deploy_service", "Deploy a service to production."),
        DynamicTool::new("deploy_admin", "Deploy the admin console.")
            .scopes(["admin"])
            .handler(|_ctx, _args| Ok::<_, String>(Value::Null)),
    ]
}

/// The tools above, in a registry of `builder`.
fn registry(builder: RegistryBuilder) -> Registry {
    tools()
        .into_iter()
        .fold(builder, RegistryBuilder::tool)
        .build()
        .expect("the tools build")
}

fn names(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(SearchHit::name).collect()
}

fn scored(hits: &[SearchHit]) -> Vec<(String, f64, Option<f32>)> {
    hits.iter()
        .map(|hit| (hit.name().to_owned(), hit.score(), hit.similarity()))
        .collect()
}

#[test]
fn meaning_finds_what_words_do_not() {
    let lexical = registry(Registry::builder());
    let embedded = registry(Registry::builder().embedder(WordEmbedder::default()));
    let subject = Subject::new("acme");
    let (lexical, embedded) = (
        lexical.open_run("l", &subject),
        embedded.open_run("e", &subject),
    );

    // No tool has "zorp" or "umbrella", nor a word related to them: lexically nothing; by meaning, the right tool first.
    assert!(lexical.search("zorp it", 3).is_empty());
    let found = embedded.search("zorp it", 3);
    assert_eq!(found[0].name(), "delete_record", "{:?}", names(&found));
    assert!(found[0].similarity().unwrap() > 0.0);
    assert_eq!(
        found[0].coverage(),
        0.0,
        "no word of the query is the tool's"
    );
    assert_eq!(
        embedded.search("do I need an umbrella", 1)[0].name(),
        "get_forecast"
    );

    // Where the words find it, it stays first, and its coverage says so.
    let found = embedded.search("send a message", 3);
    assert_eq!(found[0].name(), "send_message");
    assert_eq!(found[0].coverage(), 1.0);
    assert_eq!(
        lexical.search("send a message", 3)[0].name(),
        "send_message"
    );

    // Deterministic: the same search, the same hits and scores.
    assert_eq!(
        scored(&found),
        scored(&embedded.search("send a message", 3))
    );
}

/// A model that disagrees with the words: it puts the query "send a message" next to
/// `create_invoice` alone, every other tool at similarity 0 (ranked among themselves by
/// slot, so `send_message`, last by name, comes last); its ranking counts `self.0`.
struct Disagrees(f64);

impl Embedder for Disagrees {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.0; 8];
                let at = if text.starts_with("create invoice") || *text == "send a message" {
                    0
                } else {
                    1 + text.len() % 7
                };
                vector[at] = 1.0;
                vector
            })
            .collect())
    }

    fn weight(&self) -> f64 {
        self.0
    }
}

#[test]
fn an_embedders_weight_sets_how_much_its_ranking_counts() {
    let search = |weight: f64| {
        let registry = registry(Registry::builder().embedder(Disagrees(weight)));
        let run = registry.open_run("r", &Subject::new("acme"));
        scored(&run.search("send a message", 6))
    };
    // Weight 1: the words' first (`send_message`: 1/11, and 1/16 as the model's last of
    // six) before the model's first (`create_invoice`: 1/11).
    let even = search(1.0);
    assert_eq!(even[0].0, "send_message", "{even:?}");
    assert!(
        (even[0].1 - (1.0 / 11.0 + 1.0 / 16.0)).abs() < 1e-12,
        "{even:?}"
    );
    let invoice = even.iter().find(|hit| hit.0 == "create_invoice").unwrap();
    assert!((invoice.1 - 1.0 / 11.0).abs() < 1e-12, "{even:?}");
    // Weight 4: the model's first (4/11) before the words' (1/11 + 4/16).
    let strong = search(4.0);
    assert_eq!(strong[0].0, "create_invoice", "{strong:?}");
    assert!((strong[0].1 - 4.0 / 11.0).abs() < 1e-12, "{strong:?}");
    assert_eq!(strong[1].0, "send_message", "{strong:?}");
    // A weight that is not a positive finite number counts as 1.
    for odd in [0.0, -2.0, f64::NAN, f64::INFINITY] {
        assert_eq!(search(odd), even, "weight {odd}");
    }
}

#[test]
fn tools_are_embedded_once_per_snapshot_and_the_query_once_per_search() {
    let shared = SharedEmbedder::default();
    let counter = Arc::clone(&shared.0);
    let registry = registry(Registry::builder().embedder(shared));
    let run = registry.open_run("r", &Subject::new("acme"));
    assert_eq!(
        counter.calls.load(Ordering::Relaxed),
        0,
        "nothing before a search"
    );
    let _ = run.search("ship it", 5);
    // One batch of the snapshot's 7 tools (hidden ones too: the vectors are the snapshot's),
    // then the query.
    assert_eq!(counter.calls.load(Ordering::Relaxed), 2);
    assert_eq!(counter.texts.load(Ordering::Relaxed), 8);
    let other = registry.open_run("r2", &Subject::new("beta").with_scopes(["admin"]));
    let _ = other.search("ship it", 5);
    let _ = run.search("bill the customer", 5);
    assert_eq!(
        counter.calls.load(Ordering::Relaxed),
        4,
        "one call per search since"
    );
    assert_eq!(counter.texts.load(Ordering::Relaxed), 10);
}

#[test]
fn prepare_search_embeds_the_catalog_before_the_first_search() {
    let shared = SharedEmbedder::default();
    let counter = Arc::clone(&shared.0);
    let embedded = registry(Registry::builder().embedder(shared));
    let prepared = embedded.prepare_search();
    assert_eq!((prepared.tools, prepared.by_meaning), (7, true));
    // One batch of the 7 tools, hidden ones too, and nothing else.
    assert_eq!(counter.calls.load(Ordering::Relaxed), 1);
    assert_eq!(counter.texts.load(Ordering::Relaxed), 7);
    // Again: nothing is embedded twice.
    assert_eq!(embedded.prepare_search(), prepared);
    assert_eq!(counter.texts.load(Ordering::Relaxed), 7);
    // The first search embeds its query alone, and ranks by meaning.
    let run = embedded.open_run("r", &Subject::new("acme"));
    let found = run.search("zorp it", 3);
    assert_eq!(found[0].name(), "delete_record", "{:?}", names(&found));
    assert!(found[0].similarity().is_some());
    assert_eq!(counter.calls.load(Ordering::Relaxed), 2);
    assert_eq!(counter.texts.load(Ordering::Relaxed), 8);
    // The hidden tool was embedded, but the run never finds it.
    assert!(
        run.search("deploy the admin console", 7)
            .iter()
            .all(|hit| hit.name() != "deploy_admin")
    );

    // Without an embedder, the index alone; with one that fails, no vectors.
    let lexical = registry(Registry::builder()).prepare_search();
    assert_eq!((lexical.tools, lexical.by_meaning), (7, false));
    let broken = registry(Registry::builder().embedder(Broken("error"))).prepare_search();
    assert_eq!((broken.tools, broken.by_meaning), (7, false));
}

#[test]
fn only_the_allowed_set_and_hidden_tools_change_no_score() {
    let embedded = registry(Registry::builder().embedder(WordEmbedder::default()));
    let run = embedded.open_run("r", &Subject::new("acme"));
    // "ship" means deploy: the admin tool is the nearest to "ship the admin console", but
    // this run may not see it.
    let found = run.search("ship the admin console", 7);
    assert!(
        !names(&found).contains(&"deploy_admin"),
        "{:?}",
        names(&found)
    );
    assert_eq!(found[0].name(), "deploy_service");
    // A registry of the visible tools alone gives the same hits and scores.
    let mut alone = Registry::builder().embedder(WordEmbedder::default());
    for tool in tools().into_iter().filter(|t| t.name() != "deploy_admin") {
        alone = alone.tool(tool);
    }
    let alone = alone.build().unwrap();
    let alone_run = alone.open_run("a", &Subject::new("acme"));
    for query in [
        "ship the admin console",
        "wipe a row",
        "bill them",
        "deploy",
        "x",
    ] {
        assert_eq!(
            scored(&run.search(query, 5)),
            scored(&alone_run.search(query, 5)),
            "{query}"
        );
    }
    // The admin sees it.
    let admin = embedded.open_run("r", &Subject::new("acme").with_scopes(["admin"]));
    assert_eq!(
        admin.search("ship the admin console", 1)[0].name(),
        "deploy_admin"
    );
}

/// An embedder that fails, or answers nonsense.
struct Broken(&'static str);

impl Embedder for Broken {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match self.0 {
            "error" => Err(EmbedError::new("the model is down")),
            "count" => Ok(vec![vec![1.0]; texts.len() + 1]),
            "nan" => Ok(vec![vec![f32::NAN, 1.0]; texts.len()]),
            // Tools embedded, queries refused.
            _ if texts.len() > 1 => Ok(vec![vec![1.0, 0.0]; texts.len()]),
            _ => Ok(vec![vec![1.0, 0.0, 0.0]]),
        }
    }
}

#[test]
fn a_failing_embedder_leaves_search_lexical() {
    let lexical = registry(Registry::builder());
    let lexical = lexical.open_run("l", &Subject::new("acme"));
    for kind in ["error", "count", "nan", "query"] {
        let broken = registry(Registry::builder().embedder(Broken(kind)));
        let run = broken.open_run("b", &Subject::new("acme"));
        for query in ["delete a record", "wipe it", "deploy to production", ""] {
            let found = run.search(query, 5);
            assert_eq!(
                found
                    .iter()
                    .map(|h| (h.name().to_owned(), h.score()))
                    .collect::<Vec<_>>(),
                lexical
                    .search(query, 5)
                    .iter()
                    .map(|h| (h.name().to_owned(), h.score()))
                    .collect::<Vec<_>>(),
                "{kind}: {query}"
            );
            assert!(found.iter().all(|hit| hit.similarity().is_none()), "{kind}");
        }
    }
}

mod openai {
    use super::*;
    use registry_core::search::OpenAiEmbedder;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::Mutex;

    /// One request the fake endpoint received: its path, `Authorization` and JSON body.
    type Seen = Arc<Mutex<Vec<(String, Option<String>, Value)>>>;

    /// An OpenAI-compatible embeddings endpoint on loopback, answering with
    /// [`WordEmbedder`]'s vectors, in reverse order of `index` (as the API allows), or with
    /// `status` and a body when given one.
    fn endpoint(fail: Option<(u16, &'static str)>) -> (String, Seen) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let seen: Seen = Arc::default();
        let record = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let record = Arc::clone(&record);
                std::thread::spawn(move || serve(stream, &record, fail));
            }
        });
        (format!("http://{address}/v1"), seen)
    }

    fn serve(stream: std::net::TcpStream, seen: &Seen, fail: Option<(u16, &str)>) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let path = line.split(' ').nth(1).unwrap_or("").to_owned();
            let (mut length, mut authorization) = (0usize, None);
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                let header = header.trim_end();
                if header.is_empty() {
                    break;
                }
                let (name, value) = header.split_once(": ").unwrap();
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.parse().unwrap(),
                    "authorization" => authorization = Some(value.to_owned()),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let body: Value = serde_json::from_slice(&body).unwrap();
            let (status, answer) = match fail {
                Some((status, text)) => (status, text.to_owned()),
                None => {
                    let texts: Vec<&str> = body["input"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|t| t.as_str().unwrap())
                        .collect();
                    let data: Vec<Value> = texts
                        .iter()
                        .enumerate()
                        .rev()
                        .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": WordEmbedder::vector(text)}))
                        .collect();
                    (
                        200,
                        json!({"object": "list", "data": data, "model": body["model"]}).to_string(),
                    )
                }
            };
            seen.lock().unwrap().push((path, authorization, body));
            let mut stream = reader.get_ref();
            write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
                answer.len()
            )
            .unwrap();
            stream.flush().unwrap();
        }
    }

    #[test]
    fn an_openai_compatible_endpoint_ranks_by_meaning() {
        let (url, seen) = endpoint(None);
        let embedder = OpenAiEmbedder::new(&url, "test-model")
            .unwrap()
            .api_key("sk-test")
            .dimensions(69);
        let registry = registry(Registry::builder().embedder(embedder));
        let run = registry.open_run("r", &Subject::new("acme"));
        let found = run.search("zorp it", 3);
        assert_eq!(found[0].name(), "delete_record", "{:?}", names(&found));
        assert_eq!(
            run.search("bill the customer", 1)[0].name(),
            "create_invoice"
        );

        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 3, "the tools once, then each query");
        for (path, authorization, body) in seen.iter() {
            assert_eq!(path, "/v1/embeddings");
            assert_eq!(authorization.as_deref(), Some("Bearer sk-test"));
            assert_eq!(body["model"], "test-model");
            assert_eq!(body["encoding_format"], "float");
            assert_eq!(body["dimensions"], 69);
        }
        let tools: Vec<&str> = seen[0].2["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(tools.len(), 7);
        assert!(
            tools.contains(&"delete record. Delete a record from the table."),
            "{tools:?}"
        );
        assert_eq!(seen[1].2["input"], json!(["zorp it"]));
    }

    #[test]
    fn an_endpoint_that_fails_says_why_and_search_stays_lexical() {
        let (url, _) = endpoint(Some((401, "{\"error\": {\"message\": \"bad key\"}}")));
        let embedder = OpenAiEmbedder::new(&url, "m")
            .unwrap()
            .api_key("sk-never-shown");
        let error = embedder.embed(&["x"]).unwrap_err();
        assert!(error.message().contains("401"), "{error}");
        assert!(error.message().contains("bad key"), "{error}");
        assert!(!error.message().contains("sk-never-shown"), "{error}");
        let registry = registry(Registry::builder().embedder(embedder));
        let run = registry.open_run("r", &Subject::new("acme"));
        assert!(run.search("zorp it", 3).is_empty());
        assert_eq!(run.search("delete a record", 1)[0].name(), "delete_record");

        let (url, _) = endpoint(Some((200, "not json")));
        let error = OpenAiEmbedder::new(&url, "m")
            .unwrap()
            .embed(&["x"])
            .unwrap_err();
        assert!(error.message().contains("not JSON"), "{error}");

        // Nobody listening.
        let closed = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let error = OpenAiEmbedder::new(format!("http://{closed}/v1"), "m")
            .unwrap()
            .embed(&["x"])
            .unwrap_err();
        assert!(error.message().contains(&closed.to_string()), "{error}");
    }

    /// Every connection a second server accepted: the bytes it read first. It answers each
    /// with a valid vector for one text, so that a followed redirect would succeed.
    type Connections = Arc<Mutex<Vec<Vec<u8>>>>;

    fn recorder() -> (String, Connections) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let connections: Connections = Arc::default();
        let record = Arc::clone(&connections);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut first = vec![0; 64 * 1024];
                let read = stream.read(&mut first).unwrap_or(0);
                first.truncate(read);
                record.lock().unwrap().push(first);
                let answer = json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}).to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            }
        });
        (origin, connections)
    }

    /// An endpoint that answers every request with `status` and `Location: location`; its
    /// base URL.
    fn redirecting(status: u16, location: String) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0usize;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 {
                        break;
                    }
                    let header = header.trim_end();
                    if header.is_empty() {
                        break;
                    }
                    if let Some((name, value)) = header.split_once(": ")
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let mut stream = reader.get_ref();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
            }
        });
        format!("http://{address}/v1")
    }

    #[test]
    fn a_redirect_is_not_followed_and_the_key_and_texts_stay() {
        for status in [301, 302, 303, 307, 308] {
            let (elsewhere, connections) = recorder();
            let url = redirecting(status, format!("{elsewhere}/v1/embeddings?token=kept-out"));
            let embedder = OpenAiEmbedder::new(&url, "m")
                .unwrap()
                .api_key("sk-never-elsewhere");
            let error = embedder.embed(&["a secret query"]).unwrap_err();
            let message = error.message();
            assert!(
                message.contains(&status.to_string())
                    && message.contains(&format!("redirecting to {elsewhere}:"))
                    && message.contains("not followed")
                    && !message.contains("kept-out")
                    && !message.contains("sk-never-elsewhere"),
                "{status}: {message}"
            );
            // The answer reached the caller after any request to the other server was read.
            assert!(
                connections.lock().unwrap().is_empty(),
                "{status}: the other server received {:?}",
                connections
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
                    .collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn plain_http_to_a_host_that_is_not_loopback_is_refused_unless_allowed() {
        // `0.0.0.0` is not a loopback address, but a connection to it reaches this machine
        // (Linux routes it to 127.0.0.1): the refusal, and the opt-out, seen end to end with
        // no traffic leaving the machine.
        let (url, seen) = endpoint(None);
        let far = url.replace("127.0.0.1", "0.0.0.0");
        let refused = OpenAiEmbedder::new(&far, "m")
            .unwrap()
            .api_key("sk-never-in-clear");
        let error = refused.embed(&["x"]).unwrap_err();
        let message = error.message();
        assert!(
            message.contains(&far)
                && message.contains("plain http://")
                && message.contains("https://")
                && message.contains("OpenAiEmbedder::allow_insecure_http")
                && !message.contains("sk-never-in-clear"),
            "{message}"
        );
        assert!(seen.lock().unwrap().is_empty(), "nothing was sent");
        // Refused the same way for a named host, before any look-up or connection.
        for named in ["http://example.com/v1", "http://localhost.evil.example/v1"] {
            let error = OpenAiEmbedder::new(named, "m")
                .unwrap()
                .embed(&["x"])
                .unwrap_err();
            assert!(error.message().contains("plain http://"), "{error}");
        }

        let allowed = OpenAiEmbedder::new(&far, "m")
            .unwrap()
            .api_key("sk-trusted-path")
            .allow_insecure_http();
        assert_eq!(allowed.embed(&["x"]).unwrap().len(), 1);
        assert_eq!(
            seen.lock().unwrap()[0].1.as_deref(),
            Some("Bearer sk-trusted-path")
        );

        // Loopback needs no opt-out, by name or address.
        for near in [
            url.clone(),
            url.replace("127.0.0.1", "localhost"),
            url.replace("127.0.0.1", "LocalHost"),
        ] {
            let embedder = OpenAiEmbedder::new(&near, "m").unwrap().api_key("sk-local");
            assert_eq!(embedder.embed(&["x"]).unwrap().len(), 1, "{near}");
        }
        let v6 = TcpListener::bind("[::1]:0");
        if let Ok(listener) = v6 {
            // The refusal is about the URL: an http://[::1] one is accepted (nothing listens
            // there, so the error is the connection's, not the refusal).
            let address = listener.local_addr().unwrap();
            drop(listener);
            let error = OpenAiEmbedder::new(format!("http://{address}/v1"), "m")
                .unwrap()
                .embed(&["x"])
                .unwrap_err();
            assert!(!error.message().contains("plain http://"), "{error}");
        }
        for bad in ["ftp://example.com/v1", "not a url", "file:///etc/passwd"] {
            assert!(OpenAiEmbedder::new(bad, "m").is_err(), "{bad}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn it_may_be_called_and_dropped_inside_an_async_runtime() {
        let (url, _) = endpoint(None);
        let embedder = OpenAiEmbedder::new(&url, "m").unwrap();
        let registry = registry(Registry::builder().embedder(embedder));
        let run = registry.open_run("r", &Subject::new("acme"));
        assert_eq!(run.search("zorp it", 1)[0].name(), "delete_record");
        drop(run);
        drop(registry);
    }
}
