//! Refusals, and the HTTP answers RFC 6750 and the MCP authorization spec give them.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Why a request was refused before MCP saw it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Refusal {
    /// No token at all: 401, with where to learn how to get one.
    Missing,
    /// A token that is not accepted, and why: 401 `invalid_token`.
    InvalidToken(String),
    /// A malformed request, such as a token in the query string: 400 `invalid_request`.
    InvalidRequest(String),
    /// Whether the token is good cannot be known now (the keys cannot be fetched, the
    /// introspection endpoint does not answer): 503, and the request is refused.
    Unavailable(String),
    /// Too many tokens from this source were refused lately: 429, with `Retry-After` (these
    /// seconds), and the token is not checked.
    Throttled(u64),
    /// Step-up: the call needs these scopes (every one it needs): 403 `insufficient_scope`.
    InsufficientScope {
        scopes: Vec<String>,
        description: String,
    },
}

impl Refusal {
    /// The error code of RFC 6750, if any.
    pub(crate) fn code(&self) -> Option<&'static str> {
        match self {
            Refusal::Missing | Refusal::Unavailable(_) | Refusal::Throttled(_) => None,
            Refusal::InvalidToken(_) => Some("invalid_token"),
            Refusal::InvalidRequest(_) => Some("invalid_request"),
            Refusal::InsufficientScope { .. } => Some("insufficient_scope"),
        }
    }

    /// The HTTP answer. `metadata` is the URL of the protected-resource metadata, when the
    /// server is an OAuth resource server.
    pub(crate) fn response(&self, metadata: Option<&str>) -> Response {
        let status = match self {
            Refusal::Missing | Refusal::InvalidToken(_) => StatusCode::UNAUTHORIZED,
            Refusal::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            Refusal::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::Throttled(_) => StatusCode::TOO_MANY_REQUESTS,
            Refusal::InsufficientScope { .. } => StatusCode::FORBIDDEN,
        };
        let throttled;
        let description = match self {
            Refusal::Missing => None,
            Refusal::Throttled(seconds) => {
                throttled = format!(
                    "too many invalid tokens came from this address lately; retry after \
                     {seconds} s"
                );
                Some(throttled.as_str())
            }
            Refusal::InvalidToken(text)
            | Refusal::InvalidRequest(text)
            | Refusal::Unavailable(text)
            | Refusal::InsufficientScope {
                description: text, ..
            } => Some(text.as_str()),
        };
        let mut params = Vec::new();
        if let Some(code) = self.code() {
            params.push(format!("error=\"{code}\""));
        }
        if let Refusal::InsufficientScope { scopes, .. } = self {
            params.push(format!("scope=\"{}\"", quotable(&scopes.join(" "))));
        }
        if let Some(metadata) = metadata {
            params.push(format!("resource_metadata=\"{}\"", quotable(metadata)));
        }
        if let (Some(_), Some(description)) = (self.code(), description) {
            params.push(format!("error_description=\"{}\"", quotable(description)));
        }
        let challenge = if params.is_empty() {
            "Bearer".to_owned()
        } else {
            format!("Bearer {}", params.join(", "))
        };
        let mut response = match description {
            None => status.into_response(),
            Some(description) => (
                status,
                [(header::CONTENT_TYPE, "application/json")],
                json!({
                    "error": self.code().unwrap_or("temporarily_unavailable"),
                    "error_description": description,
                })
                .to_string(),
            )
                .into_response(),
        };
        let headers = response.headers_mut();
        match self {
            Refusal::Unavailable(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            Refusal::Throttled(seconds) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*seconds));
            }
            _ => {
                if let Ok(value) = HeaderValue::from_str(&challenge) {
                    headers.insert(header::WWW_AUTHENTICATE, value);
                }
            }
        }
        response
    }
}

/// `text` as RFC 6750 allows inside a quoted parameter: printable ASCII without `"` and `\`
/// (anything else becomes `?`).
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ' ' | '!' | '#'..='[' | ']'..='~' => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenge(refusal: &Refusal, metadata: Option<&str>) -> (StatusCode, String) {
        let response = refusal.response(metadata);
        let value = response
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (response.status(), value)
    }

    #[test]
    fn challenges_follow_rfc_6750() {
        let url = Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
        assert_eq!(
            challenge(&Refusal::Missing, url),
            (
                StatusCode::UNAUTHORIZED,
                "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"".to_owned()
            )
        );
        assert_eq!(
            challenge(&Refusal::Missing, None),
            (StatusCode::UNAUTHORIZED, "Bearer".to_owned())
        );
        let (status, value) =
            challenge(&Refusal::InvalidToken("the \"token\"\nexpired".into()), url);
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(value.starts_with("Bearer error=\"invalid_token\", resource_metadata="));
        assert!(
            value.ends_with("error_description=\"the ?token??expired\""),
            "{value}"
        );
        let (status, value) = challenge(
            &Refusal::InsufficientScope {
                scopes: vec!["deploy:write".into(), "build:read".into()],
                description: "more".into(),
            },
            url,
        );
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(
            value.starts_with("Bearer error=\"insufficient_scope\", scope=\"deploy:write build:read\", resource_metadata="),
            "{value}"
        );
        assert_eq!(
            challenge(&Refusal::Unavailable("down".into()), url),
            (StatusCode::SERVICE_UNAVAILABLE, String::new())
        );
    }
}
