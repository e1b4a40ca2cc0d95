use registry_core::tool;

/// The weather in a region.
#[tool(public)]
fn weather(#[header("Re gion")] region: String) -> String {
    region
}

fn main() {}
