//! Deployment tools: they change things, so they need write scopes.

use registry_core::{
    gate::{CallRequest, Decision},
    tool,
};
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
) -> Result<DeployId, String> {
    if project != "web" {
        return Err(format!("{project:?} has no passing build to deploy"));
    }
    Ok(DeployId(new_deploy_id(env)))
}

/// A deployment id unique in this process and, with the time, across restarts: a call id
/// repeats across clients (every client numbers its requests from 0), so it cannot be one.
fn new_deploy_id(env: Environment) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};

    static NEXT: AtomicU64 = AtomicU64::new(0);
    let sequence = NEXT.fetch_add(1, Ordering::Relaxed);
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis());
    format!("dep-{millis:x}-{sequence}-{env:?}").to_lowercase()
}

/// Roll an environment back to the deployment before the current one.
#[tool(scopes = "deploy:write", destructive, idempotent)]
pub fn rollback(
    /// Where to roll back.
    env: Environment,
) -> String {
    format!("{env:?} rolled back")
}

/// Delete a preview environment and everything in it.
///
/// Destructive and irreversible: every call waits for a person's approval.
#[tool(scopes = "deploy:write", destructive, needs_approval)]
pub fn drop_preview(
    /// The preview environment, e.g. `pr-1234`.
    name: String,
) -> Result<String, String> {
    if !name.starts_with("pr-") {
        return Err(format!(
            "{name:?} is not a preview environment (they are named pr-N)"
        ));
    }
    Ok(format!("preview {name} deleted"))
}

/// The example programs' call policy: a deploy to production waits for a person; the rest
/// is allowed.
pub fn policy(call: &CallRequest<'_>) -> Decision {
    match (call.tool_name(), call.arguments()["env"].as_str()) {
        ("deploy", Some("production")) => {
            Decision::RequireApproval("a deploy to production".into())
        }
        _ => Decision::Allow,
    }
}
