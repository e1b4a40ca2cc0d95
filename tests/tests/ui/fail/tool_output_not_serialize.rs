use registry_core::{tool, content::{Content, ToolOutput}};

struct Chart {
    width: u32,
}

/// Draw the chart of the build times.
#[tool(public)]
fn build_chart(project: String) -> Result<ToolOutput<Chart>, String> {
    Ok(ToolOutput::new(Chart { width: 640 }).with(Content::text(project)))
}

fn main() {}
