//! An [`Embedder`] that asks an OpenAI-compatible embeddings endpoint (`POST {base}/embeddings`,
//! as OpenAI, Azure OpenAI, Ollama, vLLM, llama.cpp's server and text-embeddings-inference
//! serve it). Feature `openai-embeddings` (HTTP), `openai-embeddings-tls` (HTTPS too).

use std::io::Read as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::{EmbedError, Embedder};

/// The longest answer read from the endpoint; a longer one is an error.
const MAX_RESPONSE_BYTES: u64 = 32 * 1024 * 1024;
/// How much of an error answer's body an error quotes.
const QUOTED_BYTES: usize = 200;

/// An [`Embedder`] that calls an OpenAI-compatible `/embeddings` endpoint, one request per
/// batch, with the model's name, the texts as `input` and `encoding_format: "float"`.
///
/// Its requests run on a thread of their own, so it may be called from inside an async
/// runtime (as a search from a server is); each waits at most its timeout (30 s unless set).
/// The API key is sent as `Authorization: Bearer`, and never shown by `Debug` or an error.
///
/// ```no_run,standalone_crate
/// use registry_core::search::OpenAiEmbedder;
/// use registry_core::Registry;
///
/// let embedder = OpenAiEmbedder::new("https://api.openai.com/v1", "text-embedding-3-small")?
///     .api_key(std::env::var("OPENAI_API_KEY").unwrap_or_default());
/// let registry = Registry::builder().declared().embedder(embedder).build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct OpenAiEmbedder {
    /// Taken out when dropped, to be dropped on a thread of its own (a blocking client may not
    /// be dropped inside an async runtime).
    client: Option<Arc<reqwest::blocking::Client>>,
    url: String,
    model: String,
    api_key: Option<String>,
    dimensions: Option<usize>,
    timeout: Duration,
    weight: f64,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("dimensions", &self.dimensions)
            .field("timeout", &self.timeout)
            .field("weight", &self.weight)
            .finish()
    }
}

impl OpenAiEmbedder {
    /// Embeds with `model` at `base_url` (`https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1`): requests go to `{base_url}/embeddings`.
    ///
    /// # Errors
    ///
    /// A base URL that is not `http://` or `https://`, or an HTTP client that cannot be made.
    pub fn new(
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<OpenAiEmbedder, EmbedError> {
        let base_url = base_url.into();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(EmbedError::new(format!(
                "the embeddings base URL {base_url:?} must start with http:// or https://"
            )));
        }
        let client = std::thread::scope(|scope| {
            scope
                .spawn(|| reqwest::blocking::Client::builder().build())
                .join()
        })
        .map_err(|_| EmbedError::new("making the HTTP client panicked"))?
        .map_err(|error| EmbedError::new(format!("cannot make the HTTP client: {error}")))?;
        Ok(OpenAiEmbedder {
            client: Some(Arc::new(client)),
            url: format!("{}/embeddings", base_url.trim_end_matches('/')),
            model: model.into(),
            api_key: None,
            dimensions: None,
            timeout: Duration::from_secs(30),
            weight: 1.0,
        })
    }

    /// Sends `key` as `Authorization: Bearer key`.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Asks for vectors of `dimensions` (the `dimensions` parameter, for models that take it).
    #[must_use]
    pub fn dimensions(mut self, dimensions: usize) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// How long one request may take (30 s unless set).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How much the model's ranking counts in the fusion against the lexical ranking's 1
    /// ([`Embedder::weight`]; 1 unless set). all-mpnet-base-v2 did best at 3 on the project's
    /// labelled tuning queries, all-MiniLM-L6-v2 at 1.
    ///
    /// ```
    /// use registry_core::search::{Embedder, OpenAiEmbedder};
    ///
    /// let embedder = OpenAiEmbedder::new("http://127.0.0.1:8089/v1", "all-mpnet-base-v2")?
    ///     .with_weight(3.0);
    /// assert_eq!(embedder.weight(), 3.0);
    /// # Ok::<(), registry_core::search::EmbedError>(())
    /// ```
    #[must_use]
    pub fn with_weight(mut self, weight: f64) -> Self {
        self.weight = weight;
        self
    }

    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let client = self
            .client
            .as_ref()
            .ok_or_else(|| EmbedError::new("the embedder was dropped"))?;
        let mut body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        if let Some(dimensions) = self.dimensions {
            body["dimensions"] = json!(dimensions);
        }
        let mut request = client.post(&self.url).timeout(self.timeout).json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .map_err(|error| EmbedError::new(format!("{}: {}", self.url, error.without_url())))?;
        let status = response.status();
        let mut bytes = Vec::new();
        response
            .take(MAX_RESPONSE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| {
                EmbedError::new(format!("{}: reading the answer: {error}", self.url))
            })?;
        if bytes.len() as u64 > MAX_RESPONSE_BYTES {
            return Err(EmbedError::new(format!(
                "{}: the answer is longer than {MAX_RESPONSE_BYTES} bytes",
                self.url
            )));
        }
        if !status.is_success() {
            let mut quoted = String::from_utf8_lossy(&bytes).into_owned();
            super::cut(&mut quoted, QUOTED_BYTES);
            return Err(EmbedError::new(format!(
                "{} answered {status}: {quoted}",
                self.url
            )));
        }
        let answer: Value = serde_json::from_slice(&bytes).map_err(|error| {
            EmbedError::new(format!("{}: the answer is not JSON: {error}", self.url))
        })?;
        vectors(&answer, texts.len()).map_err(|why| EmbedError::new(format!("{}: {why}", self.url)))
    }
}

