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
            return Err(AgentError::Api(format!(
                "the API answered {status}{}: {}",
                if retryable {
                    format!(" after {} retries", attempt)
                } else {
                    String::new()
                },
                crate::bounded(&String::from_utf8_lossy(&bytes))
            )));
        }
        tracing::warn!(%status, attempt, ?delay, "the model API asks to retry");
        tokio::time::sleep(delay).await;
        attempt += 1;
    }
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
