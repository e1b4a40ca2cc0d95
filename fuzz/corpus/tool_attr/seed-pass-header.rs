#[tool(public)]
/// The weather in a region.
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
