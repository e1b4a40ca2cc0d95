use registry_core::{Registry, ToolContext, tool};
use serde_json::json;

/// Read the current build status of a project.
///
/// Returns the state of the last pipeline run.
#[tool(scopes = "build:read", read_only)]
fn get_status(
    /// Project identifier, e.g. `web`.
    project: String,
    /// Include the last log lines.
    verbose: Option<bool>,
) -> Result<String, String> {
    Ok(format!("{project} {verbose:?}"))
}

/// Deploy.
#[tool(name = "deploy", scopes = "deploy:write, build:read", destructive)]
async fn start_deploy(env: String, ctx: &ToolContext) -> Result<String, String> {
    Ok(format!("{env} {}", ctx.call_id()))
}

#[test]
fn smoke() {
    let registry = Registry::from_inventory().unwrap();
    println!("{:?}", registry.names().collect::<Vec<_>>());
    for tool in &registry {
        println!("{} {}", tool.source(), serde_json::to_string_pretty(tool.definition()).unwrap());
    }
    let t = registry.get("get_status").unwrap();
    let ctx = ToolContext::new("c1", "get_status");
    println!("{:?}", t.call_blocking(&ctx, json!({"project": "web"})));
    println!("{:?}", t.call_blocking(&ctx, json!({"project": 1, "verbose": "yes", "x": 1})));
    let d = registry.get("deploy").unwrap();
    println!("{:?}", d.call_blocking(&ctx, json!({"env": "prod"})));
}
