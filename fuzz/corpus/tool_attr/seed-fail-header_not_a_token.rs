#[tool(public)]
/// The weather in a region.
fn weather(#[header("Re gion")] region: String) -> String {
    region
}