/// The vectors of an answer `{"data": [{"index": i, "embedding": [...]}, ...]}`, in the order
/// of their `index` (an answer may list them in any order).
fn vectors(answer: &Value, count: usize) -> Result<Vec<Vec<f32>>, String> {
    let data = answer["data"]
        .as_array()
        .ok_or("the answer has no `data` array")?;
    let mut out: Vec<Option<Vec<f32>>> = vec![None; count];
    for (at, item) in data.iter().enumerate() {
        let index = item["index"]
            .as_u64()
            .and_then(|index| usize::try_from(index).ok())
            .unwrap_or(at);
        let slot = out
            .get_mut(index)
            .ok_or_else(|| format!("the answer has a vector of index {index} for {count} texts"))?;
        let embedding = item["embedding"]
            .as_array()
            .ok_or_else(|| format!("vector {index} is not an array of numbers"))?;
        let vector: Option<Vec<f32>> = embedding
            .iter()
            // A JSON number to the nearest `f32`: the precision vectors are kept in.
            .map(|value| {
                #[allow(clippy::cast_possible_truncation)]
                value.as_f64().map(|value| value as f32)
            })
            .collect();
        *slot = Some(vector.ok_or_else(|| format!("vector {index} is not an array of numbers"))?);
    }
    out.into_iter()
        .enumerate()
        .map(|(index, vector)| vector.ok_or_else(|| format!("the answer has no vector {index}")))
        .collect()
}

impl Embedder for OpenAiEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // On a thread of its own: a blocking client may not run inside an async runtime.
        std::thread::scope(|scope| scope.spawn(|| self.request(texts)).join())
            .unwrap_or_else(|_| Err(EmbedError::new("the embeddings request panicked")))
    }

    fn weight(&self) -> f64 {
        self.weight
    }
}

impl Drop for OpenAiEmbedder {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            // The last handle's drop stops the client's own runtime: not inside the caller's.
            let _ = std::thread::Builder::new()
                .name("embedder-drop".into())
                .spawn(move || drop(client));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_in_index_order_and_checked() {
        let answer = json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]}
        ]});
        assert_eq!(vectors(&answer, 2).unwrap(), [[1.0, 0.0], [0.0, 1.0]]);
        assert!(vectors(&answer, 3).unwrap_err().contains("no vector 2"));
        assert!(vectors(&answer, 1).unwrap_err().contains("index 1"));
        assert!(vectors(&json!({}), 1).unwrap_err().contains("`data`"));
        let bad = json!({"data": [{"index": 0, "embedding": ["x"]}]});
        assert!(vectors(&bad, 1).unwrap_err().contains("numbers"));
    }

    #[test]
    fn a_base_url_must_be_http() {
        let error = OpenAiEmbedder::new("ftp://example.com", "m").unwrap_err();
        assert!(error.message().contains("http://"), "{error}");
        let embedder = OpenAiEmbedder::new("http://127.0.0.1:1/v1/", "m")
            .unwrap()
            .api_key("sk-secret");
        assert_eq!(embedder.url, "http://127.0.0.1:1/v1/embeddings");
        assert!(!format!("{embedder:?}").contains("sk-secret"));
    }
}
