//! What a model's directory says about it: `config.json` (the encoder), the
//! sentence-transformers files (`modules.json`, the pooling module's `config.json`,
//! `sentence_bert_config.json`), read and checked before any weight is.

use std::path::{Path, PathBuf};

use registry_core::search::EmbedError;
use serde::Deserialize;
use serde_json::Value;

/// The encoder's shape, from `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Encoder {
    pub(crate) hidden: usize,
    pub(crate) heads: usize,
    pub(crate) layers: usize,
    pub(crate) intermediate: usize,
    pub(crate) vocabulary: usize,
    pub(crate) positions: usize,
    pub(crate) token_types: usize,
    pub(crate) epsilon: f32,
}

/// The largest encoder taken: BERT-large's sizes, so that a hostile or mistaken
/// `config.json` cannot ask for gigabytes before a weight is read.
const MOST_HIDDEN: usize = 1024;
const MOST_LAYERS: usize = 24;
const MOST_INTERMEDIATE: usize = 4096;
const MOST_VOCABULARY: usize = 250_000;
const MOST_POSITIONS: usize = 8192;

#[derive(Deserialize)]
struct RawEncoder {
    model_type: Option<String>,
    architectures: Option<Vec<String>>,
    hidden_size: Option<usize>,
    num_attention_heads: Option<usize>,
    num_hidden_layers: Option<usize>,
    intermediate_size: Option<usize>,
    vocab_size: Option<usize>,
    max_position_embeddings: Option<usize>,
    type_vocab_size: Option<usize>,
    layer_norm_eps: Option<f64>,
    hidden_act: Option<String>,
    position_embedding_type: Option<String>,
}

/// How token vectors become one sentence vector (`1_Pooling/config.json`), and whether it is
/// then normalised (a `Normalize` module in `modules.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pooling {
    pub(crate) cls: bool,
    pub(crate) max: bool,
    pub(crate) mean: bool,
    pub(crate) mean_sqrt_len: bool,
    pub(crate) normalize: bool,
}

impl Pooling {
    /// How many vectors of the encoder's width the pooled vector joins.
    pub(crate) fn parts(&self) -> usize {
        [self.cls, self.max, self.mean, self.mean_sqrt_len]
            .into_iter()
            .filter(|on| *on)
            .count()
    }
}

/// Everything read from the directory but the weights and the tokenizer.
#[derive(Debug)]
pub(crate) struct ModelConfig {
    pub(crate) encoder: Encoder,
    pub(crate) pooling: Pooling,
    /// The most tokens a text is read to (`max_seq_length`, and never more than the
    /// encoder's positions).
    pub(crate) max_tokens: usize,
    /// The bytes of every file read, for the model's digest.
    pub(crate) files: Vec<(String, Vec<u8>)>,
}

/// A file of the model's directory, with an error naming it if it is missing or unreadable.
pub(crate) fn read(dir: &Path, name: &str) -> Result<Vec<u8>, EmbedError> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            EmbedError::new(format!(
                "{}: no such file. A model's directory holds config.json, tokenizer.json and \
                 model.safetensors (a sentence-transformers model, as `bash .ci/fetch-model` \
                 unpacks all-MiniLM-L6-v2)",
                path.display()
            ))
        } else {
            EmbedError::new(format!("{}: cannot be read: {error}", path.display()))
        }
    })
}

fn optional(dir: &Path, name: &str) -> Result<Option<Vec<u8>>, EmbedError> {
    if dir.join(name).exists() {
        read(dir, name).map(Some)
    } else {
        Ok(None)
    }
}

fn json<T: for<'de> Deserialize<'de>>(path: &Path, bytes: &[u8]) -> Result<T, EmbedError> {
    serde_json::from_slice(bytes).map_err(|error| {
        EmbedError::new(format!(
            "{}: not the JSON expected: {error}",
            path.display()
        ))
    })
}

