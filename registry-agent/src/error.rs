//! Why the loop stopped without an end of its own ([`AgentEnd`](crate::AgentEnd)).

/// What went wrong talking to the model, or with what it sent. The model's mistakes about
/// tools are not errors: they go back to it as observations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The request could not be sent or its answer read (connection, timeout, TLS).
    #[error("the model API could not be reached: {0}")]
    Transport(String),
    /// The API answered with an error status (after the retries 429 and 5xx get), a redirect
    /// (never followed: the message names the origin it pointed to), or an `error` object.
    #[error("{0}")]
    Api(String),
    /// The response is not the API's shape: what was expected, and where (a JSON pointer).
    #[error("the model's response is malformed: {0}")]
    Malformed(String),
    /// A bound was passed: a response body, the calls of one turn, the conversation.
    #[error("{0}")]
    TooLarge(String),
    /// The configuration cannot work or is refused (a URL that is not one, `https://` without
    /// the `tls` feature, plain `http://` to a host that is not loopback without
    /// `ModelConfig::allow_insecure_http`).
    #[error("{0}")]
    Config(String),
    /// The run could not export its tools for the API.
    #[error("the run's tools cannot be sent to this API: {0}")]
    Export(String),
    /// A resumed state does not fit: another API, no pending approval, a verdict missing or
    /// for a request it does not hold.
    #[error("cannot resume: {0}")]
    Resume(String),
}
