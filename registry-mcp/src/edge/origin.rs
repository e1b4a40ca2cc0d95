//! The `Origin` check: a browser page on another site must not reach the server with the
//! user's credentials (MCP, transports: "servers MUST validate the Origin header").

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The origins accepted by default: pages served from loopback, on any port.
pub(crate) fn loopback_origins() -> Vec<String> {
    ["localhost", "127.0.0.1", "[::1]"]
        .into_iter()
        .flat_map(|host| ["http", "https"].map(|scheme| format!("{scheme}://{host}:*")))
        .collect()
}

/// The accepted origins, parsed once.
#[derive(Debug)]
pub(crate) struct Origins {
    allowed: Vec<Pattern>,
    /// An empty list accepts any origin.
    any: bool,
}

#[derive(Debug, PartialEq)]
struct Pattern {
    scheme: String,
    host: String,
    /// `None`: any port.
    port: Option<u16>,
}

impl Origins {
    /// The origins of `list` (`scheme://host[:port]`, `:*` for any port); entries that do
    /// not parse are reported and accept nothing.
    pub(crate) fn new(list: &[String]) -> Origins {
        let allowed = list
            .iter()
            .filter_map(|entry| {
                let pattern = parse(entry, true);
                if pattern.is_none() {
                    tracing::warn!(origin = ?entry, "an allowed origin that is not scheme://host[:port]; ignored");
                }
                pattern
            })
            .collect();
        Origins {
            allowed,
            any: list.is_empty(),
        }
    }

    /// Whether a request with this `Origin` header value may go on.
    pub(crate) fn accepts(&self, origin: &str) -> bool {
        if self.any {
            return true;
        }
        let Some(origin) = parse(origin, false) else {
            return false;
        };
        self.allowed.iter().any(|allowed| {
            allowed.scheme == origin.scheme
                && allowed.host == origin.host
                && allowed.port.is_none_or(|port| Some(port) == origin.port)
        })
    }
}

/// `scheme://host[:port]`, lowercased, with the scheme's default port when none is given;
/// `:*` (when `wildcard`) for any port.
fn parse(text: &str, wildcard: bool) -> Option<Pattern> {
    let (scheme, rest) = text.trim().split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return None;
    }
    let (host, port) = match rest.rfind(':') {
        // An IPv6 address without a port: the last colon is inside the brackets.
        Some(colon) if !rest[colon..].contains(']') => (&rest[..colon], Some(&rest[colon + 1..])),
        _ => (rest, None),
    };
    if host.is_empty() || (host.starts_with('[') != host.ends_with(']')) {
        return None;
    }
    let port = match port {
        None => Some(default_port),
        Some("*") if wildcard => None,
        Some(port) => Some(port.parse::<u16>().ok()?),
    };
    Some(Pattern {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
    })
}

/// Refuses with 403 a request whose `Origin` header names an origin not accepted. A request
/// without one (not from a browser) goes on.
pub(crate) fn check_origin(origins: &Origins, request: &Request) -> Option<Response> {
    let origin = request.headers().get(header::ORIGIN)?;
    if origin.to_str().is_ok_and(|origin| origins.accepts(origin)) {
        return None;
    }
    tracing::debug!(?origin, "refused a request from an origin not allowed");
    Some(
        super::rpc_error(
            StatusCode::FORBIDDEN,
            None,
            -32600,
            "forbidden: the Origin header names an origin this server does not accept \
             (HttpConfig::allowed_origins)",
        )
        .into_response(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_accept_loopback_pages_only() {
        let origins = Origins::new(&loopback_origins());
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1:8750",
            "https://[::1]:443",
            "http://LOCALHOST:1",
            "http://localhost",
        ] {
            assert!(origins.accepts(ok), "{ok}");
        }
        for refused in [
            "http://evil.example",
            "http://localhost.evil.example:80",
            "null",
            "file://",
            "http://127.0.0.1.evil:80",
            "ftp://localhost:21",
            "http://localhost:99999",
            "",
        ] {
            assert!(!origins.accepts(refused), "{refused}");
        }
    }

    #[test]
    fn exact_origins_and_an_empty_list() {
        let origins = Origins::new(&["https://app.example.com".to_owned()]);
        assert!(origins.accepts("https://app.example.com:443"));
        assert!(origins.accepts("https://app.example.com"));
        assert!(!origins.accepts("https://app.example.com:8443"));
        assert!(!origins.accepts("http://app.example.com"));
        assert!(Origins::new(&[]).accepts("http://evil.example"));
    }
}
