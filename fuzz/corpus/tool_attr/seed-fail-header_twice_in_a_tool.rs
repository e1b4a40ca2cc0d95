#[tool(public)]
/// Move a service between regions.
fn migrate(#[header("Region")] from: String, #[header("region")] to: String) -> String {
    format!("{from} -> {to}")
}
