use registry_core::tool;

/// The weather in a region.
#[tool(public)]
fn weather(#[header(Region)] region: String) -> String {
    region
}

fn main() {}
