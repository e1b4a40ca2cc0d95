use registry_core::tool;

/// Render a report.
#[tool(public, timeout = "5 seconds")]
fn render_report(month: String) -> String {
    month
}

fn main() {}
