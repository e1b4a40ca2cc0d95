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
/// Its requests run on a thread of their own, so it needs no runtime of its caller's; the
/// calling thread waits for each at most its timeout (30 s unless set), so an async caller
/// calls it on a blocking thread (`registry-mcp` and `registry-agent` do: see [`Embedder`]).
/// The API key is sent as `Authorization: Bearer`, and never shown by `Debug` or an error.
///
/// The key and the texts go to the base URL's host only. A redirect is never followed (a 3xx
/// is an error naming the origin it pointed to). A plain `http://` base URL to a host that is
/// not loopback is refused before anything is sent, unless
/// [`allow_insecure_http`](OpenAiEmbedder::allow_insecure_http) says the network path is
/// trusted; `https://` (feature `openai-embeddings-tls`) and `http://` to loopback
/// (`localhost`, `127.0.0.0/8`, `[::1]`: a model served on this machine) need no opt-out.
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
    /// Whether the URL is plain `http://` to a host that is not loopback.
    insecure: bool,
    allow_insecure_http: bool,
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
            .field("allow_insecure_http", &self.allow_insecure_http)
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
    /// (A plain `http://` one to a host that is not loopback is accepted here, so that
    /// [`allow_insecure_http`](OpenAiEmbedder::allow_insecure_http) may follow, but each
    /// request is refused without it.)
    pub fn new(
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<OpenAiEmbedder, EmbedError> {
        let base_url = base_url.into();
        let parsed = reqwest::Url::parse(&base_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"));
        let Some(parsed) = parsed else {
            return Err(EmbedError::new(format!(
                "the embeddings base URL {} must be a URL that starts with http:// or https://",
                registry_lint::escape(&base_url)
            )));
        };
        let insecure = parsed.scheme() == "http" && !is_loopback(&parsed);
        let client = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    reqwest::blocking::Client::builder()
                        // A redirect would take the texts (on 307/308) to a host the
                        // application never named: never followed.
                        .redirect(reqwest::redirect::Policy::none())
                        .build()
                })
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
            insecure,
            allow_insecure_http: false,
        })
    }

    /// Sends requests to a plain `http://` base URL whose host is not loopback, which is
    /// otherwise refused before anything is sent: the key and the texts (tools' descriptions,
    /// search queries) then travel in clear, readable and changeable on the way. Say it only
    /// when the network path is trusted (a private link, a service mesh that encrypts).
    ///
    /// ```
    /// use registry_core::search::{Embedder, OpenAiEmbedder};
    ///
    /// let refused = OpenAiEmbedder::new("http://gpu-box.internal:8080/v1", "m")?;
    /// let error = refused.embed(&["x"]).unwrap_err();
    /// assert!(error.message().contains("OpenAiEmbedder::allow_insecure_http"));
    ///
    /// let trusted = OpenAiEmbedder::new("http://gpu-box.internal:8080/v1", "m")?
    ///     .allow_insecure_http();
    /// # let _ = trusted;
    /// # Ok::<(), registry_core::search::EmbedError>(())
    /// ```
    #[must_use]
    pub fn allow_insecure_http(mut self) -> Self {
        self.allow_insecure_http = true;
        self
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
        if self.insecure && !self.allow_insecure_http {
            return Err(EmbedError::new(format!(
                "{} is plain http:// to a host that is not loopback: the key and the texts would \
                 travel in clear, so nothing was sent; use https:// (feature \
                 `openai-embeddings-tls`), or, if the network path is trusted, say so with \
                 `OpenAiEmbedder::allow_insecure_http`",
                self.url
            )));
        }
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
        if status.is_redirection() {
            return Err(redirected(&self.url, &response));
        }
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
                "{} answered {status}: {}",
                self.url,
                registry_lint::escape(&quoted)
            )));
        }
        let answer: Value = serde_json::from_slice(&bytes).map_err(|error| {
            EmbedError::new(format!("{}: the answer is not JSON: {error}", self.url))
        })?;
        vectors(&answer, texts.len()).map_err(|why| EmbedError::new(format!("{}: {why}", self.url)))
    }
}

/// Whether `url`'s host is this machine: `localhost`, `127.0.0.0/8` or `[::1]`.
fn is_loopback(url: &reqwest::Url) -> bool {
    url.host_str().is_some_and(registry_lint::is_loopback_host)
}

/// The error for a 3xx answer: the status and the origin its `Location` points to (not its
/// path or query, which may carry a token), escaped. The redirect is not followed.
fn redirected(url: &str, response: &reqwest::blocking::Response) -> EmbedError {
    let to = match response
        .headers()
        .get("location")
        .map(|value| value.to_str().map(|text| response.url().join(text)))
    {
        None => "nowhere (no Location header)".to_owned(),
        Some(Ok(Ok(target))) => registry_lint::escape(&target.origin().ascii_serialization()),
        Some(_) => "a Location that is not a URL".to_owned(),
    };
    EmbedError::new(format!(
        "{url} answered {} redirecting to {to}: redirects are not followed (the key and the \
         texts would go there); give the final URL as the base URL",
        response.status()
    ))
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
