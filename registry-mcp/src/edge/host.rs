//! The `Host` check (against DNS rebinding): a request must name, in its `Host` header, a
//! host this server is reached under ([`HttpConfig::allowed_hosts`]), or a page whose name
//! was rebound to this server's address could reach it through a user's browser.
//!
//! It is rmcp's allowlist (rmcp 3.11, `StreamableHttpService::handle`, `host_is_allowed`
//! and `parse_host_header` in `transport/streamable_http_server/tower.rs`), applied once, at
//! the front of the router and so of every route it serves (the MCP endpoint, the OAuth
//! metadata, the answer to an unknown path), before the token is looked at: rmcp checked it
//! only for what reached its service, and the edge answers some requests itself
//! (`direct.rs`). The same entries accept the same requests: a host name (any port) or
//! `host:port`, compared in ASCII lowercase, IPv6 brackets dropped; the header's value, or
//! for a request without one the URI's authority (HTTP/2); an empty list accepts any.
//!
//! [`HttpConfig::allowed_hosts`]: crate::HttpConfig::allowed_hosts

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::uri::Authority;
use axum::http::{StatusCode, header};
use axum::response::Response;

/// The accepted `Host` values, parsed once.
#[derive(Debug)]
pub(crate) struct Hosts {
    allowed: Vec<Allowed>,
    /// An empty list accepts any host.
    any: bool,
}

/// One accepted host, normalized as rmcp normalizes it.
#[derive(Debug, PartialEq)]
struct Allowed {
    host: String,
    /// `None`: any port.
    port: Option<u16>,
}

impl Hosts {
    /// The hosts of `list` (`host` or `host:port`); an empty entry accepts nothing.
    pub(crate) fn new(list: &[String]) -> Hosts {
        let allowed = list
            .iter()
            .filter_map(|entry| {
                let entry = entry.trim();
                if entry.is_empty() {
                    return None;
                }
                // As rmcp: an entry that is not an authority is taken whole as a host name.
                Some(match Authority::try_from(entry) {
                    Ok(authority) => Allowed {
                        host: normalize(authority.host()),
                        port: authority.port_u16(),
                    },
                    Err(_) => Allowed {
                        host: normalize(entry),
                        port: None,
                    },
                })
            })
            .collect();
        Hosts {
            allowed,
            any: list.is_empty(),
        }
    }

    /// Whether a request for `host` (and `port`, if it named one) may go on.
    fn accepts(&self, host: &str, port: Option<u16>) -> bool {
        if self.any {
            return true;
        }
        let host = normalize(host);
        self.allowed
            .iter()
            .any(|allowed| allowed.host == host && allowed.port.is_none_or(|p| Some(p) == port))
    }

    /// Refuses a request whose `Host` names a host not accepted (403), or that names none
    /// or one that is not a host (400, whatever the list); `None` lets it go on.
    pub(crate) fn check(&self, request: &Request) -> Option<Response> {
        // Read even when any host is accepted, as rmcp reads it.
        let authority = match request.headers().get(header::HOST) {
            Some(value) => match value.to_str().ok().map(Authority::try_from) {
                Some(Ok(authority)) => authority,
                _ => {
                    tracing::debug!(host = ?value, "refused a request whose Host header is not a host");
                    return Some(refusal(
                        StatusCode::BAD_REQUEST,
                        "bad request: the Host header is not a host name or host:port",
                    ));
                }
            },
            None => match request.uri().authority() {
                Some(authority) => authority.clone(),
                None => {
                    tracing::debug!("refused a request without a Host header");
                    return Some(refusal(
                        StatusCode::BAD_REQUEST,
                        "bad request: the request has no Host header",
                    ));
                }
            },
        };
        if self.accepts(authority.host(), authority.port_u16()) {
            return None;
        }
        // The value is the sender's: Debug escapes it.
        tracing::debug!(host = ?authority.as_str(), "refused a request for a host not allowed (DNS rebinding?)");
        Some(refusal(
            StatusCode::FORBIDDEN,
            "forbidden: the Host header names a host this server does not accept \
             (HttpConfig::allowed_hosts)",
        ))
    }
}

/// rmcp's normalization: IPv6 brackets dropped, ASCII lowercase.
fn normalize(host: &str) -> String {
    host.trim_matches('[')
        .trim_matches(']')
        .to_ascii_lowercase()
}