impl ModelConfig {
    /// Reads and checks the configuration files of `dir`.
    pub(crate) fn read(dir: &Path) -> Result<ModelConfig, EmbedError> {
        let mut files = Vec::new();
        let bytes = read(dir, "config.json")?;
        let encoder = encoder(
            &dir.join("config.json"),
            &json(&dir.join("config.json"), &bytes)?,
        )?;
        files.push(("config.json".to_owned(), bytes));

        let modules = match optional(dir, "modules.json")? {
            Some(bytes) => {
                let modules: Vec<Value> = json(&dir.join("modules.json"), &bytes)?;
                files.push(("modules.json".to_owned(), bytes));
                Some(modules)
            }
            None => None,
        };
        let module_of = |kind: &str| {
            modules.as_ref().and_then(|modules| {
                modules.iter().find(|module| {
                    module
                        .get("type")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.rsplit('.').next() == Some(kind))
                })
            })
        };
        let pooling_dir: PathBuf = match module_of("Pooling") {
            Some(module) => dir.join(
                module
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or("1_Pooling"),
            ),
            None => dir.join("1_Pooling"),
        };
        let normalize = match &modules {
            Some(_) => module_of("Normalize").is_some(),
            // No modules.json: the common sentence-transformers pipeline, normalised.
            None => true,
        };
        let pooling_path = pooling_dir.join("config.json");
        let pooling = match optional(&pooling_dir, "config.json")? {
            Some(bytes) => {
                let pooling = pooling(
                    &pooling_path,
                    &json(&pooling_path, &bytes)?,
                    normalize,
                    &encoder,
                )?;
                files.push(("pooling/config.json".to_owned(), bytes));
                pooling
            }
            None if modules.is_some() && module_of("Pooling").is_some() => {
                return Err(EmbedError::new(format!(
                    "{}: no such file, and modules.json names a pooling module: the pooling \
                     cannot be guessed",
                    pooling_path.display()
                )));
            }
            // No pooling module at all: mean pooling, as sentence-transformers does for a
            // plain encoder.
            None => Pooling {
                cls: false,
                max: false,
                mean: true,
                mean_sqrt_len: false,
                normalize,
            },
        };

        let mut max_tokens = 512usize;
        if let Some(bytes) = optional(dir, "sentence_bert_config.json")? {
            let path = dir.join("sentence_bert_config.json");
            let value: Value = json(&path, &bytes)?;
            if let Some(length) = value.get("max_seq_length").and_then(Value::as_u64) {
                max_tokens = usize::try_from(length).unwrap_or(usize::MAX);
            }
            files.push(("sentence_bert_config.json".to_owned(), bytes));
        }
        let max_tokens = max_tokens.min(encoder.positions);
        if max_tokens < 3 {
            return Err(EmbedError::new(format!(
                "{}: max_seq_length {max_tokens} leaves no room for a word between [CLS] and [SEP]",
                dir.join("sentence_bert_config.json").display()
            )));
        }
        Ok(ModelConfig {
            encoder,
            pooling,
            max_tokens,
            files,
        })
    }
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "layer_norm_eps is read as f64, used as f32"
)]
fn encoder(path: &Path, value: &Value) -> Result<Encoder, EmbedError> {
    let raw: RawEncoder = serde_json::from_value(value.clone())
        .map_err(|error| EmbedError::new(format!("{}: {error}", path.display())))?;
    let kind = raw.model_type.as_deref().unwrap_or("");
    if kind != "bert" {
        return Err(EmbedError::new(format!(
            "{}: unknown architecture: model_type {:?} (architectures {:?}). registry-embed runs \
             BERT-family encoders (model_type \"bert\": all-MiniLM-L6-v2, bge-small, e5-small); \
             for another, serve it behind an OpenAI-compatible endpoint and use \
             registry_core::search::OpenAiEmbedder",
            path.display(),
            kind,
            raw.architectures.unwrap_or_default()
        )));
    }
    if let Some(act) = raw.hidden_act.as_deref().filter(|act| *act != "gelu") {
        return Err(EmbedError::new(format!(
            "{}: hidden_act {act:?} is not taken: registry-embed computes BERT's exact \"gelu\"",
            path.display()
        )));
    }
    if let Some(kind) = raw
        .position_embedding_type
        .as_deref()
        .filter(|kind| *kind != "absolute")
    {
        return Err(EmbedError::new(format!(
            "{}: position_embedding_type {kind:?} is not taken: registry-embed computes \
             \"absolute\" positions",
            path.display()
        )));
    }
    let field = |name: &str, value: Option<usize>, most: usize| -> Result<usize, EmbedError> {
        match value {
            Some(value) if (1..=most).contains(&value) => Ok(value),
            Some(value) => Err(EmbedError::new(format!(
                "{}: {name} is {value}: 1 to {most} are taken",
                path.display()
            ))),
            None => Err(EmbedError::new(format!(
                "{}: {name} is missing: a BERT config.json names it",
                path.display()
            ))),
        }
    };
    let hidden = field("hidden_size", raw.hidden_size, MOST_HIDDEN)?;
    let heads = field("num_attention_heads", raw.num_attention_heads, hidden)?;
    if hidden % heads != 0 {
        return Err(EmbedError::new(format!(
            "{}: hidden_size {hidden} is not a multiple of num_attention_heads {heads}",
            path.display()
        )));
    }
    Ok(Encoder {
        hidden,
        heads,
        layers: field("num_hidden_layers", raw.num_hidden_layers, MOST_LAYERS)?,
        intermediate: field(
            "intermediate_size",
            raw.intermediate_size,
            MOST_INTERMEDIATE,
        )?,
        vocabulary: field("vocab_size", raw.vocab_size, MOST_VOCABULARY)?,
        positions: field(
            "max_position_embeddings",
            raw.max_position_embeddings,
            MOST_POSITIONS,
        )?,
        token_types: field("type_vocab_size", raw.type_vocab_size.or(Some(2)), 16)?,
        epsilon: raw
            .layer_norm_eps
            .filter(|eps| eps.is_finite() && *eps > 0.0)
            .unwrap_or(1e-12) as f32,
    })
}

