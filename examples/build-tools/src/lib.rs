//! Tools about builds, in a crate of their own: the example programs link it with
//! `registry_core::link!(build_tools)`.

use registry_core::{ToolContext, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The state of a pipeline run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BuildState {
    /// Waiting for a runner.
    Queued,
    /// Running now.
    Running,
    /// Finished without errors.
    Passed,
    /// Finished with errors.
    Failed,
}

/// The status of a project's last build.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// The project.
    pub project: String,
    /// The state of its last pipeline run.
    pub state: BuildState,
    /// The last log lines, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<Vec<String>>,
}

/// Read the current build status of a project.
///
/// Returns the state of the last pipeline run.
#[tool(scopes = "build:read", read_only, idempotent)]
pub fn get_status(
    /// Project identifier, e.g. `web`.
    project: String,
    /// Include the last log lines.
    verbose: Option<bool>,
) -> Result<Status, String> {
    let state = match project.as_str() {
        "web" => BuildState::Passed,
        "api" => BuildState::Failed,
        other => {
            return Err(format!(
                "no project named {other:?}; known projects: web, api"
            ));
        }
    };
    let log = verbose
        .unwrap_or(false)
        .then(|| vec!["step 12/12: tests".to_owned(), format!("result: {state:?}")]);
    Ok(Status {
        project,
        state,
        log,
    })
}

/// List the most recent builds of a project, newest first.
#[tool(scopes = "build:read", read_only)]
pub fn list_builds(
    /// Project identifier, e.g. `web`.
    project: String,
    /// Only builds in this state.
    state: Option<BuildState>,
    /// How many builds to return, at most 50.
    limit: Option<u8>,
) -> Vec<String> {
    let limit = usize::from(limit.unwrap_or(5).min(50));
    (1..=limit)
        .rev()
        .map(|n| {
            format!(
                "{project}#{n} {}",
                state.map_or("any".into(), |s| format!("{s:?}"))
            )
        })
        .collect()
}

/// Run a project's last build again.
#[tool(scopes = "build:write", idempotent, rate_limit = "3/min")]
pub async fn retry_build(
    /// Project identifier, e.g. `web`.
    project: String,
    ctx: &ToolContext,
) -> Result<String, String> {
    Ok(format!(
        "{project}: build queued again by call {}",
        ctx.call_id()
    ))
}
