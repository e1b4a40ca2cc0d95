use registry_core::{Registry, ToolContext, tool};
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
#[tool(destructive)]
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
    let ctx = ToolContext::new("c1", "deploy");
    let args = json!({"release": {"version": "1.2"}, "target": "production"});
    let result = deploy.call_blocking(&ctx, args).unwrap();
    assert_eq!(result, json!({"target": "production", "version": "1.2"}));
    assert!(
        deploy
            .call_blocking(&ctx, json!({"release": {"version": "1"}, "target": "moon"}))
            .is_err()
    );
}