fn pooling(
    path: &Path,
    value: &Value,
    normalize: bool,
    encoder: &Encoder,
) -> Result<Pooling, EmbedError> {
    let Some(object) = value.as_object() else {
        return Err(EmbedError::new(format!(
            "{}: not a JSON object",
            path.display()
        )));
    };
    let mut pooling = Pooling {
        cls: false,
        max: false,
        mean: false,
        mean_sqrt_len: false,
        normalize,
    };
    for (key, value) in object {
        let on = value.as_bool();
        match (key.as_str(), on) {
            ("word_embedding_dimension", _) => {
                if value.as_u64() != Some(encoder.hidden as u64) {
                    return Err(EmbedError::new(format!(
                        "{}: word_embedding_dimension is {value}, config.json's hidden_size is {}",
                        path.display(),
                        encoder.hidden
                    )));
                }
            }
            ("pooling_mode_cls_token", Some(on)) => pooling.cls = on,
            ("pooling_mode_max_tokens", Some(on)) => pooling.max = on,
            ("pooling_mode_mean_tokens", Some(on)) => pooling.mean = on,
            ("pooling_mode_mean_sqrt_len_tokens", Some(on)) => pooling.mean_sqrt_len = on,
            ("include_prompt", _) => {}
            (_, Some(false)) => {}
            (key, _) => {
                return Err(EmbedError::new(format!(
                    "{}: {key} = {value} is not taken: registry-embed pools by the CLS token, \
                     the mean, the mean scaled by √length, or the maximum",
                    path.display()
                )));
            }
        }
    }
    if pooling.parts() == 0 {
        return Err(EmbedError::new(format!(
            "{}: no pooling mode is on: one of pooling_mode_cls_token, pooling_mode_mean_tokens, \
             pooling_mode_max_tokens or pooling_mode_mean_sqrt_len_tokens must be true",
            path.display()
        )));
    }
    Ok(pooling)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bert() -> Value {
        json!({"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2,
               "num_hidden_layers": 1, "intermediate_size": 16, "vocab_size": 10,
               "max_position_embeddings": 16, "hidden_act": "gelu"})
    }

    #[test]
    fn an_unknown_architecture_is_refused_by_name() {
        let mut config = bert();
        config["model_type"] = json!("mpnet");
        let error = encoder(Path::new("m/config.json"), &config).unwrap_err();
        assert!(error.message().contains("unknown architecture"), "{error}");
        assert!(error.message().contains("\"mpnet\""), "{error}");
        config["model_type"] = json!("bert");
        config["hidden_act"] = json!("relu");
        assert!(
            encoder(Path::new("c"), &config)
                .unwrap_err()
                .message()
                .contains("relu")
        );
    }

    #[test]
    fn sizes_are_bounded_and_named() {
        let mut config = bert();
        config["hidden_size"] = json!(1_000_000);
        let error = encoder(Path::new("c"), &config).unwrap_err();
        assert!(
            error.message().contains("hidden_size is 1000000"),
            "{error}"
        );
        let mut config = bert();
        config["num_attention_heads"] = json!(3);
        assert!(
            encoder(Path::new("c"), &config)
                .unwrap_err()
                .message()
                .contains("multiple")
        );
        let mut config = bert();
        config.as_object_mut().unwrap().remove("vocab_size");
        assert!(
            encoder(Path::new("c"), &config)
                .unwrap_err()
                .message()
                .contains("vocab_size is missing")
        );
    }

    #[test]
    fn pooling_modes_are_read_and_unknown_ones_refused() {
        let encoder = encoder(Path::new("c"), &bert()).unwrap();
        let mean = json!({"word_embedding_dimension": 8, "pooling_mode_mean_tokens": true,
                          "pooling_mode_cls_token": false});
        let pooled = pooling(Path::new("p"), &mean, true, &encoder).unwrap();
        assert!(pooled.mean && !pooled.cls && pooled.normalize);
        let weighted = json!({"pooling_mode_weightedmean_tokens": true});
        let error = pooling(Path::new("p"), &weighted, true, &encoder).unwrap_err();
        assert!(
            error.message().contains("pooling_mode_weightedmean_tokens"),
            "{error}"
        );
        let none = json!({"pooling_mode_mean_tokens": false});
        assert!(
            pooling(Path::new("p"), &none, true, &encoder)
                .unwrap_err()
                .message()
                .contains("no pooling mode")
        );
        let wrong = json!({"word_embedding_dimension": 9, "pooling_mode_mean_tokens": true});
        assert!(pooling(Path::new("p"), &wrong, true, &encoder).is_err());
    }
}
