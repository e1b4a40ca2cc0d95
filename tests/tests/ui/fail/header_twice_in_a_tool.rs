use registry_core::tool;

/// Move a service between regions.
#[tool(public)]
fn migrate(#[header("Region")] from: String, #[header("region")] to: String) -> String {
    format!("{from} -> {to}")
}

fn main() {}
