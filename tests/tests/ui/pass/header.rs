use registry_core::{Profile, Registry, ToolCall, tool};
use registry_tests::{open_run, success};
use serde_json::json;

/// The weather in a region.
#[tool(public)]
fn weather(
    /// The region, e.g. `eu-west-1`.
    #[header("Region")]
    region: String,
    /// How many days ahead.
    #[header("Days")]
    days: u8,
    /// Whether to include the wind.
    wind: bool,
) -> String {
    format!("{region} {days} {wind}")
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let run = open_run(&registry, &[]);
    let mcp = run.export(Profile::Mcp).unwrap();
    let properties = &mcp[0]["inputSchema"]["properties"];
    assert_eq!(properties["region"]["x-mcp-header"], "Region");
    assert_eq!(properties["days"]["x-mcp-header"], "Days");
    assert!(properties["wind"].get("x-mcp-header").is_none());
    let definition = registry.get("weather").unwrap().definition();
    assert_eq!(definition.headers["region"], "Region");
    let openai = run.export(Profile::OpenAiChat { strict: true }).unwrap();
    assert!(!openai.to_string().contains("x-mcp-header"));
    let ok = run.call_blocking(ToolCall::new(
        "c1",
        "weather",
        json!({"region": "eu", "days": 2, "wind": true}),
    ));
    assert_eq!(success(ok), json!("eu 2 true"));
}
