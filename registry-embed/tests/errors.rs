//! Bad input gets an error that names what is wrong and how to fix it: a missing file, an
//! unknown architecture, weights of another shape, a pooling not taken, an empty text.

mod common;

use registry_core::search::Embedder;
use registry_embed::LocalEmbedder;

use common::{altered, model_dir};

fn load_error(dir: &std::path::Path) -> String {
    LocalEmbedder::load(dir)
        .map(|_| ())
        .unwrap_err()
        .message()
        .to_owned()
}

#[test]
fn a_missing_directory_or_file_is_named() {
    let error = load_error(std::path::Path::new("/nonexistent/model"));
    assert!(
        error.contains("/nonexistent/model: no such directory"),
        "{error}"
    );
    assert!(error.contains(".ci/fetch-model"), "{error}");
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        let dir = altered("missing", &[file], &[]);
        let error = load_error(dir.path());
        assert!(
            error.contains(&format!("{file}: no such file")),
            "{file}: {error}"
        );
    }
}

#[test]
fn an_unknown_architecture_is_refused() {
    let config = std::fs::read_to_string(model_dir().join("config.json"))
        .unwrap()
        .replace("\"model_type\": \"bert\"", "\"model_type\": \"roberta\"");
    let dir = altered("roberta", &[], &[("config.json", &config)]);
    let error = load_error(dir.path());
    assert!(
        error.contains("unknown architecture: model_type \"roberta\""),
        "{error}"
    );
    assert!(error.contains("OpenAiEmbedder"), "{error}");
}

#[test]
fn weights_of_another_shape_are_refused_naming_the_tensor() {
    let config = std::fs::read_to_string(model_dir().join("config.json"))
        .unwrap()
        .replace("\"intermediate_size\": 1536", "\"intermediate_size\": 1024");
    let dir = altered("shape", &[], &[("config.json", &config)]);
    let error = load_error(dir.path());
    assert!(
        error.contains("tensor `encoder.layer.0.intermediate.dense.weight` has shape [1536, 384], config.json says [1024, 384]"),
        "{error}"
    );
    // Not a safetensors file at all.
    let dir = altered(
        "garbage",
        &[],
        &[("model.safetensors", "not a tensor file")],
    );
    assert!(load_error(dir.path()).contains("not a safetensors file"));
    // A tokenizer of a larger vocabulary than the weights.
    let config = std::fs::read_to_string(model_dir().join("config.json"))
        .unwrap()
        .replace("\"vocab_size\": 30522", "\"vocab_size\": 30000");
    let dir = altered("vocab", &[], &[("config.json", &config)]);
    let error = load_error(dir.path());
    assert!(
        error.contains("has shape [30522, 384], config.json says [30000, 384]"),
        "{error}"
    );
}

#[test]
fn a_pooling_not_taken_is_refused() {
    let dir = altered(
        "pooling",
        &["1_Pooling"],
        &[(
            "1_Pooling/config.json",
            r#"{"word_embedding_dimension": 384, "pooling_mode_weightedmean_tokens": true}"#,
        )],
    );
    let error = load_error(dir.path());
    assert!(
        error.contains("pooling_mode_weightedmean_tokens = true is not taken"),
        "{error}"
    );
}

#[test]
fn an_empty_text_is_refused_by_its_place() {
    let embedder = LocalEmbedder::load(model_dir()).unwrap();
    let error = embedder.embed(&["a file", ""]).unwrap_err();
    assert!(
        error.message().contains("text 1 (of 2) is empty"),
        "{error}"
    );
    let error = embedder.embed(&[" \t\n"]).unwrap_err();
    assert!(
        error
            .message()
            .contains("the text is empty but for whitespace"),
        "{error}"
    );
    // Only characters the tokenizer deletes (zero-width space, a bidi mark, NUL).
    let error = embedder
        .embed(&["ok", "x", "\u{200b}\u{202e}\0"])
        .unwrap_err();
    assert!(
        error.message().contains("text 2 (of 3) has no word"),
        "{error}"
    );
    // Hostile bytes around words are read as the tokenizer reads them, and never fail.
    let vectors = embedder
        .embed(&[
            "delete\u{202e}_file\0",
            "drop\r\nTABLE users; --",
            &"x".repeat(200_000),
        ])
        .unwrap();
    assert!(
        vectors
            .iter()
            .all(|v| v.len() == 384 && v.iter().all(|x| x.is_finite()))
    );
    // No text at all: no vector, no error.
    assert!(embedder.embed(&[]).unwrap().is_empty());
}
