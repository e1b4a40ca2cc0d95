//! `with_cache`: vectors kept in a file keyed by the model's digest and each text's, so a
//! restart embeds only what changed; a torn or foreign file is never trusted.

mod common;

use std::io::Write;

use registry_core::search::Embedder;
use registry_embed::LocalEmbedder;

use common::{altered, model_dir};

const TEXTS: [&str; 3] = [
    "create_issue: Create a new issue in a repository",
    "send_message: Send a message to a channel",
    "get_forecast: The weather forecast of a city",
];

#[test]
fn a_restart_embeds_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vectors.cache");
    let first = LocalEmbedder::load(model_dir())
        .unwrap()
        .with_cache(&path)
        .unwrap();
    let vectors = first.embed(&TEXTS).unwrap();
    assert_eq!(first.stats().computed, 3);
    assert_eq!(first.stats().cached, 3);
    drop(first);

    // A new process, as it were: a fresh embedder on the same file.
    let second = LocalEmbedder::load(model_dir())
        .unwrap()
        .with_cache(&path)
        .unwrap();
    assert_eq!(second.stats().cached, 3);
    assert_eq!(
        second.embed(&TEXTS).unwrap(),
        vectors,
        "the same vectors, from the file"
    );
    assert_eq!(second.stats().computed, 0);
    assert_eq!(second.stats().from_cache, 3);
    let changed = second
        .embed(&[TEXTS[0], "send_message: Post a message to a channel"])
        .unwrap();
    assert_eq!(changed[0], vectors[0]);
    assert_eq!(second.stats().computed, 1, "only the changed text");

    // A record cut short (a crash while writing) is dropped; the rest is kept, and the next
    // record is appended whole.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(&[7; 100])
        .unwrap();
    let third = LocalEmbedder::load(model_dir())
        .unwrap()
        .with_cache(&path)
        .unwrap();
    assert_eq!(third.stats().cached, 4);
    third
        .embed(&["list_files: List the files of a folder"])
        .unwrap();
    let fourth = LocalEmbedder::load(model_dir())
        .unwrap()
        .with_cache(&path)
        .unwrap();
    assert_eq!(fourth.stats().cached, 5);
    assert_eq!(fourth.embed(&TEXTS).unwrap(), vectors);
    assert_eq!(fourth.stats().computed, 0);
}

