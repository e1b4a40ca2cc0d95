use registry_core::tool;

/// The weather in a region.
#[tool(public)]
fn weather(#[header("Region")] region: Option<String>) -> String {
    region.unwrap_or_default()
}

fn main() {}
