use registry_core::tool;

/// Render a report.
#[tool(public, timeout = "0s")]
fn render_report(month: String) -> String {
    month
}

fn main() {}
