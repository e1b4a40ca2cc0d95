//! Search by meaning: an application's [`Embedder`] turns texts into vectors; each tool of a
//! registry snapshot is embedded once (its name, title, description and parameter texts), a
//! query once per search, and the tools nearest the query (cosine similarity) are fused with
//! the lexical ranking by reciprocal rank fusion (`search.rs`).
//!
//! The embedder is given to the registry ([`RegistryBuilder::embedder`]); without one, search
//! is lexical. An embedder that fails (an endpoint down, a vector of the wrong size) never
//! fails a search: the search is lexical, and the failure is logged.
//!
//! [`RegistryBuilder::embedder`]: crate::RegistryBuilder::embedder

#[cfg(feature = "openai-embeddings")]
pub(crate) mod openai;

use std::fmt;

use serde_json::Value;

use crate::execute::tool::Tool;

/// Turns texts into vectors whose cosine similarity says how close their meanings are: a
/// local model, or a client of a hosted one
/// (`search::OpenAiEmbedder`, with the feature `openai-embeddings`).
///
/// `embed` returns one vector per text, in order, all of one length. It is called once per
/// registry snapshot for its tools, in batches of at most [`MAX_BATCH`] texts;
/// [`embed_query`](Embedder::embed_query) (by default `embed` of one text) once per search
/// for the query. It must be deterministic for search to be: the same text, the same
/// vector.
///
/// It may block (a local model computing, a blocking HTTP client waiting), and must not need
/// the caller's async runtime: [`Run::search`](crate::Run::search) and
/// `DeferredSession::search` call it on their caller's thread, while `registry-mcp`'s server
/// and `registry-agent`'s loop make a search's embedding apart
/// (`DeferredSession::embedding`, then `QueryEmbedding::embed` on
/// `tokio::task::spawn_blocking`), never on an async worker nor under a lock, and answer the
/// search once it is made (`DeferredSession::search_embedded`). The trait stays synchronous
/// on purpose: an `async fn` in a trait used as `dyn Embedder` would need boxed futures in
/// every implementation, and a local model's work is CPU-bound, which belongs on a blocking
/// thread in any case.
///
/// ```
/// use registry_core::search::{EmbedError, Embedder};
///
/// /// Counts letters: a toy, but a deterministic one.
/// struct Letters;
///
/// impl Embedder for Letters {
///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         Ok(texts
///             .iter()
///             .map(|text| {
///                 let mut vector = vec![0.0; 26];
///                 for b in text.bytes().filter(u8::is_ascii_lowercase) {
///                     vector[usize::from(b - b'a')] += 1.0;
///                 }
///                 vector
///             })
///             .collect())
///     }
/// }
///
/// let vectors = Letters.embed(&["abc", "zz"]).unwrap();
/// assert_eq!(vectors.len(), 2);
/// ```
pub trait Embedder: Send + Sync + 'static {
    /// One vector per text, in order.
    ///
    /// # Errors
    ///
    /// Whatever keeps it from embedding: search is then lexical, and the error is logged.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// The vector of a search's query: [`embed`](Embedder::embed) of the one text unless
    /// overridden. Tools' texts come through `embed`, queries through this, so an embedder can
    /// treat them apart: keep tools' vectors and not every query's (`registry-embed`'s cache
    /// does), or prefix queries as a model was trained to (e5's `"query: "`).
    ///
    /// ```
    /// use registry_core::search::{EmbedError, Embedder};
    ///
    /// /// Counts the queries it is asked, apart from the tools.
    /// struct Marked;
    ///
    /// impl Embedder for Marked {
    ///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
    ///         Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
    ///     }
    ///
    ///     fn embed_query(&self, _query: &str) -> Result<Vec<f32>, EmbedError> {
    ///         Ok(vec![0.0, 1.0])
    ///     }
    /// }
    /// assert_eq!(Marked.embed_query("x").unwrap(), [0.0, 1.0]);
    /// ```
    ///
    /// # Errors
    ///
    /// Whatever keeps it from embedding: search is then lexical, and the error is logged.
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.embed(&[query])?;
        match (vectors.pop(), vectors.is_empty()) {
            (Some(vector), true) => Ok(vector),
            (popped, _) => Err(EmbedError::new(format!(
                "the embedder answered {} vectors for 1 query: one is needed",
                vectors.len() + usize::from(popped.is_some())
            ))),
        }
    }

    /// How much this embedder's ranking counts in the fusion, against the lexical ranking's
    /// 1: a tool at rank `r` of the nearest tools scores `weight / (10 + r)`, at rank `r` of
    /// the lexical ones `1 / (10 + r)` (reciprocal rank fusion). 1 unless overridden: the two
    /// rankings count the same.
    ///
    /// A model that ranks much better than words alone can count more. On
    /// `bench/search-quality`'s tuning part, all-mpnet-base-v2 did best at 3 (recall@5 0.933
    /// at 1, 0.955 at 2.5 and 3, 0.944 at 4, 0.922 by meaning alone) and all-MiniLM-L6-v2 at
    /// 1 (0.916 at 1, 0.905 at 2, 0.894 at 3). The tuning part flatters the words (its
    /// related-word table was derived from its own queries), which pulls the weight down; judged
    /// cross-fitted instead (each half of its queries with a table derived from the other
    /// half), all-MiniLM-L6-v2 gave 0.899 at 1, 0.894 at 1.5, 0.905 at 2 and 0.888 at 3: 2 is
    /// one query of 179 ahead, too few to tell apart, so 1 stays. Measure a model on labelled
    /// queries of your own before raising it. A weight that is not a positive finite number
    /// counts as 1.
    ///
    /// ```
    /// use registry_core::search::{EmbedError, Embedder};
    ///
    /// /// A strong model's embedder: its ranking counts three times the words'.
    /// struct Strong;
    ///
    /// impl Embedder for Strong {
    ///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
    ///         Ok(texts.iter().map(|text| vec![text.len() as f32, 1.0]).collect())
    ///     }
    ///
    ///     fn weight(&self) -> f64 {
    ///         3.0
    ///     }
    /// }
    /// assert_eq!(Strong.weight(), 3.0);
    /// ```
    fn weight(&self) -> f64 {
        1.0
    }
}