fn refusal(status: StatusCode, message: &str) -> Response {
    super::rpc_error(status, None, -32600, message)
}

/// The layer of the whole router that checks `Host` before anything else.
#[derive(Debug, Clone)]
pub(crate) struct HostLayer(pub(crate) Arc<Hosts>);

impl<S> tower::Layer<S> for HostLayer {
    type Service = HostCheck<S>;

    fn layer(&self, inner: S) -> HostCheck<S> {
        HostCheck {
            hosts: self.0.clone(),
            inner,
        }
    }
}

/// A service (in the router, a route) behind the `Host` check.
#[derive(Debug, Clone)]
pub(crate) struct HostCheck<S> {
    hosts: Arc<Hosts>,
    inner: S,
}

impl<S> tower::Service<Request> for HostCheck<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
    S::Future: Unpin,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Checked<S::Future>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: Request) -> Checked<S::Future> {
        match self.hosts.check(&request) {
            Some(refused) => Checked::Refused(std::future::ready(Ok(refused))),
            None => Checked::Served(self.inner.call(request)),
        }
    }
}

/// The answer of a [`HostCheck`]: the refusal at once, or the inner service's (no box).
pub(crate) enum Checked<F> {
    Refused(std::future::Ready<Result<Response, Infallible>>),
    Served(F),
}

impl<F> Future for Checked<F>
where
    F: Future<Output = Result<Response, Infallible>> + Unpin,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Checked::Refused(refused) => Pin::new(refused).poll(context),
            Checked::Served(future) => Pin::new(future).poll(context),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(host: Option<&str>, uri: &str) -> Request {
        let mut builder = Request::builder().uri(uri);
        if let Some(host) = host {
            builder = builder.header(header::HOST, host);
        }
        builder.body(axum::body::Body::empty()).unwrap()
    }

    fn status(hosts: &Hosts, host: Option<&str>, uri: &str) -> Option<StatusCode> {
        hosts
            .check(&request(host, uri))
            .map(|refused| refused.status())
    }

    #[test]
    fn the_default_hosts_accept_loopback_names_on_any_port_only() {
        let hosts = Hosts::new(&["localhost".into(), "127.0.0.1".into(), "::1".into()]);
        for ok in [
            "localhost",
            "LOCALHOST:8750",
            "127.0.0.1:1",
            "[::1]:8750",
            "[::1]",
        ] {
            assert_eq!(status(&hosts, Some(ok), "/mcp"), None, "{ok}");
        }
        for refused in [
            "evil.example",
            "evil.example:8750",
            "localhost.evil.example",
            "127.0.0.1.evil.example:80",
            "127.0.0.2",
        ] {
            assert_eq!(
                status(&hosts, Some(refused), "/mcp"),
                Some(StatusCode::FORBIDDEN),
                "{refused}"
            );
        }
        for malformed in ["", "a b", "[::1", "x/y"] {
            assert_eq!(
                status(&hosts, Some(malformed), "/mcp"),
                Some(StatusCode::BAD_REQUEST),
                "{malformed:?}"
            );
        }
        // No Host header: the URI's authority (HTTP/2), else refused.
        assert_eq!(status(&hosts, None, "http://localhost:9/mcp"), None);
        assert_eq!(
            status(&hosts, None, "http://evil.example/mcp"),
            Some(StatusCode::FORBIDDEN)
        );
        assert_eq!(status(&hosts, None, "/mcp"), Some(StatusCode::BAD_REQUEST));
    }

    #[test]
    fn a_port_in_an_entry_is_required_and_an_empty_list_accepts_any() {
        let hosts = Hosts::new(&["Tools.Example.com:8443".into(), " ".into()]);
        assert_eq!(status(&hosts, Some("tools.example.com:8443"), "/"), None);
        assert_eq!(
            status(&hosts, Some("tools.example.com"), "/"),
            Some(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            status(&hosts, Some("tools.example.com:443"), "/"),
            Some(StatusCode::FORBIDDEN)
        );
        let any = Hosts::new(&[]);
        assert_eq!(status(&any, Some("evil.example"), "/"), None);
        assert_eq!(status(&any, None, "/"), Some(StatusCode::BAD_REQUEST));
    }
}