#[test]
fn a_cache_of_another_model_or_of_garbage_is_started_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vectors.cache");
    let embedder = LocalEmbedder::load(model_dir())
        .unwrap()
        .with_cache(&path)
        .unwrap();
    let vectors = embedder.embed(&TEXTS).unwrap();
    // Another model (here: the same weights read to 128 tokens, so another digest).
    let other = altered(
        "short",
        &[],
        &[("sentence_bert_config.json", r#"{"max_seq_length": 128}"#)],
    );
    let other = LocalEmbedder::load(other.path()).unwrap();
    assert_ne!(other.model_digest(), embedder.model_digest());
    let other = other.with_cache(&path).unwrap();
    assert_eq!(
        other.stats().cached,
        0,
        "another model's vectors are not read"
    );
    other.embed(&TEXTS[..1]).unwrap();
    assert_eq!(other.stats().computed, 1);
    // Garbage.
    std::fs::write(&path, b"\0\0\0garbage").unwrap();
    let again = LocalEmbedder::load(model_dir())
        .unwrap()
        .with_cache(&path)
        .unwrap();
    assert_eq!(again.stats().cached, 0);
    assert_eq!(again.embed(&TEXTS).unwrap(), vectors);
    assert_eq!(again.stats().computed, 3);
    // A cache file that cannot be made is an error naming it.
    let error = LocalEmbedder::load(model_dir())
        .unwrap()
        .with_cache("/proc/no/such/place/vectors.cache")
        .map(|_| ())
        .unwrap_err();
    assert!(
        error
            .message()
            .contains("/proc/no/such/place/vectors.cache"),
        "{error}"
    );
}

#[test]
fn the_weights_are_in_memory_once() {
    let a = LocalEmbedder::load(model_dir()).unwrap();
    let b = LocalEmbedder::load(model_dir()).unwrap();
    assert!(
        a.shares_weights_with(&b),
        "a second load of the same files shares the weights"
    );
    assert!(a.shares_weights_with(&a.clone()));
    let other = altered(
        "other",
        &[],
        &[("sentence_bert_config.json", r#"{"max_seq_length": 64}"#)],
    );
    let c = LocalEmbedder::load(other.path()).unwrap();
    assert!(
        !a.shares_weights_with(&c),
        "another model's weights are its own"
    );
    assert!(
        a.weight_bytes() > 80_000_000 && a.weight_bytes() < 100_000_000,
        "{}",
        a.weight_bytes()
    );
}

#[test]
fn a_hostile_cache_file_is_never_trusted_blindly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vectors.cache");
    let embedder = LocalEmbedder::load(model_dir()).unwrap();
    let good = embedder.clone().with_cache(&path).unwrap();
    let vectors = good.embed(&TEXTS).unwrap();
    drop(good);
    let bytes = std::fs::read(&path).unwrap();
    // Cuts, bits flipped, values made NaN: opening never fails or panics, and every vector
    // answered is the right one (read from the file, or computed afresh where the file was
    // damaged).
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut kept = 0;
    for round in 0..60 {
        let mut hostile = bytes.clone();
        if round % 2 == 0 {
            hostile.truncate(usize::try_from(next() % bytes.len() as u64).unwrap());
        } else {
            let at = usize::try_from(next() % bytes.len() as u64).unwrap();
            hostile[at] ^= 1 << (next() % 8);
            if round % 3 == 0 {
                // A value past the header made NaN.
                let at = (64 + at % (bytes.len() - 64)) & !3;
                hostile[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
            }
        }
        std::fs::write(&path, &hostile).unwrap();
        let reopened = embedder.clone().with_cache(&path).unwrap();
        let answered = reopened.embed(&TEXTS).unwrap();
        assert_eq!(answered, vectors, "round {round}");
        kept += reopened.stats().from_cache;
    }
    // The damage fell on some records, not all: the others were read, not recomputed.
    assert!(kept > 30, "{kept} vectors of 180 read from damaged files");
}

#[test]
fn a_tool_replaced_is_the_only_one_embedded_again() {
    use registry_core::change::ReplaceOptions;
    use registry_core::{DynamicTool, Registry, Subject};
    use serde_json::Value;

    let tool = |name: &str, description: &str| {
        DynamicTool::new(name, description)
            .public()
            .handler(|_ctx, _args| Ok::<_, String>(Value::Null))
    };
    // No cache file: the vectors are kept in memory by default.
    let embedder = LocalEmbedder::load(model_dir()).unwrap();
    let registry = Registry::builder()
        .tool(tool("create_issue", "Create an issue."))
        .tool(tool("send_message", "Send a message to a channel."))
        .tool(tool("get_forecast", "The weather forecast of a city."))
        .embedder(embedder.clone())
        .build()
        .unwrap();
    let run = registry.open_run("r", &Subject::new("acme"));
    assert_eq!(run.search("post to the team", 1)[0].name(), "send_message");
    assert_eq!(embedder.stats().computed, 3);
    assert_eq!(embedder.stats().queries, 1);
    registry
        .replace(
            tool("send_message", "Post a message in a chat room."),
            ReplaceOptions::keep_old_runs("reworded"),
        )
        .unwrap();
    let run = registry.open_run("s", &Subject::new("acme"));
    assert_eq!(run.search("post to the team", 1)[0].name(), "send_message");
    assert_eq!(
        embedder.stats().computed,
        4,
        "the new snapshot embedded the replaced tool only"
    );
    assert_eq!(embedder.stats().from_cache, 2);
}
