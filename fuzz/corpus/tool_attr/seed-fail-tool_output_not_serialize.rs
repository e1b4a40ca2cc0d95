#[tool(public)]
/// Draw the chart of the build times.
fn build_chart(project: String) -> Result<ToolOutput<Chart>, String> {
    Ok(ToolOutput::new(Chart { width: 640 }).with(Content::text(project)))
}
