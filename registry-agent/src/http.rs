//! One request to the model's API: sent with the API's headers, retried on 429 and 5xx with
//! backoff (honouring `Retry-After`, bounded), its body read up to a bound. A redirect is
//! never followed (the client is built with none): a 3xx is an error naming where it pointed.

use std::time::Duration;

use serde_json::Value;

use crate::error::AgentError;

/// How requests are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retries {
    /// Retries after the first attempt (default 3).
    pub max_retries: u32,
    /// The first backoff, doubled each retry (default 500 ms).
    pub base_delay: Duration,
    /// No wait is longer, whatever `Retry-After` says (default 30 s): past it, the error.
    pub max_delay: Duration,
}

impl Default for Retries {
    fn default() -> Self {
        Retries {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl Retries {
    /// At most `retries` retries.
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The first backoff (doubled each retry).
    #[must_use]
    pub fn base_delay(mut self, delay: Duration) -> Self {
        self.base_delay = delay;
        self
    }

    /// The longest wait.
    #[must_use]
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }
}

/// Sends `body` with `headers` and returns the response's JSON.
pub(crate) async fn send(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&'static str, String)],
    body: bytes::Bytes,
    retries: Retries,
    max_body: usize,
) -> Result<Value, AgentError> {
    let mut attempt = 0;
    loop {
        let mut request = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.clone());
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request
            .send()
            .await
            .map_err(|error| AgentError::Transport(transport(&error)))?;
        let status = response.status();
        if status.is_redirection() {
            return Err(redirected(&response));
        }
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = read_bounded(response, max_body).await?;
        if status.is_success() {
            return serde_json::from_slice(&bytes)
                .map_err(|error| AgentError::Malformed(format!("the body is not JSON: {error}")));
        }
        let retryable = status.as_u16() == 429 || status.is_server_error();
        let delay = retry_after.unwrap_or_else(|| {
            retries
                .base_delay
                .saturating_mul(2u32.saturating_pow(attempt.min(16)))
        });
        if !retryable || attempt >= retries.max_retries || delay > retries.max_delay {
            let text = String::from_utf8_lossy(&bytes);
            return Err(AgentError::Api(format!(
                "the API answered {status}{}: {}{}",
                if retryable {
                    format!(" after {} retries", attempt)
                } else {
                    String::new()
                },
                validation(&text)
                    .map(|problems| format!("it refused {problems}; its answer: "))
                    .unwrap_or_default(),
                crate::bounded(&text)
            )));
        }
        tracing::warn!(%status, attempt, ?delay, "the model API asks to retry");
        tokio::time::sleep(delay).await;
        attempt += 1;
    }
}

/// The most problems of a validation error named.
const MAX_PROBLEMS: usize = 3;
/// The longest text kept of one problem's place or message.
const MAX_PROBLEM_TEXT: usize = 120;

/// The places a validation error points at, each with its message, when `text` is one:
/// FastAPI's `{"detail": [{"loc": ["body", "messages", 2, "content"], "msg"}]}`, an
/// OpenAI-style `{"error": {"param": "messages.[2].content", "message"}}`, or pydantic's text
/// (`messages.2.content` over an indented message, as llama-cpp-python's server puts it in a
/// 500's message). A place reads `messages[2].content`: the message's index and the field.
/// Escaped and bounded (at most [`MAX_PROBLEMS`], each part cut).
fn validation(text: &str) -> Option<String> {
    let mut found: Vec<(String, String)> = Vec::new();
    let json: Option<serde_json::Value> = serde_json::from_str(text).ok();
    if let Some(details) = json
        .as_ref()
        .and_then(|body| body.get("detail"))
        .and_then(Value::as_array)
    {
        for detail in details {
            if let Some(loc) = detail.get("loc").and_then(Value::as_array) {
                let parts: Vec<String> = loc
                    .iter()
                    .filter(|part| part.as_str() != Some("body"))
                    .map(|part| match part {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    })
                    .collect();
                let message = detail.get("msg").and_then(Value::as_str).unwrap_or("");
                found.push((place(&parts), message.to_owned()));
            }
        }
    }
    let error = json.as_ref().and_then(|body| body.get("error"));
    if found.is_empty()
        && let Some(param) = error
            .and_then(|error| error.get("param"))
            .and_then(Value::as_str)
    {
        let message = error
            .and_then(|error| error.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let parts: Vec<String> = param
            .split('.')
            .map(|part| part.trim_matches(|c| c == '[' || c == ']').to_owned())
            .collect();
        found.push((place(&parts), first_line(message).to_owned()));
    }
    if found.is_empty() {
        // pydantic's text, in the message of an error object or the body itself.
        let message = error
            .and_then(|error| error.get("message"))
            .and_then(Value::as_str)
            .unwrap_or(text);
        let lines: Vec<&str> = message.lines().collect();
        for pair in lines.windows(2) {
            let (loc, why) = (pair[0].trim(), pair[1]);
            let looks_like_a_place = !loc.is_empty()
                && loc.contains('.')
                && loc.split('.').any(|part| part.parse::<u64>().is_ok())
                && loc
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-');
            if looks_like_a_place && why.starts_with("  ") {
                let why = why.trim();
                let why = why.split(" [type=").next().unwrap_or(why);
                let parts: Vec<String> = loc.split('.').map(str::to_owned).collect();
                found.push((place(&parts), why.to_owned()));
            }
        }
    }
    if found.is_empty() {
        return None;
    }
    let count = found.len();
    let mut named: Vec<String> = found
        .iter()
        .take(MAX_PROBLEMS)
        .map(|(place, message)| {
            format!(
                "{} ({})",
                crate::bounded_to(place, MAX_PROBLEM_TEXT),
                crate::bounded_to(message, MAX_PROBLEM_TEXT)
            )
        })
        .collect();
    if count > MAX_PROBLEMS {
        named.push(format!("{} more", count - MAX_PROBLEMS));
    }
    Some(named.join(", "))
}

/// `["messages", "2", "content"]` as `messages[2].content`.
fn place(parts: &[String]) -> String {
    let mut out = String::new();
    for part in parts {
        if part.parse::<u64>().is_ok() {
            out.push('[');
            out.push_str(part);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
    }
    out
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// The error for a 3xx answer: the status, the origin that answered and the origin its
/// `Location` points to (not its path or query, which may carry a token), escaped. The
/// redirect is not followed: the key and the conversation would go to that other origin.
fn redirected(response: &reqwest::Response) -> AgentError {
    let from = response.url().origin().ascii_serialization();
    let to = match response
        .headers()
        .get("location")
        .map(|value| value.to_str().map(|text| response.url().join(text)))
    {
        None => "nowhere (no Location header)".to_owned(),
        Some(Ok(Ok(target))) => target.origin().ascii_serialization(),
        Some(_) => "a Location that is not a URL".to_owned(),
    };
    AgentError::Api(format!(
        "the model API at {} answered {} redirecting to {}: redirects are not followed (the \
         key and the conversation would go there); give the final URL as the base URL",
        crate::bounded(&from),
        response.status(),
        crate::bounded(&to)
    ))
}

/// The body, refused past `max` bytes.
async fn read_bounded(mut response: reqwest::Response, max: usize) -> Result<Vec<u8>, AgentError> {
    if response
        .content_length()
        .is_some_and(|length| length > max as u64)
    {
        return Err(AgentError::TooLarge(format!(
            "the response body is larger than {max} bytes"
        )));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| AgentError::Transport(transport(&error)))?
    {
        if bytes.len() + chunk.len() > max {
            return Err(AgentError::TooLarge(format!(
                "the response body is larger than {max} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// An error with its causes, in one line.
fn transport(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
