#[tool(public)]
/// The weather in a region.
fn weather(#[header("Region")] region: Option<String>) -> String {
    region.unwrap_or_default()
}
