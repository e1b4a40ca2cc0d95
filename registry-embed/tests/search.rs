//! `LocalEmbedder` in a registry's search: meaning found where words are not, and hidden
//! tools that stay hidden. A run's search is over its allowed set only: a tool it may not see
//! is never a hit, and changes no score, similarity or order of what it does see, however
//! near its text is to the query.

mod common;

use registry_core::deferred::{DeferredOptions, SearchCall};
use registry_core::search::SearchHit;

use registry_core::{DynamicTool, Profile, Registry, RegistryBuilder, Subject};
use registry_embed::LocalEmbedder;
use serde_json::{Value, json};

use common::model_dir;

fn tool(name: &str, description: &str) -> DynamicTool {
    DynamicTool::new(name, description)
        .public()
        .handler(|_ctx, _args| Ok::<_, String>(Value::Null))
}

fn visible() -> Vec<DynamicTool> {
    vec![
        tool("delete_record", "Delete a record from the table."),
        tool("send_message", "Send a message to a channel."),
        tool("create_invoice", "Create an invoice for a customer."),
        tool("get_forecast", "The weather forecast of a city."),
        tool("deploy_service", "Deploy a service to production."),
        tool(
            "create_pull_request",
            "Open a pull request from a branch into the default branch.",
        ),
    ]
}

/// A tool only the scope `admin` may see, whose text is the answer to the queries below.
fn hidden() -> DynamicTool {
    DynamicTool::new(
        "rotate_root_credentials",
        "Rotate the production root password and the cloud provider's master API keys.",
    )
    .scopes(["admin"])
    .handler(|_ctx, _args| Ok::<_, String>(Value::Null))
}

fn registry(tools: Vec<DynamicTool>, embedder: &LocalEmbedder) -> Registry {
    tools
        .into_iter()
        .fold(
            Registry::builder().embedder(embedder.clone()),
            RegistryBuilder::tool,
        )
        .build()
        .expect("the tools build")
}

fn scored(hits: &[SearchHit]) -> Vec<(String, f64, Option<f32>)> {
    hits.iter()
        .map(|hit| (hit.name().to_owned(), hit.score(), hit.similarity()))
        .collect()
}

#[test]
fn meaning_finds_a_tool_no_word_of_the_query_names() {
    let embedder = LocalEmbedder::load(model_dir()).unwrap();
    let registry = registry(visible(), &embedder);
    let run = registry.open_run("r", &Subject::new("acme"));
    let hits = run.search("how hot will it be in Lisbon tomorrow", 3);
    assert_eq!(hits[0].name(), "get_forecast", "{:?}", scored(&hits));
    let hits = run.search("bill the client", 3);
    assert_eq!(hits[0].name(), "create_invoice", "{:?}", scored(&hits));
    // Words only: the first query shares no word with its answer.
    let lexical = visible()
        .into_iter()
        .fold(Registry::builder(), RegistryBuilder::tool)
        .build()
        .unwrap();
    let lexical = lexical.open_run("l", &Subject::new("acme"));
    let words = lexical.search("how hot will it be in Lisbon tomorrow", 3);
    assert!(
        words.iter().all(|h| h.name() != "get_forecast"),
        "{:?}",
        scored(&words)
    );
}

#[test]
fn a_hidden_tool_is_never_found_and_changes_nothing_a_run_sees() {
    let embedder = LocalEmbedder::load(model_dir()).unwrap();
    let mut all = visible();
    all.push(hidden());
    let with_hidden = registry(all, &embedder);
    let without = registry(visible(), &embedder);
    let run = with_hidden.open_run("r", &Subject::new("acme"));
    let alone = without.open_run("a", &Subject::new("acme"));
    for query in [
        "rotate the production root password",
        "Rotate the production root password and the cloud provider's master API keys.",
        "change the master API keys",
        "credentials",
        "send a message",
        "x",
    ] {
        let hits = run.search(query, 10);
        assert!(
            hits.iter()
                .all(|hit| hit.name() != "rotate_root_credentials"),
            "{query}: {:?}",
            scored(&hits)
        );
        // The same hits, scores and similarities as a registry without the hidden tool:
        // nothing of its text reaches what the run observes.
        assert_eq!(scored(&hits), scored(&alone.search(query, 10)), "{query}");
    }
    // The run's deferred form: the same hits, and the same message to the model.
    let session = run.deferred(Profile::Mcp, DeferredOptions::new());
    let session_alone = alone.deferred(Profile::Mcp, DeferredOptions::new());
    let call = || {
        SearchCall::new(
            "c1",
            json!({"query": "rotate the production root password"}),
        )
    };
    let (answer, answer_alone) = (session.search(&call()), session_alone.search(&call()));
    assert_eq!(scored(answer.hits()), scored(answer_alone.hits()));
    assert_eq!(answer.message(), answer_alone.message());
    assert!(!answer.message().to_string().contains("rotate_root"));
    // A run that may see it finds it first, by the same vectors.
    let admin = with_hidden.open_run("s", &Subject::new("acme").with_scopes(["admin"]));
    assert_eq!(
        admin.search("change the master API keys", 1)[0].name(),
        "rotate_root_credentials"
    );
}
