//! `tools/call` requests in a session that the HTTP server answers itself, without rmcp's
//! session machinery.
//!
//! rmcp serves every request of a session (protocol revisions before 2026-07-28) through the
//! session's worker task: the body parsed again into its typed message, a channel to the
//! worker, a task for the handler, a channel back, and the answer streamed as server-sent
//! events with a priming event, a keep-alive timer and cancellation tokens. For most of a
//! server's traffic, calls of quick tools, that is most of the work (issue 38's measure:
//! 158,000 instructions a call for bare rmcp, of which the tool is a few hundred).
//!
//! A call needs none of it when nothing but its answer travels between the tool and the
//! client: a synchronous tool that takes no [`ToolContext`](registry_core::ToolContext)
//! sends no progress, logs nothing to the client, asks nothing and samples nothing, and a
//! client's `notifications/cancelled` could only have its result dropped. Such a call, in a
//! request in its plainest form (`Peek::plain_call_arguments` in `edge/message.rs`: its
//! name, its arguments and at most a `progressToken`, which rmcp's client offers with every
//! request; no other `_meta`, no `task`, nothing else), is answered here with one JSON object
//! (`Content-Type: application/json`, which the protocol lets a server answer any request
//! with, and every client must accept), after every step of the edge, as rmcp would answer it:
//! the same `CallToolResult` or JSON-RPC error, shaped for the session's protocol revision.
//!
//! Anything else goes to rmcp, as before: another method; a request with more in `_meta` (a
//! trace's context), a `task` or another key; a tool that is async, takes a context or runs as
//! a task; deferred loading (the search tool, and what a search loads); a request that rmcp
//! would refuse (an `Accept` header without both media types, or with parameters; a
//! protocol header of 2026-07-28 or an unknown one); a session rmcp no longer has; a
//! principal other than the one that opened the session, or the same with other scopes; a
//! server whose handler is wrapped in a way the edge cannot know
//! ([`HttpServer::bind_with`](crate::HttpServer::bind_with); a server composed with
//! [`HttpServer::bind_with_handler`](crate::HttpServer::bind_with_handler) answers
//! `tools/call` as the registry's handler does, and keeps the edge's answers).
//! So does one request of a session every quarter of
//! [`EdgeLimits::session_idle_timeout`](crate::EdgeLimits): rmcp ends a session that no
//! request reached for that long.
//!
//! A call that the gate holds for a person's approval has been decided here (the approval is
//! pending in the run): its request goes to rmcp with that decision ([`Decided`]), and the
//! handler asks the person on the session's stream, as for any other call.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Extensions, HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use registry_core::server::RunExt as _;
use registry_core::{Observation, ToolCall};
use rmcp::model::{
    ErrorData, JsonRpcError, JsonRpcMessage, JsonRpcResponse, JsonRpcVersion2_0, ProtocolVersion,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::clients::Shared;
use crate::edge::{CalledTool, Sessions};
use crate::tokens::Principal;

/// The header that names a session.
const SESSION_ID: &str = "mcp-session-id";

/// What `protocol_errors` learnt of a `tools/call` request in its plainest form.
#[derive(Debug, Clone)]
pub(crate) struct PlainCall {
    /// Its JSON-RPC id.
    pub(crate) id: RequestId,
    /// The text of its arguments (`{}` for none).
    pub(crate) arguments: String,
}

/// A call decided here that waits for a person's approval, handed to rmcp's handler with its
/// request: the handler asks, instead of calling again.
#[derive(Debug, Clone)]
pub(crate) struct Decided {
    /// The number of the run that decided it ([`RunSlot::seq`](crate::clients::RunSlot)).
    pub(crate) run: u64,
    pub(crate) observation: Observation,
}

/// The calls the server answers itself, and what it checks them against.
pub(crate) struct Direct {
    pub(crate) shared: Arc<Shared>,
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) manager: Arc<LocalSessionManager>,
}

