#[tool(public)]
/// The weather in a region.
fn weather(#[header(Region)] region: String) -> String {
    region
}
