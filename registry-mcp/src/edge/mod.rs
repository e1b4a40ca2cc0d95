//! The HTTP edge: what stands between the network and rmcp. Each file is one concept:
//! [`EdgeLimits`] (`limits.rs`), the accept loop (`connections.rs`), the `Host` check in
//! front of every route (`host.rs`), the `Origin` check (`origin.rs`), the request rate (`rate.rs`), session ownership and caps (`sessions.rs`),
//! the bounded log of refusals (`refusals.rs`), the one-pass look at a message's id, method
//! and params (`message.rs`) and what counts as one source for the limits per IP
//! (`source.rs`), and the chain the steps make, one future per request (`chain.rs`).

mod chain;
mod connections;
mod guard;
mod host;
mod limits;
mod message;
mod origin;
mod rate;
mod refusals;
mod sessions;
mod source;

use std::time::Duration;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub(crate) use chain::Inner;
pub(crate) use connections::{Connection, serve};
pub(crate) use host::{HostLayer, Hosts};
pub use limits::EdgeLimits;
pub(crate) use message::{Peek, within_values};
pub(crate) use origin::{Origins, check_origin, loopback_origins};
pub(crate) use rate::{Rates, limit_rate};
pub(crate) use refusals::Refusals;
pub(crate) use sessions::{Sessions, guard_sessions};
pub(crate) use source::Source;

/// At most one warning per this interval for each kind of repeated refusal.
pub(crate) const SUMMARY_INTERVAL: Duration = Duration::from_secs(10);

/// The JSON-RPC id of the request being served, once its body was read: for error answers.
#[derive(Debug, Clone)]
pub(crate) struct RpcId(pub(crate) Value);

/// The tool a request's body calls (a well-formed `tools/call`), once its body was read.
#[derive(Debug, Clone)]
pub(crate) struct CalledTool(pub(crate) Box<str>);

/// Marks a POST whose body is a JSON-RPC request (a method and an id), whose answer rmcp may
/// stream (server-sent events) for as long as the request takes: in a session, it counts as
/// a stream of its principal until its answer is done.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AwaitsAnswer;

/// Marks a request whose body is an `initialize` request: the only one that opens a session.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opening;

/// An HTTP answer with `status` and a JSON-RPC error body.
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<&RpcId>,
    code: i32,
    message: &str,
) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id.map_or(Value::Null, |id| id.0.clone()),
        "error": {"code": code, "message": message},
    });
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