impl Direct {
    /// The answer to `request`, or the request back (perhaps with a [`Decided`]) for rmcp.
    pub(crate) async fn answer(&self, mut request: Request) -> Result<Response, Request> {
        let Some(client) = self.client(request.headers(), request.extensions()).await else {
            return Err(request);
        };
        if self.shared.options.deferred_loading.is_some() {
            return Err(request);
        }
        let (Some(plain), Some(CalledTool(name))) = (
            request.extensions().get::<PlainCall>(),
            request.extensions().get::<CalledTool>(),
        ) else {
            return Err(request);
        };
        let slot = client.current();
        // A tool the run may not call (hidden, or unknown) is refused by the run here, as
        // rmcp's handler would refuse it; what it is does not decide who answers, so that the
        // form of the answer tells a hidden tool from an unknown one no more than its text.
        if slot.run.allowed().permits(name)
            && let Some(tool) = slot.run.registry().get(name)
        {
            let settings = tool.settings();
            if tool.is_async() || tool.uses_context() || settings.task || settings.task_required {
                return Err(request);
            }
        }
        let id = plain.id.clone();
        let call = ToolCall::from_json_text(id.to_string(), &**name, plain.arguments.as_str());
        let observation = slot.run.call(call).await;
        if observation.approval().is_some() {
            request.extensions_mut().insert(Decided {
                run: slot.seq,
                observation,
            });
            return Err(request);
        }
        Ok(json_answer(id, crate::handler::call_result(&observation)))
    }

    /// The client a request with `headers` and `extensions` acts for, if it is a plain call
    /// that rmcp would serve in an open session of the principal that opened it.
    async fn client(
        &self,
        headers: &HeaderMap,
        extensions: &Extensions,
    ) -> Option<Arc<crate::clients::Client>> {
        extensions.get::<PlainCall>()?;
        let session = headers.get(SESSION_ID)?.to_str().ok()?;
        if !accepts_both(headers) || !legacy_version(headers) {
            return None;
        }
        let principal = extensions.get::<Principal>()?;
        let client = self
            .sessions
            .direct_client(session, principal, &self.shared)?;
        // The edge forgets the sessions rmcp closed only when it sweeps.
        self.manager
            .sessions
            .read()
            .await
            .contains_key(session)
            .then_some(client)
    }
}

/// Whether the `Accept` headers name both `application/json` and `text/event-stream`, as
/// rmcp requires, plainly: a media range with parameters (a quality) goes to rmcp.
fn accepts_both(headers: &HeaderMap) -> bool {
    let (mut json, mut events) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for range in value.split(',') {
            if range.contains(';') {
                return false;
            }
            let range = range.trim();
            json |= range.eq_ignore_ascii_case("application/json");
            events |= range.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && events
}

/// Whether the `MCP-Protocol-Version` header is absent or names a revision that rmcp knows
/// and that predates 2026-07-28 (whose rules on headers rmcp's service checks).
fn legacy_version(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get("mcp-protocol-version") else {
        return true;
    };
    value.to_str().is_ok_and(|version| {
        version < ProtocolVersion::V_2026_07_28.as_str()
            && version < ProtocolVersion::STANDARD_HEADERS.as_str()
            && ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .any(|known| known.as_str() == version)
    })
}

/// The JSON-RPC answer of the call `id`: its result, shaped as rmcp's handler shapes it for a
/// session (a revision before 2026-07-28), or its error.
fn json_answer(id: RequestId, result: Result<rmcp::model::CallToolResult, ErrorData>) -> Response {
    let message: ServerJsonRpcMessage = match result {
        Ok(result) => {
            let mut result = ServerResult::CallToolResult(result);
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            JsonRpcMessage::Response(JsonRpcResponse {
                jsonrpc: JsonRpcVersion2_0,
                id,
                result,
            })
        }
        Err(error) => JsonRpcMessage::Error(JsonRpcError {
            jsonrpc: JsonRpcVersion2_0,
            id: Some(id),
            error,
        }),
    };
    match serde_json::to_vec(&message) {
        Ok(body) => {
            let mut response = Response::new(Body::from(body));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(error) => {
            tracing::error!(%error, "a tool's answer cannot be written as JSON");
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn only_what_rmcp_would_accept_plainly_is_answered_here() {
        for both in [
            &[("accept", "application/json, text/event-stream")][..],
            &[("accept", "text/event-stream,APPLICATION/JSON")],
            &[
                ("accept", "application/json"),
                ("accept", "text/event-stream"),
            ],
        ] {
            assert!(accepts_both(&headers(both)), "{both:?}");
        }
        for not in [
            &[][..],
            &[("accept", "application/json")],
            &[("accept", "*/*")],
            &[("accept", "application/json;q=1, text/event-stream")],
        ] {
            assert!(!accepts_both(&headers(not)), "{not:?}");
        }
        assert!(legacy_version(&headers(&[])));
        for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
            let known = headers(&[("mcp-protocol-version", version)]);
            assert!(legacy_version(&known), "{version}");
        }
        for version in ["2026-07-28", "2025-11-26", "1999-01-01", "latest"] {
            let other = headers(&[("mcp-protocol-version", version)]);
            assert!(!legacy_version(&other), "{version}");
        }
    }
}
