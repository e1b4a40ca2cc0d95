//! Step-up authorization (opt-in): a call to a tool that the caller would see with more scopes
//! is answered 403 `insufficient_scope`, naming the scopes, so that its client can ask the
//! person for consent and retry with a new token.

use axum::extract::Request;
use axum::response::Response;
use registry_core::server::RunExt;

use super::challenge::Refusal;
use crate::McpServer;
use crate::edge::{CalledTool, Inner};
use crate::tokens::Principal;

/// What the step-up layer needs.
pub(crate) struct StepUp {
    pub(crate) server: McpServer,
    /// The URL of the protected-resource metadata, when the server is a resource server.
    pub(crate) metadata: Option<String>,
}

/// Answers 403 `insufficient_scope` to a `tools/call` whose tool the caller's run does not
/// allow only because the caller lacks scopes ([`RunExt::needs_only_scopes`]): with `scope`
/// listing every scope the tool needs. Any other request goes on unchanged.
///
/// [`RunExt::needs_only_scopes`]: registry_core::server::RunExt::needs_only_scopes
pub(crate) async fn step_up(step_up: &StepUp, request: Request, next: impl Inner) -> Response {
    let (Some(principal), Some(CalledTool(tool))) = (
        request.extensions().get::<Principal>(),
        request.extensions().get::<CalledTool>(),
    ) else {
        return next.run(request).await;
    };
    if let Some(scopes) = needed_scopes(&step_up.server, principal, tool) {
        tracing::debug!(client = ?principal.id(), tool = ?tool, "step-up: the call needs more scopes");
        let description = format!("calling `{tool}` needs the scopes {}", scopes.join(" "));
        return Refusal::InsufficientScope {
            scopes,
            description,
        }
        .response(step_up.metadata.as_deref());
    }
    next.run(request).await
}

/// If `principal` would see `name` with more scopes: every scope the tool needs.
fn needed_scopes(server: &McpServer, principal: &Principal, name: &str) -> Option<Vec<String>> {
    let client = server
        .shared()
        .client(principal.issuer(), principal.id(), principal.subject());
    let scopes = client.current().run.needs_only_scopes(name)?;
    Some(
        scopes
            .iter()
            .map(|scope| scope.as_str().to_owned())
            .collect(),
    )
}
