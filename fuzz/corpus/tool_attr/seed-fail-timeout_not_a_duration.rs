#[tool(public, timeout = "5 seconds")]
/// Render a report.
fn render_report(month: String) -> String {
    month
}
