//! `LocalEmbedder` against an independent reference: a numpy forward pass of the same
//! weights, tokenized by Hugging Face's Python `tokenizers` (`tests/reference/`), on 100
//! varied texts; and pairs whose order any sentence model must keep.

#![allow(clippy::cast_possible_truncation)] // reference values are read as f64, compared as f32

mod common;

use registry_core::search::Embedder;
use registry_embed::LocalEmbedder;
use serde_json::Value;

use common::{cosine, model_dir};

fn reference() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/reference/reference.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_hundred_texts_match_the_numpy_reference_within_1e_4_cosine() {
    let reference = reference();
    let embedder = LocalEmbedder::load(model_dir()).unwrap();
    assert_eq!(embedder.dimensions(), 384);
    assert_eq!(embedder.max_tokens(), 256);
    let texts: Vec<&str> = reference["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 100);
    // One batch (texts spread over the pool), and each text as a query (one text's products
    // shared among the pool): both paths are checked.
    let batch = embedder.embed(&texts).unwrap();
    let mut worst = (0.0f64, 0usize);
    for (index, (entry, vector)) in reference["texts"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&batch)
        .enumerate()
    {
        let ids: Vec<u32> = entry["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| u32::try_from(id.as_u64().unwrap()).unwrap())
            .collect();
        assert_eq!(
            embedder.token_ids(texts[index]).unwrap(),
            ids,
            "the ids of text {index}: {:?}",
            texts[index]
        );
        let expected: Vec<f32> = entry["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        // As a query: alone, never cached, its products shared among the pool.
        let alone = embedder.embed_query(texts[index]).unwrap();
        for (how, got) in [("in a batch", vector), ("alone", &alone)] {
            let norm: f64 = got
                .iter()
                .map(|v| f64::from(*v).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "text {index} {how}: norm {norm}");
            let distance = 1.0 - cosine(got, &expected);
            assert!(
                distance <= 1e-4,
                "text {index} {how}: cosine distance {distance:e} to the reference: {:?}",
                texts[index]
            );
            if distance > worst.0 {
                worst = (distance, index);
            }
        }
    }
    eprintln!(
        "largest cosine distance to the reference: {:e} (text {})",
        worst.0, worst.1
    );
}

#[test]
fn nearer_meanings_are_nearer() {
    let pairs: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/reference/pairs.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let embedder = LocalEmbedder::load(model_dir()).unwrap();
    for pair in pairs.as_array().unwrap() {
        let texts = ["anchor", "nearer", "farther"].map(|key| pair[key].as_str().unwrap());
        let v = embedder.embed(&texts).unwrap();
        let (near, far) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
        assert!(near > far + 0.1, "{texts:?}: {near} against {far}");
        for (got, key) in [(near, "cos_nearer"), (far, "cos_farther")] {
            let want = pair[key].as_f64().unwrap();
            assert!(
                (got - want).abs() < 1e-4,
                "{texts:?} {key}: {got} against the reference's {want}"
            );
        }
    }
    // The issue's own pair, by name.
    let v = embedder
        .embed(&[
            "open a pull request",
            "create a pull request",
            "delete a file",
        ])
        .unwrap();
    assert!(cosine(&v[0], &v[1]) > 0.8);
    assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.5);
}

#[test]
fn prefixes_are_put_before_queries_and_tools() {
    let plain = LocalEmbedder::load(model_dir()).unwrap();
    let e5 = plain.clone().with_prefixes("query: ", "passage: ");
    assert_eq!(
        e5.embed_query("open a pull request").unwrap(),
        plain.embed(&["query: open a pull request"]).unwrap()[0]
    );
    assert_eq!(
        e5.embed(&["create_pull_request"]).unwrap(),
        plain.embed(&["passage: create_pull_request"]).unwrap()
    );
    // A prefix is not a word of an empty text.
    assert!(e5.embed_query(" ").unwrap_err().message().contains("empty"));
    assert!(
        e5.embed(&["a", ""])
            .unwrap_err()
            .message()
            .contains("text 1 (of 2) is empty")
    );
}
