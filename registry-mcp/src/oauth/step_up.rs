//! Step-up authorization (opt-in): a call to a tool that the caller would see with more scopes
//! is answered 403 `insufficient_scope`, naming the scopes, so that its client can ask the
//! person for consent and retry with a new token.

use std::borrow::Cow;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::BodyExt;
use registry_core::HiddenReason;
use serde::Deserialize;

use super::challenge::Refusal;
use crate::McpServer;
use crate::tokens::Principal;

/// What the step-up layer needs.
pub(crate) struct StepUp {
    pub(crate) server: McpServer,
    /// The URL of the protected-resource metadata, when the server is a resource server.
    pub(crate) metadata: Option<String>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

/// Answers 403 `insufficient_scope` to a `tools/call` whose tool the caller's run does not
/// allow only because the caller lacks scopes (same tenant, not revoked, ready, not
/// read-only-hidden): with `scope` listing every scope the tool needs. Any other request goes
/// on unchanged.
pub(crate) async fn step_up(
    State(step_up): State<Arc<StepUp>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let Some(principal) = request.extensions().get::<Principal>().cloned() else {
        return next.run(request).await;
    };
    let (parts, body) = request.into_parts();
    // The protocol-error layer already read the body whole: this takes the bytes back.
    let bytes: Bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return next.run(Request::from_parts(parts, Body::empty())).await,
    };
    if let Some(scopes) = needed_scopes(&step_up.server, &principal, &bytes) {
        let tool = scopes.0;
        tracing::debug!(client = ?principal.id(), tool = ?tool, "step-up: the call needs more scopes");
        let description = format!("calling `{tool}` needs the scopes {}", scopes.1.join(" "));
        return Refusal::InsufficientScope {
            scopes: scopes.1,
            description,
        }
        .response(step_up.metadata.as_deref());
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// If `body` calls a tool that `principal` would see with more scopes: the tool, and every
/// scope it needs.
fn needed_scopes(
    server: &McpServer,
    principal: &Principal,
    body: &[u8],
) -> Option<(String, Vec<String>)> {
    let message: Message<'_> = serde_json::from_slice(body).ok()?;
    if message.method.as_deref() != Some("tools/call") {
        return None;
    }
    let name = message.params?.name?;
    let client = server
        .shared()
        .client(principal.issuer(), principal.id(), principal.subject());
    let slot = client.current();
    if slot.run.allowed().permits(&name) {
        return None;
    }
    let explanation = slot.run.explain();
    let hidden = explanation.hidden.iter().find(|tool| tool.name == name)?;
    let only_scopes = hidden
        .reasons
        .iter()
        .all(|reason| matches!(reason, HiddenReason::MissingScopes { .. }));
    if !only_scopes {
        return None;
    }
    let tool = server.registry().find(&name)?;
    let scopes = tool
        .policy()
        .scopes
        .iter()
        .map(|scope| scope.as_str().to_owned())
        .collect();
    Some((name.into_owned(), scopes))
}