/// `embedder`'s [`weight`](Embedder::weight), or 1 if it is not a positive finite number.
pub(crate) fn weight_of(embedder: &dyn Embedder) -> f64 {
    let weight = embedder.weight();
    if weight.is_finite() && weight > 0.0 {
        weight
    } else {
        1.0
    }
}

/// Why an [`Embedder`] could not embed: logged, and the search is lexical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedError {
    message: String,
}

impl EmbedError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> EmbedError {
        EmbedError {
            message: message.into(),
        }
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for EmbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EmbedError {}

/// The most texts one call of [`Embedder::embed`] is given.
pub const MAX_BATCH: usize = 64;
/// A tool's text beyond this many bytes is not embedded (models read a few hundred words).
pub const MAX_TEXT_BYTES: usize = 2_048;
/// The longest vector taken; a longer one is an error.
pub const MAX_DIMENSIONS: usize = 8_192;

/// The text of a tool an embedder is given: its name with its words apart, its title, its
/// description, and its parameters' names and descriptions, at most [`MAX_TEXT_BYTES`].
pub(crate) fn tool_text(tool: &Tool) -> String {
    let definition = tool.definition_ref();
    let mut text: String = definition
        .name
        .chars()
        .map(|c| {
            if c == '_' || c == '-' || c == '.' {
                ' '
            } else {
                c
            }
        })
        .collect();
    if let Some(title) = &definition.title {
        text.push_str(": ");
        text.push_str(title);
    }
    text.push_str(". ");
    text.push_str(&definition.description);
    let mut parameters = Vec::new();
    parameter_texts(&definition.parameters, &mut parameters);
    if !parameters.is_empty() {
        text.push_str(" Parameters: ");
        text.push_str(&parameters.join("; "));
    }
    cut(&mut text, MAX_TEXT_BYTES);
    text
}

/// `text` cut to at most `bytes`, at a character boundary.
pub(crate) fn cut(text: &mut String, bytes: usize) {
    if text.len() > bytes {
        let mut end = bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

/// `name: description` of every property, at any depth.
fn parameter_texts(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                match (key.as_str(), value) {
                    ("properties", Value::Object(properties)) => {
                        for (name, property) in properties {
                            match property.get("description").and_then(Value::as_str) {
                                Some(description) => out.push(format!("{name}: {description}")),
                                None => out.push(name.clone()),
                            }
                            parameter_texts(property, out);
                        }
                    }
                    ("enum" | "const" | "default" | "examples", _) => {}
                    (_, value) => parameter_texts(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| parameter_texts(item, out)),
        _ => {}
    }
}

/// The unit vectors of a snapshot's tools, slot `i` at `i · dimensions`.
#[derive(Debug)]
pub(crate) struct Vectors {
    dimensions: usize,
    data: Vec<f32>,
}

impl Vectors {
    /// Embeds every tool, in batches; an error if the embedder fails or answers vectors of
    /// the wrong count, length or values.
    pub(crate) fn build<'a>(
        tools: impl Iterator<Item = &'a Tool>,
        embedder: &dyn Embedder,
    ) -> Result<Vectors, EmbedError> {
        let texts: Vec<String> = tools.map(tool_text).collect();
        let mut vectors = Vectors {
            dimensions: 0,
            data: Vec::new(),
        };
        for batch in texts.chunks(MAX_BATCH) {
            let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
            for vector in checked(embedder.embed(&batch)?, batch.len())? {
                if vectors.dimensions == 0 {
                    vectors.dimensions = vector.len();
                    vectors.data.reserve(vector.len() * texts.len());
                }
                if vector.len() != vectors.dimensions {
                    return Err(EmbedError::new(format!(
                        "the embedder answered vectors of {} and {} dimensions: all must have one length",
                        vectors.dimensions,
                        vector.len()
                    )));
                }
                vectors.data.extend(vector);
            }
        }
        Ok(vectors)
    }

    /// How many values each vector has.
    pub(crate) fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// The query's unit vector, checked against the tools' length.
    pub(crate) fn query(
        &self,
        embedder: &dyn Embedder,
        query: &str,
    ) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = checked(vec![embedder.embed_query(query)?], 1)?;
        let vector = vectors.pop().unwrap_or_default();
        if vector.len() != self.dimensions {
            return Err(EmbedError::new(format!(
                "the embedder answered a query vector of {} dimensions, the tools' have {}",
                vector.len(),
                self.dimensions
            )));
        }
        Ok(vector)
    }

    /// The cosine similarity of slot `slot` with the unit vector `query`.
    pub(crate) fn similarity(&self, slot: usize, query: &[f32]) -> f32 {
        let start = slot * self.dimensions;
        self.data
            .get(start..start + self.dimensions)
            .map_or(0.0, |vector| {
                vector.iter().zip(query).map(|(a, b)| a * b).sum::<f32>()
            })
    }
}

/// `vectors` as unit vectors, if there are `count` of them, each of 1 to [`MAX_DIMENSIONS`]
/// finite values; a zero vector stays zero (similar to nothing).
fn checked(vectors: Vec<Vec<f32>>, count: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    if vectors.len() != count {
        return Err(EmbedError::new(format!(
            "the embedder answered {} vectors for {count} texts: one per text is needed",
            vectors.len()
        )));
    }
    vectors
        .into_iter()
        .map(|mut vector| {
            if vector.is_empty() || vector.len() > MAX_DIMENSIONS {
                return Err(EmbedError::new(format!(
                    "the embedder answered a vector of {} dimensions: 1 to {MAX_DIMENSIONS} are taken",
                    vector.len()
                )));
            }
            if vector.iter().any(|value| !value.is_finite()) {
                return Err(EmbedError::new(
                    "the embedder answered a vector with a value that is not a finite number",
                ));
            }
            let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
            if norm > 0.0 {
                vector.iter_mut().for_each(|v| *v /= norm);
            }
            Ok(vector)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_checked() {
        assert!(checked(vec![vec![1.0]], 2).is_err());
        assert!(checked(vec![vec![]], 1).is_err());
        assert!(checked(vec![vec![f32::NAN]], 1).is_err());
        assert!(checked(vec![vec![0.0; MAX_DIMENSIONS + 1]], 1).is_err());
        let unit = checked(vec![vec![3.0, 4.0], vec![0.0, 0.0]], 2).unwrap();
        assert_eq!(unit[0], [0.6, 0.8]);
        assert_eq!(unit[1], [0.0, 0.0]);
    }

    #[test]
    fn texts_are_cut_at_a_character() {
        let mut text = "é".repeat(10);
        cut(&mut text, 5);
        assert_eq!(text, "éé");
    }
}
