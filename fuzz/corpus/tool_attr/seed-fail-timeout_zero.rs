#[tool(public, timeout = "0s")]
/// Render a report.
fn render_report(month: String) -> String {
    month
}
