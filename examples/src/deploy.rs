//! Deployment tools: they change things, so they need write scopes.

use registry_core::{ToolContext, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a deployment goes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Environment {
    /// The staging cluster, for checks before release.
    Staging,
    /// The production cluster, serving users.
    Production,
}

/// The id of a deployment.
#[derive(Debug, Serialize)]
pub struct DeployId(pub String);

/// Start a deployment of the last passing build.
///
/// Returns the id of the new deployment.
#[tool(name = "deploy", scopes = "deploy:write, build:read", destructive)]
pub async fn start_deploy(
    /// The project to deploy, e.g. `web`.
    project: String,
    /// Where to deploy it.
    env: Environment,
    ctx: &ToolContext,
) -> Result<DeployId, String> {
    if project != "web" {
        return Err(format!("{project:?} has no passing build to deploy"));
    }
    Ok(DeployId(
        format!("dep-{}-{:?}", ctx.call_id(), env).to_lowercase(),
    ))
}

/// Roll an environment back to the deployment before the current one.
#[tool(scopes = "deploy:write", destructive, idempotent)]
pub fn rollback(
    /// Where to roll back.
    env: Environment,
) -> String {
    format!("{env:?} rolled back")
}
