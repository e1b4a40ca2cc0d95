use registry_core::{ErrorKind, Registry, ToolCall, tool};
use registry_tests::{open_run, success};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Where a build runs.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Target {
    Staging,
    Production,
}

/// What to deploy.
#[derive(Deserialize, schemars::JsonSchema)]
struct Release {
    /// The version to deploy.
    version: String,
    /// Release notes.
    notes: Option<String>,
}

/// The deployment, as it went.
#[derive(Serialize)]
struct Deployment {
    target: Target,
    version: String,
}

/// Deploy a release.
#[tool(public, destructive)]
fn deploy(release: Release, target: Target) -> Deployment {
    let _ = release.notes;
    Deployment {
        target,
        version: release.version,
    }
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let deploy = registry.get("deploy").unwrap();
    assert_eq!(
        deploy.definition().parameters["required"],
        json!(["release", "target"])
    );
    // A destructive tool: a read-write run.
    let run = open_run(&registry, &[]);
    let args = json!({"release": {"version": "1.2"}, "target": "production"});
    let result = success(run.call_blocking(ToolCall::new("c1", "deploy", args)));
    assert_eq!(result, json!({"target": "production", "version": "1.2"}));
    let moon = json!({"release": {"version": "1"}, "target": "moon"});
    assert_eq!(
        run.call_blocking(ToolCall::new("c2", "deploy", moon))
            .error_kind(),
        Some(ErrorKind::InvalidArguments)
    );
}
